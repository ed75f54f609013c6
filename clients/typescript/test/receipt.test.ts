// The receipt verifier against the shared vectors (receipt/testdata/
// vectors.json, signed by slackbot's Go code), RFC 8785's examples, and
// every way a receipt is refused. It needs no live slackbot.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import {
  InexactNumberError,
  JWKSError,
  type JsonWebKeySet,
  MaxJWKSBytes,
  MaxReceiptBytes,
  ReceiptError,
  type ReceiptErrorKind,
  type ReceiptExpect,
  ReceiptType,
  SkewSeconds,
  argsSha256,
  canonicalJson,
  fetchJwks,
  parseJwks,
  tokenSha256,
  verifyMetadata,
  verifyReceipt,
} from "../src/index.js";
import type { Approval } from "../src/client.js";
import { outcomeOf } from "../src/decisions.js";

interface VectorCase {
  name: string;
  receipt: string;
  expect: { call_id: string; tool: string; args: unknown; token?: string; now: number; require_step_up?: boolean };
  error: "" | ReceiptErrorKind;
}

// dist/test/receipt.test.js -> the repository's receipt/testdata.
const vectors = JSON.parse(readFileSync(new URL("../../../../receipt/testdata/vectors.json", import.meta.url), "utf8")) as {
  jwks: JsonWebKeySet;
  cases: VectorCase[];
};

async function verdict(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "";
  } catch (err) {
    if (err instanceof ReceiptError) return err.kind;
    throw err;
  }
}

describe("receipt vectors", () => {
  test("every case gets Go's verdict, the arguments parsed or as text", async () => {
    assert.ok(vectors.cases.length >= 17);
    const keys = await parseJwks(vectors.jwks);
    for (const c of vectors.cases) {
      for (const args of [c.expect.args, JSON.stringify(c.expect.args)]) {
        const want: ReceiptExpect = { callId: c.expect.call_id, tool: c.expect.tool, args, token: c.expect.token, now: c.expect.now * 1000,
          requireStepUp: c.expect.require_step_up };
        assert.equal(await verdict(verifyReceipt(c.receipt, keys, want)), c.error, `${c.name} (${typeof args})`);
      }
    }
  });

  test("claims, and a JWKS given as text", async () => {
    const c = vectors.cases[0];
    const claims = await verifyReceipt(c.receipt, JSON.stringify(vectors.jwks), {
      callId: "call_1", tool: "issue_refund", args: c.expect.args, token: "tok_secret", now: new Date(c.expect.now * 1000),
    });
    assert.deepEqual(claims.by, ["U0ALICE"]);
    assert.equal(claims.route, "refunds");
    assert.equal(claims.exp - claims.iat, 3600);
  });
});

function double(hex: string): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setBigUint64(0, BigInt("0x" + hex));
  return v.getFloat64(0);
}

