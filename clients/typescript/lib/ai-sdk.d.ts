import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type Outcome, type SubmitOptions } from "./decisions.js";
import { type RunOutcome } from "./ai-sdk-outcomes.js";
export type { Outcome } from "./decisions.js";
export { holdApprovals } from "./ai-sdk-edits.js";
export { type RunOutcome, reportOutcomes, ranOutcomes } from "./ai-sdk-outcomes.js";
/** ToolCallPart is the SDK's tool-call part (in result.content and in messages). */
export interface ToolCallPart {
    type: "tool-call";
    toolCallId: string;
    toolName: string;
    input: unknown;
    [k: string]: unknown;
}
/** ApprovalRequestPart is the SDK's tool-approval-request part of result.content. */
export interface ApprovalRequestPart {
    type: "tool-approval-request";
    approvalId: string;
    toolCall: {
        toolCallId: string;
        toolName: string;
        input: unknown;
    };
}
/** ApprovalResponsePart is the SDK's tool-approval-response part. */
export interface ApprovalResponsePart {
    type: "tool-approval-response";
    approvalId: string;
    approved: boolean;
    reason?: string;
    /** slackbot.receipt: the approval receipt, for the tool to check (receiptFor). */
    providerOptions?: {
        slackbot: {
            receipt: string;
        };
    };
}
/** Message is a model message as the SDK's response.messages hold them. */
export interface Message {
    role: string;
    content: unknown;
    [k: string]: unknown;
}
/** StepResult is what generateText's result offers the adapter. */
export interface StepResult {
    readonly content: ReadonlyArray<{
        type: string;
    }>;
    readonly response: {
        readonly messages: readonly Message[];
    };
}
/** StreamedResult is what streamText's result offers the adapter: the same, as promises settled when the stream ends. */
export interface StreamedResult {
    readonly content: PromiseLike<ReadonlyArray<{
        type: string;
    }>>;
    readonly response: PromiseLike<{
        readonly messages: readonly Message[];
    }>;
}
/** Generated is a result of generateText or of streamText. */
export type Generated = StepResult | StreamedResult;
/**
 * settle waits for a streamText result's stream to end (a generateText
 * result is settled already) and returns what the adapter reads of it.
 */
export declare function settle(result: Generated): Promise<StepResult>;
/** approvalRequests returns the tool-approval-request parts of a (settled) result. */
export declare function approvalRequests(result: StepResult): ApprovalRequestPart[];
/** requestsFor turns approval requests into one DeferredToolRequests. */
export declare function requestsFor(parts: readonly ApprovalRequestPart[]): DeferredToolRequests;
/** Answer is what to send next: append messages to the conversation and call the model again. */
export interface Answer {
    /** result.response.messages (edited arguments applied) and one tool message of approval responses. */
    messages: Message[];
    /** Each call's decision, with the receipt of an approved call. */
    outcomes: Outcome[];
    approval: Approval;
}
/**
 * answer builds the messages that answer a result's approval requests as
 * the ended request a says: the response messages, with the input of each
 * call approved with edited arguments replaced, then one tool message of
 * tool-approval-response parts. A call nobody decided is denied with a
 * reason saying no decision arrived.
 */
export declare function answer(result: StepResult, a: Approval): Answer;
/**
 * receiptFor returns the approval receipt slackbot signed for the call a
 * tool's execute runs, from the options the SDK gives it ({ toolCallId,
 * messages }): the answer's approval response carries it. Check it with
 * verifyReceipt before acting; undefined (which verifyReceipt refuses,
 * kind "missing") when the call was not approved through slackbot.
 */
export declare function receiptFor(options: {
    toolCallId: string;
    messages: readonly unknown[];
}): string | undefined;
/**
 * AskOptions are the create options, the tools' schemas (argsSchemas, e.g.
 * from argsSchemasOf(tools): approvers can then edit the calls in Slack),
 * an abort signal for the wait, and onPending.
 */
