import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type SubmitOptions } from "./decisions.js";
export type { Outcome } from "./decisions.js";
/** PendingToolCall is a LangChain tool call: {id, name, args}. */
export interface PendingToolCall {
    id: string;
    name: string;
    args: Record<string, unknown>;
}
/** PendingToolCalls is the interrupt value this adapter answers. */
export interface PendingToolCalls {
    type: "slackbot/tool-approvals";
    tool_calls: PendingToolCall[];
}
/** ToolDecision is the decision on one call: what interrupt() returns for it, by call id. */
export type ToolDecision = {
    type: "approve";
    args: Record<string, unknown>;
    edited: boolean;
    decidedBy?: string;
} | {
    type: "reject";
    message: string;
    decidedBy?: string;
};
/** Decisions are the resume value of one PendingToolCalls interrupt. */
export type Decisions = Record<string, ToolDecision>;
/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export declare function pendingToolCalls(calls: readonly PendingToolCall[]): PendingToolCalls;
/** Interrupt is LangGraph's interrupt record ({id, value}) as invoke's __interrupt__ holds it. */
export interface Interrupt {
    id?: string;
    value?: unknown;
}
/** InterruptedResult is invoke's result: the state, plus __interrupt__ when interrupted. */
export interface InterruptedResult {
    __interrupt__?: Interrupt[];
}
/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result. */
export declare function pendingInterrupts(result: object): Array<Interrupt & {
    value: PendingToolCalls;
}>;
/** requestsFor turns the interrupts' calls into one DeferredToolRequests. */
export declare function requestsFor(interrupts: ReadonlyArray<{
    value: PendingToolCalls;
}>): DeferredToolRequests;
/**
 * resumeValue is the Command resume value answering the interrupts as the
 * ended request a says: the Decisions themselves for one interrupt, or a
 * map from interrupt id to Decisions for several. A call nobody decided
 * is rejected with a message saying no decision arrived.
 */
export declare function resumeValue(interrupts: ReadonlyArray<Interrupt & {
    value: PendingToolCalls;
}>, a: Approval): unknown;
/** CommandClass is LangGraph's Command class. */
export type CommandClass = new (params: {
    resume: unknown;
}) => unknown;
/** Graph is what a compiled LangGraph graph offers the adapter. */
export interface Graph<R extends object> {
    invoke(input: unknown, config: {
        configurable: {
            thread_id: string;
        };
    } & Record<string, unknown>): Promise<R>;
}
/**
 * AskOptions are the create options, the tools' schemas (argsSchemas:
 * approvers can then edit the calls in Slack), an abort signal, and
 * onPending.
 */
export interface AskOptions extends SubmitOptions {
    signal?: AbortSignal;
    /** onPending sees the request once its cards are posted, before the wait (e.g. to store the token). */
    onPending?: (pending: Approval) => void | Promise<void>;
}
/** ThreadOptions are the create options plus the thread the result is of. */
export interface ThreadOptions extends SubmitOptions {
    /** The thread_id the graph ran in (invokeWithApprovals and suspend pass it). */
    threadId?: string;
}
/**
 * submit hands the result's pending calls to slackbot and returns the
 * pending request. Its idempotency key names the thread, the interrupts'
 * ids and the call ids: LangGraph derives an interrupt's id from its task,
 * which is new in every run and round (a checkpoint's), and keeps it in the
 * checkpoint, so the same interrupts submitted again (from any process)
 * find the same request, and another run's get their own, whatever call
 * ids its model reuses.
 */
export declare function submit(client: SlackbotClient, result: object, opts?: ThreadOptions): Promise<Approval>;
/**
 * invokeWithApprovals invokes graph on input in config's thread and, while
 * the result is interrupted for tool approvals, asks slackbot and resumes
 * the thread with new Command({ resume }) carrying the decisions. The
 * graph needs a checkpointer (MemorySaver or a durable one).
 */
export declare function invokeWithApprovals<R extends object>(graph: Graph<R>, input: unknown, config: {
    configurable: {
        thread_id: string;
    };
} & Record<string, unknown>, client: SlackbotClient, Command: CommandClass, opts?: AskOptions): Promise<R>;
/** Suspended is an interrupted thread and the slackbot token deciding it. Store it anywhere. */
export interface Suspended {
    token: string;
    thread_id: string;
    interrupts: Array<Interrupt & {
        value: PendingToolCalls;
    }>;
}
/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export declare function suspend(client: SlackbotClient, result: object, threadId: string, opts?: SubmitOptions): Promise<Suspended>;
/**
 * resume resumes a suspended thread with the decisions once its request
 * has ended (waiting when opts.wait is set), and returns invoke's result;
 * undefined while people are still deciding.
 */
export declare function resume<R extends object>(client: SlackbotClient, graph: Graph<R>, Command: CommandClass, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<R | undefined>;
