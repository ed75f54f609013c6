import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type Outcome, type SubmitOptions } from "./decisions.js";
export type { Outcome } from "./decisions.js";
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
}
/** Message is a model message as the SDK's response.messages hold them. */
export interface Message {
    role: string;
    content: unknown;
    [k: string]: unknown;
}
/** StepResult is what generateText's result (or an awaited streamText's) offers the adapter. */
export interface StepResult {
    readonly content: ReadonlyArray<{
        type: string;
    }>;
    readonly response: {
        readonly messages: readonly Message[];
    };
}
/** approvalRequests returns the tool-approval-request parts of a result. */
export declare function approvalRequests(result: StepResult): ApprovalRequestPart[];
/** requestsFor turns approval requests into one DeferredToolRequests. */
export declare function requestsFor(parts: readonly ApprovalRequestPart[]): DeferredToolRequests;
/** Answer is what to send next: append messages to the conversation and call the model again. */
export interface Answer {
    /** result.response.messages (edited arguments applied) and one tool message of approval responses. */
    messages: Message[];
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
 * SDK's asSchema (import { asSchema } from "ai").
 */
export declare function argsSchemasOf(tools: Record<string, {
    inputSchema?: unknown;
}>, asSchema: SchemaOf): Promise<Record<string, Record<string, unknown>>>;
/**
 * ask submits the result's approval requests, waits while people decide,
 * and returns the messages to append before calling the model again;
 * undefined when the result asks for no approval.
 */
export declare function ask(client: SlackbotClient, result: StepResult, opts?: AskOptions): Promise<Answer | undefined>;
/**
 * generateWithApprovals calls generate with the conversation and, while
 * the result asks for approvals, asks slackbot and calls it again with
 * the answers appended. generate is typically
 * (messages) => generateText({ model, tools, messages }).
 */
export declare function generateWithApprovals<R extends StepResult>(generate: (messages: Message[]) => Promise<R>, messages: Message[], client: SlackbotClient, opts?: AskOptions): Promise<{
    result: R;
    messages: Message[];
}>;
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
export declare function suspend(client: SlackbotClient, result: StepResult, conversation: readonly Message[], opts?: SubmitOptions): Promise<Suspended>;
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