export interface AskOptions extends SubmitOptions {
    signal?: AbortSignal;
    /** onPending sees the request once its cards are posted, before the wait (e.g. to log the token). */
    onPending?: (pending: Approval) => void | Promise<void>;
}
/**
 * submit hands a result's approval requests to slackbot and returns the
 * pending request. Its idempotency key names the approval ids the SDK drew
 * for this result (random, and kept in the conversation) with the call
 * ids: the same result submitted again finds the same request, another
 * run's its own, whatever call ids its model reuses.
 */
export declare function submit(client: SlackbotClient, result: StepResult, opts?: SubmitOptions): Promise<Approval>;
/** SchemaOf is the SDK's asSchema (from "ai"): a tool's inputSchema as a JSON Schema. */
export type SchemaOf = (inputSchema: never) => {
    jsonSchema: unknown;
};
/**
 * argsSchemasOf returns the JSON Schema of each tool's input, by name, for
 * AskOptions.argsSchemas: pass the tools given to generateText and the
 * SDK's asSchema (import { asSchema } from "ai"). Members with a default
 * are required in it, so an approver's edit is what runs (the SDK refuses
 * an edit its schema would fill in). A tool whose needsApproval is a
 * function is left out (its cards offer no Edit: the SDK asks it again
 * with the edit, and an edit below its threshold would become a denial)
 * unless holdApprovals wrapped the tools.
 */
export declare function argsSchemasOf(tools: Record<string, {
    inputSchema?: unknown;
    needsApproval?: unknown;
}>, asSchema: SchemaOf): Promise<Record<string, Record<string, unknown>>>;
/**
 * ask submits the result's approval requests, waits while people decide,
 * and returns the messages to append before calling the model again;
 * undefined when the result asks for no approval.
 */
export declare function ask(client: SlackbotClient, result: Generated, opts?: AskOptions): Promise<Answer | undefined>;
/** WithApprovals is what generateWithApprovals returns. */
export interface WithApprovals<R, M> {
    /** The last result: it asks for no approval. A streamText result's stream has ended. */
    result: R;
    /** The whole conversation, the last result's response messages included. */
    messages: M[];
    /**
     * Every decided call of the run, in order, with the receipt of each
     * approved one (hand it to whoever checks it) and, for an approved one,
     * whether it ran and how it failed.
     */
    outcomes: RunOutcome[];
}
/**
 * generateWithApprovals calls generate with the conversation and, while
 * the result asks for approvals, asks slackbot and calls it again with
 * the answers appended; what became of each approved call is read from
 * the next result and reported to slackbot (reportOutcomes), and all of
 * it returned in outcomes. generate is typically
 * (messages: ModelMessage[]) => generateText({ model, tools, messages }),
 * or streamText(...) in its place.
 */
export declare function generateWithApprovals<R extends Generated, M extends Message = Message>(generate: (messages: M[]) => R | Promise<R>, messages: M[], client: SlackbotClient, opts?: AskOptions): Promise<WithApprovals<R, M>>;
/**
 * Suspended is a conversation stopped on approval requests and the
 * slackbot token deciding them: plain JSON, store it anywhere.
 */
export interface Suspended {
    token: string;
    /** The conversation so far, the result's response messages included. */
    messages: Message[];
    /** The result's tool-approval-request parts. */
    approvals: ApprovalRequestPart[];
}
/**
 * suspend hands a result's approval requests to slackbot and returns what
 * to store; no process waits. conversation is the messages the result was
 * generated from.
 */
export declare function suspend(client: SlackbotClient, result: Generated, conversation: readonly Message[], opts?: SubmitOptions): Promise<Suspended>;
/**
 * resume returns the conversation to generate from once a suspended
 * request has ended (waiting when opts.wait is set): the stored messages,
 * edited arguments applied, then the approval responses; undefined while
 * people are still deciding.
 */
export declare function resume(client: SlackbotClient, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<Message[] | undefined>;
/**
 * resumeAnswer is resume with the whole Answer: its messages are what
 * resume returns, its outcomes each call's decision and receipt; pass it
 * and the next result to reportOutcomes to tell slackbot what became of
 * the approved calls.
 */
export declare function resumeAnswer(client: SlackbotClient, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<Answer | undefined>;
