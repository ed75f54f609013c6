// The verifier of slackbot's approval receipts. slackbot puts one in
// DeferredToolResults.metadata[tool_call_id].slackbot_receipt for every
// call it approved (by people, a policy or a grant): a compact JWS (EdDSA
// over Ed25519, typ slackbot-receipt+jwt, kid the RFC 7638 thumbprint of
// the key) whose claims bind the call — sub (tool_call_id), tool,
// args_sha256 (base64url SHA-256 of the RFC 8785 canonical JSON of the
// arguments that run), by, route, tok (base64url SHA-256 of the resume
// token), iat, exp; after a step-up (a passkey) also amr and cred, which
// requireStepUp demands. Whoever runs the tool verifies it, with the keys
// slackbot serves at /.well-known/jwks.json, before acting.
//
// A receipt proves what slackbot decided, no more: the tool still enforces
// its own limits. WebCrypto only (Ed25519 is in Node ≥ 20 without a flag,
// Deno, Bun, and current browsers); the rules follow slackbot's Go
// verifier (package receipt) and are tested against the same vectors.
import { canonicalJson } from "./canonical.js";
export { InexactNumberError, canonicalJson } from "./canonical.js";
/** MetadataKey is where a receipt is in a call's results metadata. */
export const MetadataKey = "slackbot_receipt";
/** ReceiptType is the typ header of every receipt. */
export const ReceiptType = "slackbot-receipt+jwt";
/** SkewSeconds is the clock difference allowed on exp and iat. */
export const SkewSeconds = 60;
/** MaxReceiptBytes bounds a receipt verifyReceipt reads. */
export const MaxReceiptBytes = 8 << 10;
/** MaxJWKSBytes bounds a JWK Set parseJwks or fetchJwks reads. */
export const MaxJWKSBytes = 64 << 10;
const reasons = {
    missing: "no approval receipt",
    malformed: "approval receipt malformed",
    unknown_key: "approval receipt signed by an unknown key",
    signature: "approval receipt signature does not verify",
    mismatch: "approval receipt is for another call",
    expired: "approval receipt expired",
};
/**
 * ReceiptError is verifyReceipt's refusal. kind "unknown_key" means the
 * keys rotated (or the receipt is not slackbot's): fetch the JWKS again.
 */
export class ReceiptError extends Error {
    kind;
    constructor(kind, detail) {
        super(reasons[kind] + (detail ? `: ${detail}` : ""));
        this.kind = kind;
        this.name = "ReceiptError";
    }
}
/** JWKSError says why a JWK Set is unusable. */
export class JWKSError extends Error {
    constructor(message) {
        super(`JWKS: ${message}`);
        this.name = "JWKSError";
    }
}
const enc = new TextEncoder();
const B64URL = /^[A-Za-z0-9_-]*$/;
/**
 * b64url decodes unpadded base64url, as a JWS writes it (slackbot's Go
 * verifier refuses padding too); undefined for anything else, including a
 * non-canonical spelling (non-zero trailing bits), so one receipt has one
 * spelling only.
 */
