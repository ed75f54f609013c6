/** InexactNumberError is canonicalJson's error for a number RFC 8785 would round. */
export declare class InexactNumberError extends Error {
    constructor(text: string);
}
/** MaxDepth bounds the nesting canonicalJson follows. */
export declare const MaxDepth = 1000;
/**
 * canonicalJson returns the RFC 8785 canonical form of args, as slackbot
 * hashes it. args is a JSON value or, as a string, its JSON text (the
 * form to prefer, see above); undefined, null and "" mean {}. It throws
 * InexactNumberError for a number RFC 8785 would round, SyntaxError for
 * text that is not JSON (or has duplicate keys), TypeError for a value
 * JSON cannot hold.
 */
export declare function canonicalJson(args: unknown): string;