describe("canonicalJson", () => {
  // RFC 8785 Appendix B: IEEE 754 bits -> ECMAScript form.
  const appendixB: [string, string][] = [
    ["0000000000000000", "0"], ["8000000000000000", "0"], ["0000000000000001", "5e-324"], ["8000000000000001", "-5e-324"],
    ["7fefffffffffffff", "1.7976931348623157e+308"], ["ffefffffffffffff", "-1.7976931348623157e+308"],
    ["4340000000000000", "9007199254740992"], ["c340000000000000", "-9007199254740992"], ["4430000000000000", "295147905179352830000"],
    ["44b52d02c7e14af5", "9.999999999999997e+22"], ["44b52d02c7e14af6", "1e+23"], ["44b52d02c7e14af7", "1.0000000000000001e+23"],
    ["444b1ae4d6e2ef4e", "999999999999999700000"], ["444b1ae4d6e2ef4f", "999999999999999900000"], ["444b1ae4d6e2ef50", "1e+21"],
    ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"], ["3eb0c6f7a0b5ed8d", "0.000001"], ["41b3de4355555553", "333333333.3333332"],
    ["41b3de4355555554", "333333333.33333325"], ["41b3de4355555555", "333333333.3333333"], ["41b3de4355555556", "333333333.3333334"],
    ["41b3de4355555557", "333333333.33333343"], ["becbf647612f3696", "-0.0000033333333333333333"], ["43143ff3c1cb0959", "1424953923781206.2"],
  ];

  test("RFC 8785 Appendix B numbers, parsed and as text", () => {
    for (const [bits, want] of appendixB) {
      assert.equal(canonicalJson([double(bits)]), `[${want}]`, bits);
      assert.equal(canonicalJson(`[${want}]`), `[${want}]`, bits);
    }
    for (const bits of ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"]) {
      assert.throws(() => canonicalJson([double(bits)]), TypeError, bits);
    }
  });

  test("RFC 8785's example and its key order", () => {
    // RFC 8785 3.2.2, its 333333333.33333329 written as the double it is:
    // with more digits than a double holds, slackbot refuses it.
    const text =
      '{"numbers": [333333333.3333333, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
      String.raw`"string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`;
    const want = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    assert.equal(canonicalJson(text), want);
    assert.equal(canonicalJson(JSON.parse(text)), want);
    assert.throws(() => canonicalJson(text.replace("333333333.3333333", "333333333.33333329")), InexactNumberError);
    // RFC 8785 3.2.3: keys sorted by UTF-16 code units.
    const keys = ["\u20ac", "\r", "\ufb33", "1", "\u{1f600}", "\u0080", "\u00f6"];
    const sorted = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\u{1f600}", "\ufb33"];
    const wantSorted = "{" + sorted.map((k) => `${JSON.stringify(k)}:${keys.indexOf(k)}`).join(",") + "}";
    assert.equal(canonicalJson(Object.fromEntries(keys.map((k, i) => [k, i]))), wantSorted);
    assert.equal(canonicalJson(JSON.stringify(Object.fromEntries(keys.map((k, i) => [k, i])))), wantSorted);
  });

  test("forms", () => {
    assert.equal(canonicalJson({ b: 1, a: [true, null, "x"] }), '{"a":[true,null,"x"],"b":1}');
    assert.equal(canonicalJson('{"b" : 2.5e2, "a":-0.0, "__proto__": {"c": 1E2} }'), '{"__proto__":{"c":100},"a":0,"b":250}');
    assert.equal(canonicalJson(["\u007f\u2028\u001f\b\t\"\\/é😀"]), '["\u007f\u2028\\u001f\\b\\t\\"\\\\/é😀"]');
    assert.equal(canonicalJson([2n ** 53n, 10n ** 21n]), "[9007199254740992,1e+21]");
    for (const empty of [undefined, null, ""]) assert.equal(canonicalJson(empty), "{}");
    assert.equal(canonicalJson("[]"), "[]");
    assert.equal(canonicalJson('{"a":"\\ud83d\\ude00"}'), '{"a":"😀"}');
  });

  test("refuses what slackbot refuses", () => {
    for (const t of ['{"id": 12345678901234567891}', "[9007199254740993]", "[1152921504606846976]", "[0.10000000000000001]", "[1e400]", "[1e-400]"]) {
      assert.throws(() => canonicalJson(t), InexactNumberError, t);
    }
    assert.throws(() => canonicalJson([2n ** 53n + 1n]), InexactNumberError);
    // Parsed, the number has already been rounded: only the text shows it.
    assert.equal(canonicalJson(JSON.parse('{"id": 12345678901234567891}')), '{"id":12345678901234567000}');
    for (const t of ['{"a":1,"a":2}', '"\\ud800"', '{"a":NaN}', "[Infinity]", '{"a":1}x', '{"a":01}', "[1,]", "{'a':1}", "[" .repeat(5000), '["\u0001"]']) {
      assert.throws(() => canonicalJson(t), SyntaxError, t.slice(0, 20));
    }
    for (const v of [[NaN], ["\ud800"], { "\udc00": 1 }, [new Date(0)], [() => 1], [undefined], [new Map()]]) {
      assert.throws(() => canonicalJson(v), TypeError, String(v));
    }
  });

  test("argsSha256 and tokenSha256 are Go's", async () => {
    // receipt (Go)'s TestArgsSHA256.
    const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode('{"a":{"y":true,"z":null},"b":[1,2,"x"]}')));
    const want = Buffer.from(sum).toString("base64url");
    assert.equal(await argsSha256('{"b":[1,2.0,"x"],"a":{"z":null,"y":true}}'), want);
    assert.equal(await argsSha256({ b: [1, 2.0, "x"], a: { z: null, y: true } }), want);
    assert.equal(await tokenSha256("tok_secret"), "bCkh-73ykb-6zMEA04GWfOTHGmW6vn7RZahAffGPQng");
  });
});

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const T0 = 1_800_000_000;
const ARGS = { amount: 250, customer: "cus_42", note: "dup charge ✓" };

