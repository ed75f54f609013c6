import type { Approval } from "./client.js";
/** HeaderTimestamp is the callback's timestamp header. */
export declare const HeaderTimestamp = "X-Slackbot-Timestamp";
/** HeaderSignature is the callback's signature header. */
export declare const HeaderSignature = "X-Slackbot-Signature";
/** CallbackError says why a callback was refused. */
export declare class CallbackError extends Error {
    constructor(message: string);
}
/** callbackSecret derives a client's callback secret from its API key. */
export declare function callbackSecret(apiKey: string): Promise<string>;
/** signCallback returns the X-Slackbot-Signature of body sent at timestamp (for tests and relays). */
export declare function signCallback(secret: string, timestamp: string, body: string | Uint8Array): Promise<string>;
/** VerifyOptions tune verifyCallback. */
export interface VerifyOptions {
    /** Now, in milliseconds since the epoch; default Date.now(). */
    now?: number;
    /** Largest distance between the timestamp and now, in seconds; default 300. */
    toleranceSeconds?: number;
}
type HeaderSource = Headers | Record<string, string | string[] | undefined>;
/**
 * verifyCallback checks a callback's signature over the raw body (before
 * parsing it) in constant time, and refuses a timestamp more than five
 * minutes from now. It returns the parsed Approval, and throws
 * CallbackError otherwise. secret is callbackSecret(apiKey).
 */
export declare function verifyCallback(secret: string, headers: HeaderSource, body: string | Uint8Array, opts?: VerifyOptions): Promise<Approval>;
export {};
