// RFC 8785 (JCS) canonical JSON, as slackbot hashes a call's arguments for
// a receipt's args_sha256: object keys sorted by UTF-16 code units, no
// whitespace, strings with JSON.stringify's escapes, numbers in
// ECMAScript's Number form (JSON.stringify's). It refuses what slackbot's
// Go code (receipt.Canonical) refuses: a number whose written value is not
// exactly the double RFC 8785 writes for it, duplicate keys, lone
// surrogates.
//
// Give the arguments as JSON text when you have it (the model's raw
// arguments string): JSON.parse has already rounded 12345678901234567891 to
// 12345678901234567000 by the time you hold the parsed object, and only
// the text shows the number was inexact. A parsed value is accepted too.
/** InexactNumberError is canonicalJson's error for a number RFC 8785 would round. */
export class InexactNumberError extends Error {
    constructor(text) {
        super(`the number ${text.slice(0, 40)} is not exactly an IEEE 754 double ` +
            "(an integer beyond 2^53, or more digits than a double holds): send it as a string");
        this.name = "InexactNumberError";
    }
}
/** MaxDepth bounds the nesting canonicalJson follows. */
export const MaxDepth = 1000;
/** A parsed object keeps its members in order, duplicates refused, "__proto__" an ordinary key. */
class Members {
    entries;
    constructor(entries) {
        this.entries = entries;
    }
}
/** decimalValue writes a number's value as sign, digits and exponent, the same for every way to write it (Go's decimalValue). */
function decimalValue(n) {
    let sign = "";
    if (n.startsWith("-"))
        [sign, n] = ["-", n.slice(1)];
    const [mant, expText] = n.toLowerCase().split("e");
    let exp = expText === undefined ? 0 : Number(expText);
    const [whole, frac = ""] = mant.split(".");
    const digits = (whole + frac).replace(/^0+/, "");
    exp -= frac.length;
    if (digits === "")
        return "0";
    const trimmed = digits.replace(/0+$/, "");
    exp += digits.length - trimmed.length;
    return `${sign}${trimmed}e${exp}`;
}
/** exactNumber returns the double of a JSON number literal, refusing one RFC 8785 would round. */
function exactNumber(text) {
    const f = Number(text);
    if (!Number.isFinite(f) || decimalValue(text) !== decimalValue(String(f)))
        throw new InexactNumberError(text);
    return f;
}
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const SPACE = /[ \t\n\r]*/y;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Parser is a strict RFC 8259 parser that keeps what canonicalization needs. */
class Parser {
    text;
    i = 0;
    constructor(text) {
        this.text = text;
    }
    parse() {
        const v = this.value(0);
        this.space();
        if (this.i !== this.text.length)
            this.fail("text after the JSON value");
        return v;
    }
    fail(what) {
        throw new SyntaxError(`the arguments are not JSON: ${what} at offset ${this.i}`);
    }
    space() {
        SPACE.lastIndex = this.i;
        SPACE.exec(this.text);
        this.i = SPACE.lastIndex;
    }
    match(re) {
        re.lastIndex = this.i;
        const m = re.exec(this.text);
        if (!m)
            return undefined;
        this.i = re.lastIndex;
        return m[0];
    }
    value(depth) {
        if (depth > MaxDepth)
            this.fail(`nesting deeper than ${MaxDepth}`);
        this.space();
        const c = this.text[this.i];
        if (c === "{")
            return this.object(depth);
        if (c === "[")
            return this.array(depth);
        if (c === '"')
            return this.string();
        for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
            if (this.text.startsWith(word, this.i)) {
                this.i += word.length;
                return v;
            }
        }
        const n = this.match(NUMBER);
        if (n === undefined)
            this.fail("no JSON value");
        return exactNumber(n);
    }
    string() {
        const s = this.match(STRING);
        if (s === undefined)
            this.fail("a malformed string");
        const v = JSON.parse(s);
        if (LONE_SURROGATE.test(v))
            this.fail("a lone UTF-16 surrogate");
        return v;
    }
    array(depth) {
        const out = [];
        this.i++;
        this.space();
        if (this.text[this.i] === "]") {
            this.i++;
            return out;
        }
        for (;;) {
            out.push(this.value(depth + 1));
            this.space();
            const c = this.text[this.i++];
            if (c === "]")
                return out;
            if (c !== ",")
                this.fail("a missing , or ]");
        }
    }
    object(depth) {
        const entries = [];
        const seen = new Set();
        this.i++;
        this.space();
        if (this.text[this.i] === "}") {
            this.i++;
            return new Members(entries);
        }
        for (;;) {
            this.space();
            if (this.text[this.i] !== '"')
                this.fail("a key that is not a string");
            const k = this.string();
            if (seen.has(k))
                this.fail(`a duplicate key ${JSON.stringify(k)}`);
            seen.add(k);
            this.space();
            if (this.text[this.i++] !== ":")
                this.fail("a missing :");
            entries.push([k, this.value(depth + 1)]);
            this.space();
            const c = this.text[this.i++];
            if (c === "}")
                return new Members(entries);
            if (c !== ",")
                this.fail("a missing , or }");
        }
    }
}
/** fromJS turns a JavaScript value into the parsed form, refusing what JSON cannot hold. */
function fromJS(v, depth) {
    if (depth > MaxDepth)
        throw new TypeError(`the arguments nest deeper than ${MaxDepth}`);
    switch (typeof v) {
        case "string":
            if (LONE_SURROGATE.test(v))
                throw new TypeError("a string holds a lone UTF-16 surrogate");
            return v;
        case "boolean":
            return v;
        case "number":
            if (!Number.isFinite(v))
                throw new TypeError("NaN and Infinity have no JSON form");
            return v;
        case "bigint":
            return exactNumber(v.toString());
        case "object": {
            if (v === null)
                return null;
            if (Array.isArray(v))
                return v.map((x) => fromJS(x, depth + 1));
            const proto = Object.getPrototypeOf(v);
            if (proto !== Object.prototype && proto !== null) {
                throw new TypeError(`a ${proto?.constructor?.name ?? "non-plain"} object is not JSON: give its JSON form`);
            }
            return new Members(Object.keys(v).map((k) => {
                if (LONE_SURROGATE.test(k))
                    throw new TypeError("a key holds a lone UTF-16 surrogate");
                return [k, fromJS(v[k], depth + 1)];
            }));
        }
        default:
            throw new TypeError(`a ${typeof v} is not JSON`);
    }
}
function write(v, out) {
    if (v instanceof Members) {
        const sorted = [...v.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)); // UTF-16 code units
        out.push("{");
        sorted.forEach(([k, x], i) => {
            out.push((i ? "," : "") + JSON.stringify(k) + ":");
            write(x, out);
        });
        out.push("}");
    }
    else if (Array.isArray(v)) {
        out.push("[");
        v.forEach((x, i) => {
            if (i)
                out.push(",");
            write(x, out);
        });
        out.push("]");
    }
    else {
        // JSON.stringify writes RFC 8785's forms: ECMAScript numbers (-0 as 0),
        // and strings with \" \\ \b \f \n \r \t and \u00xx (lower case) only.
        out.push(JSON.stringify(v));
    }
}
/**
 * canonicalJson returns the RFC 8785 canonical form of args, as slackbot
 * hashes it. args is a JSON value or, as a string, its JSON text (the
 * form to prefer, see above); undefined, null and "" mean {}. It throws
 * InexactNumberError for a number RFC 8785 would round, SyntaxError for
 * text that is not JSON (or has duplicate keys), TypeError for a value
 * JSON cannot hold.
 */
export function canonicalJson(args) {
    if (args === undefined || args === null || args === "")
        return "{}";
    const v = typeof args === "string" ? new Parser(args).parse() : fromJS(args, 0);
    const out = [];
    write(v, out);
    return out.join("");
}
