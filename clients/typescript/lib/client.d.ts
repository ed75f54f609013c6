/** ToolCall is one pending tool call (Pydantic AI's ToolCallPart). */
export interface ToolCall {
    tool_name: string;
    /** A JSON object, a string holding one, or null. */
    args: Record<string, unknown> | string | null;
    tool_call_id: string;
}
/** DeferredToolRequests is what a run hands over: the calls it may not run alone. */
export interface DeferredToolRequests {
    /** Calls waiting for an external result (or an answer). */
    calls?: ToolCall[];
    /** Calls waiting for a decision. */
    approvals?: ToolCall[];
    metadata?: Record<string, Record<string, unknown>>;
}
/** ToolApproved approves a call, optionally with edited arguments. */
export interface ToolApproved {
    kind: "tool-approved";
    override_args?: Record<string, unknown> | string | null;
}
/** ToolDenied denies a call; message is what the model sees. */
export interface ToolDenied {
    kind: "tool-denied";
    message?: string;
}
/** ApprovalResult is a decision: true, false, or the object forms. */
export type ApprovalResult = boolean | ToolApproved | ToolDenied;
/** DeferredToolResults are the answers, by tool_call_id. */
export interface DeferredToolResults {
    calls?: Record<string, unknown>;
    approvals?: Record<string, ApprovalResult>;
    metadata?: Record<string, Record<string, unknown>>;
    /** Who decided each call: a Slack user id, "policy:<route>", an API client. */
    answered_by?: Record<string, string>;
}
/** Status is a request's state; every one but "pending" is final. */
export type Status = "pending" | "resolved" | "expired" | "cancelled" | "failed";
/** CallState is one call of a request as slackbot sees it. */
export interface CallState {
    tool_call_id: string;
    tool_name: string;
    kind: "approval" | "question" | "external";
    state: "pending" | "approved" | "denied" | "answered" | "failed" | "expired" | "cancelled";
    route: string;
    decided_by: string | null;
    votes: number;
    required: number;
    /** What became of the call once it was decided, when reported (by a run, or reportOutcome). */
    outcome?: {
        status: "ran" | "failed" | "not_run";
        summary?: string;
    } | null;
}
/** Approval is a request: GET /v1/approvals/{token}. */
export interface Approval {
    token: string;
    status: Status;
    created_at: string;
    expires_at: string;
    ended_at: string | null;
    requester: string;
    context: string;
    calls: CallState[];
    results: DeferredToolResults | null;
}
/** CreateOptions are slackbot's fields of a create request. */
export interface CreateOptions {
    /** One route for every call (it must match each call's tool). */
    route?: string;
    /** Who asked, shown on the cards. */
    requester?: string;
    /** Why, shown on the cards. */
    context?: string;
    /** A duration such as "30m", or seconds. */
    timeout?: string | number;
    /** https URL that receives the signed result when the request ends. */
    callback_url?: string;
    /** The same key and body return the same token: retries post no second card. */
    idempotency_key?: string;
}
/**
 * OutcomeReport says what became of an approved call once the program
 * acted on the decision: ran (error: how the tool failed, if it did) or
 * not (error: why it did not run). slackbot shows it on the call's card.
 */
export interface OutcomeReport {
    tool_call_id: string;
    ran: boolean;
    /** Why the call did not run, or how the tool failed; at most 1,000 characters. */
    error?: string;
}
/** ErrorCode is one of /v1's stable error codes. */
export type ErrorCode = "unauthorized" | "not_found" | "method_not_allowed" | "invalid_request" | "route_forbidden" | "self_approval" | "conflict" | "payload_too_large" | "unsupported_media_type" | "rate_limited" | "internal" | "bad_response";
/** SlackbotError is an error answer from /v1 ({"error":{"code","message"}}). */
export declare class SlackbotError extends Error {
    readonly status: number;
    readonly code: ErrorCode;
    /** Seconds to wait before retrying (429), when slackbot said. */
    readonly retryAfter?: number;
    constructor(status: number, code: ErrorCode, message: string, retryAfter?: number);
}
/** ClientOptions configure a SlackbotClient. */
export interface ClientOptions {
    /** The fetch to use; default globalThis.fetch. */
    fetch?: typeof fetch;
    /** Seconds each long poll waits (1–60); default 30. */
    pollSeconds?: number;
}
/** WaitOptions bound SlackbotClient.wait. */
export interface WaitOptions {
    signal?: AbortSignal;
}
/** isFinal reports whether a request has ended. */
export declare function isFinal(a: Approval): boolean;
/** SlackbotClient speaks /v1 with one API key. */
export declare class SlackbotClient {
    #private;
    /** Creates a client of the slackbot at baseURL (e.g. "https://slackbot.example.com"). */
    constructor(baseURL: string, apiKey: string, opts?: ClientOptions);
    /** create posts the calls as cards: POST /v1/approvals. */
    create(requests: DeferredToolRequests, opts?: CreateOptions): Promise<Approval>;
    /** get reads a request; with waitSeconds it long-polls until it ends or the wait is over. */
    get(token: string, waitSeconds?: number, signal?: AbortSignal): Promise<Approval>;
    /** wait long-polls until the request ends (resolved, expired, cancelled, failed). */
    wait(token: string, opts?: WaitOptions): Promise<Approval>;
    /**
     * results answers calls (external results, programmatic decisions). The
     * key that opened the request may decide its approvals only on a route
     * with allow_self_approval: true (403 self_approval otherwise).
     */
    results(token: string, results: DeferredToolResults): Promise<Approval>;
    /**
     * reportOutcome records what became of an approved call (POST
     * /v1/approvals/{token}/outcomes): once per call, a repeat of the same
     * report changes nothing, a different one is a conflict (409).
     */
    reportOutcome(token: string, report: OutcomeReport): Promise<Approval>;
    /** cancel ends a pending request: its cards say cancelled. */
    cancel(token: string): Promise<Approval>;
}