function b64url(s) {
    if (!B64URL.test(s) || s.length % 4 === 1)
        return undefined;
    const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
    const b = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return b64urlEncode(b) === s ? b : undefined;
}
function b64urlEncode(b) {
    return btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
async function sha256(s) {
    return b64urlEncode(await crypto.subtle.digest("SHA-256", enc.encode(s)));
}
/** argsSha256 is a receipt's args_sha256 of these arguments (see canonicalJson). */
export function argsSha256(args) {
    return sha256(canonicalJson(args));
}
/** tokenSha256 is a receipt's tok of a resume token. */
export function tokenSha256(token) {
    return sha256(token);
}
/** KeySet is the public keys receipts are verified with, by kid (current first). */
export class KeySet {
    keys;
    constructor(keys) {
        this.keys = keys;
    }
    /** ids are the key ids, in the JWKS's order. */
    get ids() {
        return [...this.keys.keys()];
    }
    /** key returns the public key of kid. */
    key(kid) {
        return this.keys.get(kid);
    }
}
/**
 * parseJwks keeps a JWK Set's Ed25519 signing keys (JSON text or parsed).
 * Other key types, private keys and encryption keys are skipped; a key
 * whose kid is not its RFC 7638 thumbprint is refused, and so is a set
 * without an Ed25519 key. Throws JWKSError.
 */
export async function parseJwks(data) {
    if (data instanceof KeySet)
        return data;
    let set = data;
    if (typeof data === "string") {
        if (data.length > MaxJWKSBytes)
            throw new JWKSError(`${data.length} bytes, at most ${MaxJWKSBytes}`);
        try {
            set = JSON.parse(data);
        }
        catch (err) {
            throw new JWKSError(`not JSON: ${err.message}`);
        }
    }
    const keys = set?.keys;
    if (typeof set !== "object" || set === null || !Array.isArray(keys))
        throw new JWKSError('want {"keys": [...]}');
    const out = new Map();
    for (const jwk of keys) {
        if (typeof jwk !== "object" || jwk === null)
            throw new JWKSError("a key is not an object");
        if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || "d" in jwk || !["", "sig", undefined].includes(jwk.use))
            continue;
        const x = typeof jwk.x === "string" ? b64url(jwk.x) : undefined;
        if (x === undefined || x.length !== 32)
            throw new JWKSError(`key ${JSON.stringify(jwk.kid)}: x is not a 32-byte base64url Ed25519 key`);
        const kid = await sha256(`{"crv":"Ed25519","kty":"OKP","x":"${b64urlEncode(x)}"}`);
        if (jwk.kid !== kid)
            throw new JWKSError(`key ${JSON.stringify(jwk.kid)}: kid is not the key's RFC 7638 thumbprint "${kid}"`);
        if (!out.has(kid))
            out.set(kid, await crypto.subtle.importKey("raw", x, { name: "Ed25519" }, false, ["verify"]));
    }
    if (out.size === 0)
        throw new JWKSError("no Ed25519 signing key");
    return new KeySet(out);
}
/**
 * fetchJwks reads the keys slackbot serves at baseUrl +
 * "/.well-known/jwks.json" (baseUrl may be that URL), at most
 * MaxJWKSBytes of them. Fetch again when a verification fails with kind
 * "unknown_key": the keys rotated. Throws JWKSError.
 */