/** A signer with a fresh key, and the JWKS that verifies it. */
async function signer() {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const { x } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const kid = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`))).toString("base64url");
  const jwks = { keys: [{ kty: "OKP", crv: "Ed25519", x, kid, alg: "EdDSA", use: "sig" }] };
  const claims = async (over: Record<string, unknown> = {}) => ({
    iss: "https://slackbot.example.com", sub: "call_1", tool: "issue_refund", args_sha256: await argsSha256(ARGS), by: ["U0ALICE"],
    route: "refunds", tok: await tokenSha256("tok_secret"), iat: T0, exp: T0 + 3600, ...over,
  });
  const sign = async (payload?: unknown, header: unknown = { alg: "EdDSA", kid, typ: ReceiptType }) => {
    const input = b64(header) + "." + b64(payload ?? (await claims()));
    const sig = await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, new TextEncoder().encode(input));
    return input + "." + Buffer.from(sig).toString("base64url");
  };
  return { kid, jwks, claims, sign };
}

/** respell writes part with non-zero trailing bits: the same bytes to a lenient decoder. */
function respell(part: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  assert.equal(part.length % 4, 2, "the last character carries 4 unused bits");
  const alt = part.slice(0, -1) + alphabet[alphabet.indexOf(part.at(-1)!) + 1];
  assert.deepEqual(Buffer.from(alt, "base64url"), Buffer.from(part, "base64url"));
  return alt;
}

describe("verifyReceipt refuses", () => {
  const want = (over: Partial<ReceiptExpect> = {}): ReceiptExpect => ({ callId: "call_1", tool: "issue_refund", args: ARGS, now: (T0 + 60) * 1000, ...over });

  test("the issue's bad input and the rules beyond the vectors", async () => {
    const s = await signer();
    const other = await signer();
    const good = await s.sign();
    const [h, p, sig] = good.split(".");
    const head = { alg: "EdDSA", kid: s.kid, typ: ReceiptType };
    const { exp: _exp, sub: _sub, ...rest } = await s.claims();
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    const sigBytes = Buffer.from(sig, "base64url");
    const sPlusL = BigInt("0x" + Buffer.from(sigBytes.subarray(32)).reverse().toString("hex")) + L;
    const highS = Buffer.concat([sigBytes.subarray(0, 32), Buffer.from(sPlusL.toString(16).padStart(64, "0"), "hex").reverse()]);
    const cases: [string, ReceiptErrorKind, unknown, Partial<ReceiptExpect>][] = [
      ["undefined", "missing", undefined, {}],
      ["empty", "missing", "", {}],
      ["not a string", "malformed", 42, {}],
      ["garbage", "malformed", "not.a.jws", {}],
      ["four parts", "malformed", good + ".x", {}],
      ["not base64url", "malformed", `${h}.${p}.${sig.slice(0, -2)}+/`, {}],
      ["padded", "malformed", `${h}.${p}.${sig}==`, {}],
      ["the same signature spelled otherwise", "malformed", `${h}.${p}.${respell(sig)}`, {}],
      ["huge", "malformed", "a".repeat(MaxReceiptBytes + 1), {}],
      ["header not JSON", "malformed", `${b64("{x")}.${p}.${sig}`, {}],
      ["alg none", "malformed", `${b64({ ...head, alg: "none" })}.${p}.`, {}],
      ["alg HS256", "malformed", await s.sign(undefined, { ...head, alg: "HS256" }), {}],
      ["another typ", "malformed", await s.sign(undefined, { ...head, typ: "JWT" }), {}],
      ["crit", "malformed", await s.sign(undefined, { ...head, crit: ["b64"], b64: false }), {}],
      ["kid a number", "malformed", await s.sign(undefined, { ...head, kid: 1 }), {}],
      ["no kid", "unknown_key", await s.sign(undefined, { alg: "EdDSA", typ: ReceiptType }), {}],
      ["another key", "unknown_key", await other.sign(), {}],
      ["a key claiming our kid", "signature", await other.sign(undefined, head), {}],
      ["tampered payload", "signature", `${h}.${b64(await s.claims({ by: ["U0MALLORY"] }))}.${sig}`, {}],
      ["tampered header", "signature", `${b64({ ...head, x: 1 })}.${p}.${sig}`, {}],
      ["S + L (non-canonical S)", "signature", `${h}.${p}.${highS.toString("base64url")}`, {}],
      ["no signature", "signature", `${h}.${p}.`, {}],
      ["claims not an object", "malformed", await s.sign([1]), {}],
      ["iat a float", "malformed", await s.sign(await s.claims({ iat: T0 + 0.5 })), {}],
      ["by not strings", "malformed", await s.sign(await s.claims({ by: [1] })), {}],
      ["another call", "mismatch", good, { callId: "call_2" }],
      ["another tool", "mismatch", good, { tool: "delete_file" }],
      ["other arguments", "mismatch", good, { args: { ...ARGS, amount: 251 } }],
      ["one more argument", "mismatch", good, { args: { ...ARGS, x: null } }],
      ["one byte of a string", "mismatch", good, { args: { ...ARGS, customer: "cus_43" } }],
      ["inexact arguments", "mismatch", good, { args: '{"amount": 250.00000000000000001}' }],
      ["arguments not JSON", "mismatch", good, { args: "{" }],
      ["another request", "mismatch", good, { token: "tok_other" }],
      ["another issuer", "mismatch", good, { issuer: "https://evil.example" }],
      ["no sub", "mismatch", await s.sign({ ...rest, exp: T0 + 3600 }), {}],
      ["expired", "expired", good, { now: (T0 + 3600 + 2 * SkewSeconds) * 1000 }],
      ["no exp", "expired", await s.sign({ ...rest, sub: "call_1" }), {}],
      ["issued in the future", "malformed", await s.sign(await s.claims({ iat: T0 + 3600 })), {}],
    ];
    for (const [name, kind, receipt, over] of cases) {
      assert.equal(await verdict(verifyReceipt(receipt, s.jwks, want(over))), kind, name);
    }
    // It verifies as given, and within the skew.
    assert.equal((await verifyReceipt(good, s.jwks, want({ token: "tok_secret", issuer: "https://slackbot.example.com" }))).sub, "call_1");
    await verifyReceipt(good, s.jwks, want({ args: '{"note":"dup charge \\u2713","customer":"cus_42","amount":2.5e2}' }));
    await verifyReceipt(good, s.jwks, want({ now: (T0 + 3600 + SkewSeconds / 2) * 1000 }));
    await verifyReceipt(good, s.jwks, want({ now: (T0 - SkewSeconds / 2) * 1000 }));
  });

  test("requireStepUp refuses a receipt without every approver's step-up", async () => {
    const s = await signer();
    const stepped = await s.sign(await s.claims({ amr: ["hwk"], cred: ["Y3JlZA"] }));
    const claims = await verifyReceipt(stepped, s.jwks, want({ requireStepUp: true }));
    assert.deepEqual([claims.amr, claims.cred], [["hwk"], ["Y3JlZA"]]);
    assert.deepEqual((await verifyReceipt(await s.sign(), s.jwks, want({}))).amr, []);
    for (const [name, receipt] of [
      ["a click alone", await s.sign()],
      ["a quorum with one credential", await s.sign(await s.claims({ by: ["U0ALICE", "U0BOB"], amr: ["hwk"], cred: ["Y3JlZA"] }))],
      ["amr without cred", await s.sign(await s.claims({ amr: ["hwk"] }))],
    ] as const) {
      await assert.rejects(verifyReceipt(receipt, s.jwks, want({ requireStepUp: true })), {
        name: "ReceiptError", kind: "mismatch", message: /without the passkey/,
      }, name);
    }
    assert.equal(await verdict(verifyReceipt(await s.sign(await s.claims({ amr: "hwk" })), s.jwks, want({}))), "malformed");
    // A tool that accepts only a passkey refuses a one-time code, and a click.
    await verifyReceipt(stepped, s.jwks, want({ stepUpMethods: ["hwk"] }));
    for (const receipt of [await s.sign(await s.claims({ amr: ["otp"], cred: ["totp"] })), await s.sign()]) {
      await assert.rejects(verifyReceipt(receipt, s.jwks, want({ stepUpMethods: ["hwk"] })), { name: "ReceiptError", kind: "mismatch" });
    }
  });

  test("clear messages", async () => {
    const s = await signer();
    const good = await s.sign();
    await assert.rejects(verifyReceipt(good, s.jwks, want({ callId: "call_9" })), {
      name: "ReceiptError", kind: "mismatch", message: 'approval receipt is for another call: it approves tool call "call_1", not "call_9"',
    });
    await assert.rejects(verifyReceipt(good, s.jwks, want({ now: (T0 + 86400) * 1000 })), {
      kind: "expired", message: "approval receipt expired: at 2027-01-15T09:00:00Z",
    });
  });

  test("verifyMetadata reads the call's metadata", async () => {
    const s = await signer();
    const md = { slackbot_receipt: await s.sign(), ticket: 42 };
    assert.equal((await verifyMetadata(md, s.jwks, want())).sub, "call_1");
    for (const missing of [undefined, null, {}, { ticket: 42 }]) {
      assert.equal(await verdict(verifyMetadata(missing, s.jwks, want())), "missing");
    }
  });
});

describe("JWKS", () => {
  test("parseJwks keeps Ed25519 signing keys and refuses a wrong kid", async () => {
    const ids = vectors.jwks.keys.map((k) => k.kid);
    assert.deepEqual((await parseJwks(vectors.jwks)).ids, ids);
    const key = vectors.jwks.keys[0];
    const others = [{ kty: "RSA", n: "x", e: "AQAB", kid: "r" }, { ...key, use: "enc" }, { kty: "OKP", crv: "X25519", x: "AAAA", kid: "x" }, { ...key, d: "AAAA" }];
    assert.deepEqual((await parseJwks({ keys: [...others, ...vectors.jwks.keys] })).ids, ids);
    for (const bad of [
      { keys: [{ ...key, kid: "chosen-by-attacker" }] },
      { keys: [{ ...key, kid: undefined }] },
      { keys: [{ ...key, x: Buffer.alloc(31).toString("base64url") }] },
      { keys: [] },
      { keys: [{ ...key, use: "enc" }] },
      [key] as unknown as JsonWebKeySet,
      "{",
      JSON.stringify(vectors.jwks) + " ".repeat(MaxJWKSBytes),
    ]) {
      await assert.rejects(parseJwks(bad), JWKSError, JSON.stringify(bad).slice(0, 60));
    }
    await assert.rejects(verifyReceipt(vectors.cases[0].receipt, { keys: [] }, { callId: "call_1", tool: "issue_refund", args: {} }), JWKSError);
  });

  test("fetchJwks reads /.well-known/jwks.json, bounded", async () => {
    const seen: string[] = [];
    const srv = createServer((req, res) => {
      seen.push(`${req.url} ${req.headers.accept}`);
      if (req.url === "/.well-known/jwks.json") res.end(JSON.stringify(vectors.jwks));
      else if (req.url === "/big/.well-known/jwks.json") res.end(" ".repeat(MaxJWKSBytes + 10));
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    try {
      const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
      const ids = vectors.jwks.keys.map((k) => k.kid);
      for (const url of [base, base + "/", base + "/.well-known/jwks.json"]) assert.deepEqual((await fetchJwks(url)).ids, ids, url);
      assert.equal(seen[0], "/.well-known/jwks.json application/json");
      for (const bad of [base + "/big", base + "/missing", "file:///etc/passwd"]) await assert.rejects(fetchJwks(bad), JWKSError, bad);
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });
});

describe("adapters' outcomes", () => {
  test("carry an approved call's receipt, and a denied call has none", () => {
    const a = {
      token: "t", status: "resolved", calls: [],
      results: { approvals: { c1: true, c2: { kind: "tool-approved", override_args: { path: "/b" } }, c3: false, c4: { kind: "tool-denied", message: "no" } },
        metadata: { c1: { slackbot_receipt: "r1" }, c2: { slackbot_receipt: "r2" }, c3: { slackbot_receipt: "forged" }, c4: { slackbot_receipt: "forged" } } },
    } as unknown as Approval;
    const r = a.results!.approvals!;
    assert.deepEqual(["c1", "c2", "c3", "c4", "c5"].map((id) => outcomeOf(id, r[id], a).receipt), ["r1", "r2", undefined, undefined, undefined]);
    assert.equal(outcomeOf("c1", true, { ...a, results: { approvals: r, metadata: { c1: { slackbot_receipt: 7 } } } }).receipt, undefined);
  });
});
