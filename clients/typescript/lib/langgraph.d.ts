import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type Outcome, type RunOutcome, type SubmitOptions } from "./decisions.js";
import { type Interrupt, type PendingToolCall, type PendingToolCalls, type Reading } from "./interrupts.js";
export type { Outcome } from "./decisions.js";
export { type Asked, type Decisions, type HITLDecision, type HITLDecisionType, type HITLRequest, type HITLResponse, type HumanInterrupt, type HumanInterruptConfig, type HumanResponse, type Interrupt, InterruptError, type InterruptErrorKind, type PendingToolCall, type PendingToolCalls, type Reading, type ToolDecision, } from "./interrupts.js";
/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export declare function pendingToolCalls(calls: readonly PendingToolCall[]): PendingToolCalls;
/** InterruptedResult is invoke's result: the state, plus __interrupt__ when interrupted. */
export interface InterruptedResult {
    __interrupt__?: Interrupt[];
}
/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result (readRound reads every kind). */
export declare function pendingInterrupts(result: object): Array<Interrupt & {
    value: PendingToolCalls;
}>;
/** requestsFor turns PendingToolCalls interrupts' calls into one DeferredToolRequests. */
export declare function requestsFor(interrupts: ReadonlyArray<{
    value: PendingToolCalls;
}>): DeferredToolRequests;
/**
 * readRound reads every interrupt of an invoke result (none when it is not
 * interrupted), or throws InterruptError naming the first one this adapter
 * does not answer. callIds are the ids a stored round's calls were
 * submitted under (Suspended.call_ids); without them a HITLRequest's calls
 * take their tool call ids from the result's messages, when it stopped on
 * that one interrupt.
 */
export declare function readRound(result: object, opts?: {
    argsSchemas?: SubmitOptions["argsSchemas"];
    callIds?: ReadonlyArray<readonly string[]>;
}): Reading[];
/** callIdsOf returns the slackbot call ids of each interrupt's calls, as submit gives them. */
export declare function callIdsOf(round: readonly Reading[]): string[][];
/**
 * answerRound is the Command resume value answering the round as the
 * ended request a decided it: the one interrupt's own answer, or a map
 * from interrupt id to answers for several. It throws InterruptError
 * (unknown_call) when a call is not one of a's, so that a wrong token or
 * call id never answers a call as undecided, and (decision_not_allowed)
 * when a decision breaks the interrupt's rules.
 */
export declare function answerRound(round: readonly Reading[], a: Approval): unknown;
/**
 * resumeValue is answerRound for interrupts read again: callIds are the
 * ids their calls were submitted under (Suspended.call_ids), needed for a
 * HITLRequest whose calls took their ids from the agent's messages.
 */
export declare function resumeValue(interrupts: readonly Interrupt[], a: Approval, callIds?: ReadonlyArray<readonly string[]>): unknown;
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
    /**
     * onOutcomes sees each round's decisions, with the receipts of approved
     * calls, before the graph resumes: keep them by call id (a LangChain
     * tool's own is config.toolCall.id) for the tools to check with
     * verifyReceipt before they act.
     */
    onOutcomes?: (outcomes: RunOutcome[]) => void | Promise<void>;
}
/** roundOutcomes is what became of every call of a decided round. */
export declare function roundOutcomes(round: readonly Reading[], a: Approval): Outcome[];
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
 * the result is interrupted, asks slackbot about every interrupt's calls
 * and resumes the thread with new Command({ resume }) carrying the answers.
 * An interrupt it does not answer, or a decision the interrupt's rules do
 * not allow, throws InterruptError and leaves the thread interrupted. The
 * graph needs a checkpointer (MemorySaver or a durable one).
 */
export declare function invokeWithApprovals<R extends object>(graph: Graph<R>, input: unknown, config: {
    configurable: {
        thread_id: string;
    };
} & Record<string, unknown>, client: SlackbotClient, Command: CommandClass, opts?: AskOptions): Promise<R>;
/** Suspended is an interrupted thread and the slackbot token deciding it: plain JSON, store it anywhere. */
export interface Suspended {
    token: string;
    thread_id: string;
    interrupts: Interrupt[];
    /** The slackbot call ids of each interrupt's calls (absent in rounds stored before it was added: each call's own id). */
    call_ids?: string[][];
}
/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export declare function suspend(client: SlackbotClient, result: object, threadId: string, opts?: SubmitOptions): Promise<Suspended>;
/**
 * resume resumes a suspended thread with the decisions once its request
 * has ended (waiting when opts.wait is set), and returns invoke's result;
 * undefined while people are still deciding. A stored interrupt it does
 * not answer throws InterruptError before anything is read.
 */
export declare function resume<R extends object>(client: SlackbotClient, graph: Graph<R>, Command: CommandClass, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<R | undefined>;
