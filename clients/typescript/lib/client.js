// The /v1 client: create a request, long-poll it until people decide,
// answer calls, cancel. The JSON is Pydantic AI's DeferredToolRequests /
// DeferredToolResults wire format (see httpapi's OpenAPI document).
/** SlackbotError is an error answer from /v1 ({"error":{"code","message"}}). */
export class SlackbotError extends Error {
    status;
    code;
    /** Seconds to wait before retrying (429), when slackbot said. */
    retryAfter;
    constructor(status, code, message, retryAfter) {
        super(`slackbot: ${code} (${status}): ${message}`);
        this.name = "SlackbotError";
        this.status = status;
        this.code = code;
        this.retryAfter = retryAfter;
    }
}
/** isFinal reports whether a request has ended. */
export function isFinal(a) {
    return a.status !== "pending";
}
/** SlackbotClient speaks /v1 with one API key. */
export class SlackbotClient {
    #base;
    #key;
    #fetch;
    #poll;
    /** Creates a client of the slackbot at baseURL (e.g. "https://slackbot.example.com"). */
    constructor(baseURL, apiKey, opts = {}) {
        if (!apiKey)
            throw new TypeError("slackbot: an API key is required");
        this.#base = baseURL.replace(/\/+$/, "");
        this.#key = apiKey;
        this.#fetch = opts.fetch ?? globalThis.fetch;
        this.#poll = Math.min(60, Math.max(1, Math.floor(opts.pollSeconds ?? 30)));
    }
    /** create posts the calls as cards: POST /v1/approvals. */
    create(requests, opts = {}) {
        return this.#do("POST", "/v1/approvals", { ...requests, ...opts });
    }
    /** get reads a request; with waitSeconds it long-polls until it ends or the wait is over. */
    get(token, waitSeconds, signal) {
        const q = waitSeconds ? `?wait=${Math.floor(waitSeconds)}s` : "";
        return this.#do("GET", `/v1/approvals/${encodeURIComponent(token)}${q}`, undefined, signal);
    }
    /** wait long-polls until the request ends (resolved, expired, cancelled, failed). */
    async wait(token, opts = {}) {
        for (;;) {
            opts.signal?.throwIfAborted();
            const a = await this.get(token, this.#poll, opts.signal);
            if (isFinal(a))
                return a;
        }
    }
    /**
     * results answers calls (external results, programmatic decisions). The
     * key that opened the request may decide its approvals only on a route
     * with allow_self_approval: true (403 self_approval otherwise).
     */
    results(token, results) {
        return this.#do("POST", `/v1/approvals/${encodeURIComponent(token)}/results`, results);
    }
    /**
     * reportOutcome records what became of an approved call (POST
     * /v1/approvals/{token}/outcomes): once per call, a repeat of the same
     * report changes nothing, a different one is a conflict (409).
     */
    reportOutcome(token, report) {
        return this.#do("POST", `/v1/approvals/${encodeURIComponent(token)}/outcomes`, report);
    }
    /** cancel ends a pending request: its cards say cancelled. */
    cancel(token) {
        return this.#do("DELETE", `/v1/approvals/${encodeURIComponent(token)}`);
    }
    async #do(method, path, body, signal) {
        const headers = { Authorization: `Bearer ${this.#key}`, Accept: "application/json" };
        if (body !== undefined)
            headers["Content-Type"] = "application/json";
        const resp = await this.#fetch(this.#base + path, {
            method,
            headers,
            body: body === undefined ? undefined : JSON.stringify(body),
            signal,
        });
        const text = await resp.text();
        let parsed;
        try {
            parsed = text ? JSON.parse(text) : undefined;
        }
        catch {
            throw new SlackbotError(resp.status, "bad_response", `${method} ${path}: not JSON: ${text.slice(0, 200)}`);
        }
        if (resp.ok) {
            if (!parsed || typeof parsed !== "object") {
                throw new SlackbotError(resp.status, "bad_response", `${method} ${path}: empty answer`);
            }
            return parsed;
        }
        const err = parsed?.error;
        const ra = Number(resp.headers.get("Retry-After"));
        throw new SlackbotError(resp.status, err?.code ?? "bad_response", err?.message ?? `${method} ${path}: ${text.slice(0, 200)}`, Number.isFinite(ra) && ra > 0 ? ra : undefined);
    }
}
