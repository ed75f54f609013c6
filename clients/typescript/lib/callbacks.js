// The verifier of slackbot's signed callbacks (httpapi/callbacks.go):
//
//   X-Slackbot-Timestamp: <unix seconds>
//   X-Slackbot-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// where secret = hex(HMAC-SHA256(key=<API key>, "slackbot-callback-v1")),
// the 64 hex characters used as ASCII bytes. WebCrypto only: it runs in
// Node ≥ 20, Deno, Bun, workers and browsers.
/** HeaderTimestamp is the callback's timestamp header. */
export const HeaderTimestamp = "X-Slackbot-Timestamp";
/** HeaderSignature is the callback's signature header. */
export const HeaderSignature = "X-Slackbot-Signature";
/** CallbackError says why a callback was refused. */
export class CallbackError extends Error {
    constructor(message) {
        super(`slackbot callback: ${message}`);
        this.name = "CallbackError";
    }
}
const enc = new TextEncoder();
function bytes(s) {
    return new Uint8Array(enc.encode(s));
}
async function hmacKey(secret) {
    return crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}
function hex(b) {
    return Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
}
/** callbackSecret derives a client's callback secret from its API key. */
export async function callbackSecret(apiKey) {
    const key = await hmacKey(bytes(apiKey));
    return hex(await crypto.subtle.sign("HMAC", key, bytes("slackbot-callback-v1")));
}
/** signCallback returns the X-Slackbot-Signature of body sent at timestamp (for tests and relays). */
export async function signCallback(secret, timestamp, body) {
    const key = await hmacKey(bytes(secret));
    return "v1=" + hex(await crypto.subtle.sign("HMAC", key, signedBytes(timestamp, body)));
}
function signedBytes(timestamp, body) {
    const b = typeof body === "string" ? enc.encode(body) : body;
    const prefix = enc.encode(timestamp + ".");
    const out = new Uint8Array(prefix.length + b.length);
    out.set(prefix);
    out.set(b, prefix.length);
    return out;
}
function header(h, name) {
    if (typeof h.get === "function")
        return h.get(name) ?? undefined;
    const rec = h;
    const k = Object.keys(rec).find((x) => x.toLowerCase() === name.toLowerCase());
    const v = k === undefined ? undefined : rec[k];
    return Array.isArray(v) ? v[0] : v;
}
/**
 * verifyCallback checks a callback's signature over the raw body (before
 * parsing it) in constant time, and refuses a timestamp more than five
 * minutes from now. It returns the parsed Approval, and throws
 * CallbackError otherwise. secret is callbackSecret(apiKey).
 */
export async function verifyCallback(secret, headers, body, opts = {}) {
    const ts = header(headers, HeaderTimestamp) ?? "";
    if (!/^\d{1,12}$/.test(ts))
        throw new CallbackError(`missing or malformed ${HeaderTimestamp}`);
    const skew = Math.abs((opts.now ?? Date.now()) / 1000 - Number(ts));
    if (skew > (opts.toleranceSeconds ?? 300))
        throw new CallbackError(`timestamp is ${Math.round(skew)}s away from now`);
    const sig = header(headers, HeaderSignature) ?? "";
    const m = /^v1=([0-9a-f]{64})$/.exec(sig);
    if (!m)
        throw new CallbackError(`missing or malformed ${HeaderSignature}`);
    const mac = new Uint8Array(m[1].match(/../g).map((x) => parseInt(x, 16)));
    // subtle.verify compares in constant time.
    const ok = await crypto.subtle.verify("HMAC", await hmacKey(bytes(secret)), mac, signedBytes(ts, body));
    if (!ok)
        throw new CallbackError("bad signature");
    const text = typeof body === "string" ? body : new TextDecoder().decode(body);
    try {
        return JSON.parse(text);
    }
    catch {
        throw new CallbackError("the signed body is not JSON");
    }
}
