export { InexactNumberError, canonicalJson } from "./canonical.js";
/** MetadataKey is where a receipt is in a call's results metadata. */
export declare const MetadataKey = "slackbot_receipt";
/** ReceiptType is the typ header of every receipt. */
export declare const ReceiptType = "slackbot-receipt+jwt";
/** SkewSeconds is the clock difference allowed on exp and iat. */
export declare const SkewSeconds = 60;
/** MaxReceiptBytes bounds a receipt verifyReceipt reads. */
export declare const MaxReceiptBytes: number;
/** MaxJWKSBytes bounds a JWK Set parseJwks or fetchJwks reads. */
export declare const MaxJWKSBytes: number;
/** ReceiptErrorKind says why a receipt does not verify (the shared vectors' names). */
export type ReceiptErrorKind = "missing" | "malformed" | "unknown_key" | "signature" | "mismatch" | "expired";
/**
 * ReceiptError is verifyReceipt's refusal. kind "unknown_key" means the
 * keys rotated (or the receipt is not slackbot's): fetch the JWKS again.
 */
export declare class ReceiptError extends Error {
    readonly kind: ReceiptErrorKind;
    constructor(kind: ReceiptErrorKind, detail?: string);
}
/** JWKSError says why a JWK Set is unusable. */
export declare class JWKSError extends Error {
    constructor(message: string);
}
/** ReceiptClaims is what a receipt says. */
export interface ReceiptClaims {
    iss: string;
    /** The tool_call_id of the approved call. */
    sub: string;
    tool: string;
    args_sha256: string;
    /** Approver ids, "policy:<route>" or "grant:<approver>". */
    by: string[];
    route: string;
    tok: string;
    /** Unix seconds. */
    iat: number;
    exp: number;
    /**
     * The approvers' step-up methods (RFC 8176: ["hwk"] for a passkey,
     * ["otp"] for a one-time code); empty when any approver only clicked.
     */
    amr: string[];
    /** The approvers' step-up credential ids, in by's order. */
    cred: string[];
}
/** ReceiptExpect is the call a receipt must be for. */
export interface ReceiptExpect {
    callId: string;
    tool: string;
    /**
     * The arguments that will run: their JSON text (a string: best, as the
     * model's raw arguments string is, since only the text shows a number
     * JSON.parse rounded) or the parsed value; undefined means {}.
     */
    args: unknown;
    /** The resume token the call was decided on, when known. */
    token?: string;
    /** The iss the receipt must name (slackbot's PUBLIC_URL), when set. */
    issuer?: string;
    /** Now, in milliseconds since the epoch, or a Date; default Date.now(). */
    now?: number | Date;
    /**
     * Refuse (kind "mismatch") a receipt whose approvers did not each step
     * up with a passkey or one-time code beyond the click in Slack: one with
     * no amr, or fewer cred than by.
     */
    requireStepUp?: boolean;
    /**
     * Also refuse (kind "mismatch") a receipt whose amr names a method
     * outside this list: ["hwk"] demands a passkey where a route also accepts
     * a one-time code ("otp"). Implies requireStepUp.
     */
    stepUpMethods?: string[];
}
/** argsSha256 is a receipt's args_sha256 of these arguments (see canonicalJson). */
export declare function argsSha256(args: unknown): Promise<string>;
/** tokenSha256 is a receipt's tok of a resume token. */
export declare function tokenSha256(token: string): Promise<string>;
/** KeySet is the public keys receipts are verified with, by kid (current first). */
export declare class KeySet {
    private readonly keys;
    constructor(keys: ReadonlyMap<string, CryptoKey>);
    /** ids are the key ids, in the JWKS's order. */
    get ids(): string[];
    /** key returns the public key of kid. */
    key(kid: string): CryptoKey | undefined;
}
/** JsonWebKeySet is a JWK Set as slackbot serves it. */
export interface JsonWebKeySet {
    keys: Record<string, unknown>[];
}
/**
 * parseJwks keeps a JWK Set's Ed25519 signing keys (JSON text or parsed).
 * Other key types, private keys and encryption keys are skipped; a key
 * whose kid is not its RFC 7638 thumbprint is refused, and so is a set
 * without an Ed25519 key. Throws JWKSError.
 */
export declare function parseJwks(data: string | JsonWebKeySet | KeySet): Promise<KeySet>;
/** FetchJwksOptions tune fetchJwks. */
export interface FetchJwksOptions {
    /** The fetch to use; default globalThis.fetch. */
    fetch?: typeof fetch;
    signal?: AbortSignal;
}
/**
 * fetchJwks reads the keys slackbot serves at baseUrl +
 * "/.well-known/jwks.json" (baseUrl may be that URL), at most
 * MaxJWKSBytes of them. Fetch again when a verification fails with kind
 * "unknown_key": the keys rotated. Throws JWKSError.
 */
export declare function fetchJwks(baseUrl: string, opts?: FetchJwksOptions): Promise<KeySet>;
/**
 * verifyReceipt checks that receipt was signed by one of jwks's keys for
 * exactly the call want describes, and returns its claims. jwks is a
 * KeySet (fetchJwks, parseJwks) or a JWK Set. It throws ReceiptError,
 * whose kind says why: missing, malformed (including any alg but EdDSA
 * and any typ but slackbot-receipt+jwt), unknown_key, signature, mismatch
 * (another call, tool, arguments, request or issuer), expired; and
 * JWKSError for an unusable jwks.
 */
export declare function verifyReceipt(receipt: unknown, jwks: KeySet | JsonWebKeySet | string, want: ReceiptExpect): Promise<ReceiptClaims>;
/**
 * verifyMetadata is verifyReceipt of the receipt in a call's results
 * metadata (DeferredToolResults.metadata[callId]); none there throws kind
 * "missing".
 */
export declare function verifyMetadata(metadata: Record<string, unknown> | null | undefined, jwks: KeySet | JsonWebKeySet | string, want: ReceiptExpect): Promise<ReceiptClaims>;