export async function fetchJwks(baseUrl, opts = {}) {
    let url = baseUrl.replace(/\/+$/, "");
    if (!url.endsWith("/.well-known/jwks.json"))
        url += "/.well-known/jwks.json";
    if (!/^https?:\/\//i.test(url))
        throw new JWKSError(`${url} is not an http(s) URL`);
    let resp;
    try {
        resp = await (opts.fetch ?? fetch)(url, { headers: { Accept: "application/json" }, signal: opts.signal });
    }
    catch (err) {
        throw new JWKSError(`fetch ${url}: ${err.message}`);
    }
    if (!resp.ok)
        throw new JWKSError(`fetch ${url}: ${resp.status} ${resp.statusText}`);
    return parseJwks(await boundedText(resp, url));
}
async function boundedText(resp, url) {
    const chunks = [];
    let n = 0;
    const reader = resp.body?.getReader();
    while (reader) {
        const { done, value } = await reader.read();
        if (done)
            break;
        n += value.length;
        if (n > MaxJWKSBytes) {
            await reader.cancel();
            throw new JWKSError(`${url}: more than ${MaxJWKSBytes} bytes`);
        }
        chunks.push(value);
    }
    const all = new Uint8Array(n);
    let at = 0;
    for (const c of chunks) {
        all.set(c, at);
        at += c.length;
    }
    return new TextDecoder().decode(all);
}
function jsonObject(b, what) {
    let v;
    try {
        v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b));
    }
    catch (err) {
        throw new ReceiptError("malformed", `${what}: ${err.message}`);
    }
    if (typeof v !== "object" || v === null || Array.isArray(v))
        throw new ReceiptError("malformed", `${what}: not a JSON object`);
    return v;
}
/** claimsOf types the payload as Go does: a missing or null claim is its zero value. */
function claimsOf(b) {
    const c = jsonObject(b, "claims");
    for (const name of ["iss", "sub", "tool", "args_sha256", "route", "tok"]) {
        c[name] ??= "";
        if (typeof c[name] !== "string")
            throw new ReceiptError("malformed", `claims: ${name} is not a string`);
    }
    for (const name of ["by", "amr", "cred"]) {
        c[name] ??= [];
        const v = c[name];
        if (!Array.isArray(v) || !v.every((x) => typeof x === "string"))
            throw new ReceiptError("malformed", `claims: ${name} is not a list of strings`);
    }
    for (const name of ["iat", "exp"]) {
        c[name] ??= 0;
        if (!Number.isSafeInteger(c[name]))
            throw new ReceiptError("malformed", `claims: ${name} is not an integer`);
    }
    return c;
}
/** verified returns the claims of a receipt whose signature one of keys verifies. */
async function verified(receipt, keys) {
    if (receipt === undefined || receipt === null || receipt === "")
        throw new ReceiptError("missing");
    if (typeof receipt !== "string")
        throw new ReceiptError("malformed", `a ${typeof receipt}, not a string`);
    if (receipt.length > MaxReceiptBytes)
        throw new ReceiptError("malformed", `${receipt.length} bytes, at most ${MaxReceiptBytes}`);
    const parts = receipt.split(".");
    const raw = parts.map(b64url);
    if (parts.length !== 3 || raw.includes(undefined))
        throw new ReceiptError("malformed", "not a compact JWS (header.payload.signature, base64url)");
    const [head, payload, sig] = raw;
    const h = jsonObject(head, "header");
    if (h.alg !== "EdDSA")
        throw new ReceiptError("malformed", `alg ${JSON.stringify(h.alg)}, want "EdDSA"`);
    if ("crit" in h)
        throw new ReceiptError("malformed", "crit header");
    if (h.typ !== ReceiptType)
        throw new ReceiptError("malformed", `typ ${JSON.stringify(h.typ)}, want "${ReceiptType}"`);
    const kid = h.kid ?? "";
    if (typeof kid !== "string")
        throw new ReceiptError("malformed", "kid is not a string");
    const key = keys.key(kid);
    if (!key)
        throw new ReceiptError("unknown_key", `kid "${kid}"`);
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, sig, enc.encode(parts[0] + "." + parts[1]));
    if (!ok)
        throw new ReceiptError("signature");
    return claimsOf(payload);
}
function iso(t) {
    return new Date(t * 1000).toISOString().replace(/\.000Z$/, "Z");
}
/** check refuses claims that are not for want's call (Go's Claims.check, in its order). */
async function check(c, want) {
    let digest;
    try {
        digest = await argsSha256(want.args);
    }
    catch (err) {
        throw new ReceiptError("mismatch", `the arguments: ${err.message}`);
    }
    const now = (want.now instanceof Date ? want.now.getTime() : (want.now ?? Date.now())) / 1000;
    if (c.sub !== want.callId)
        throw new ReceiptError("mismatch", `it approves tool call "${c.sub}", not "${want.callId}"`);
    if (c.tool !== want.tool)
        throw new ReceiptError("mismatch", `it approves tool "${c.tool}", not "${want.tool}"`);
    if (c.args_sha256 !== digest)
        throw new ReceiptError("mismatch", "it approves other arguments than these");
    if (want.token && c.tok !== (await tokenSha256(want.token)))
        throw new ReceiptError("mismatch", "it was decided on another request");
    if (want.issuer && c.iss !== want.issuer)
        throw new ReceiptError("mismatch", `issued by "${c.iss}", not "${want.issuer}"`);
    const methods = want.stepUpMethods ?? [];
    if ((want.requireStepUp || methods.length > 0) && (c.amr.length === 0 || c.cred.length !== c.by.length)) {
        throw new ReceiptError("mismatch", "its approval was a click, without the passkey (or one-time code) this tool requires");
    }
    if (methods.length > 0 && c.amr.some((m) => !methods.includes(m))) {
        throw new ReceiptError("mismatch", `its approvers stepped up with [${c.amr.join(", ")}]; this tool accepts only [${methods.join(", ")}]`);
    }
    if (now > c.exp + SkewSeconds)
        throw new ReceiptError("expired", `at ${iso(c.exp)}`);
    if (c.iat > now + SkewSeconds)
        throw new ReceiptError("malformed", `issued in the future (${iso(c.iat)})`);
}
/**
 * verifyReceipt checks that receipt was signed by one of jwks's keys for
 * exactly the call want describes, and returns its claims. jwks is a
 * KeySet (fetchJwks, parseJwks) or a JWK Set. It throws ReceiptError,
 * whose kind says why: missing, malformed (including any alg but EdDSA
 * and any typ but slackbot-receipt+jwt), unknown_key, signature, mismatch
 * (another call, tool, arguments, request or issuer), expired; and
 * JWKSError for an unusable jwks.
 */
export async function verifyReceipt(receipt, jwks, want) {
    const claims = await verified(receipt, await parseJwks(jwks));
    await check(claims, want);
    return claims;
}
/**
 * verifyMetadata is verifyReceipt of the receipt in a call's results
 * metadata (DeferredToolResults.metadata[callId]); none there throws kind
 * "missing".
 */
export function verifyMetadata(metadata, jwks, want) {
    return verifyReceipt(metadata?.[MetadataKey], jwks, want);
}
