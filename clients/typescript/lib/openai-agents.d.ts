import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type ArgsSchemas, type Outcome, type SubmitOptions } from "./decisions.js";
export type { Outcome } from "./decisions.js";
/** ApprovalItem is what the SDK's RunToolApprovalItem offers the adapter. */
export interface ApprovalItem {
    readonly type?: string;
    rawItem: {
        name?: string;
        callId?: string;
        id?: string;
        arguments?: string;
        [k: string]: unknown;
    };
    readonly name?: string;
    /** The agent whose tool it is: its function tools' parameters make the call editable in Slack. */
    readonly agent?: {
        readonly tools?: ReadonlyArray<{
            type?: string;
            name?: string;
            parameters?: unknown;
        }>;
    };
}
/** ApprovableState is what the SDK's RunState offers the adapter. */
export interface ApprovableState<I extends ApprovalItem = ApprovalItem> {
    approve(item: I, options?: {
        alwaysApprove?: boolean;
    }): void;
    reject(item: I, options?: {
        alwaysReject?: boolean;
        message?: string;
    }): void;
    getInterruptions(): I[];
    toString(): string;
}
/** InterruptedResult is what the SDK's RunResult offers the adapter. */
export interface InterruptedResult<S extends ApprovableState = ApprovableState> {
    readonly interruptions?: ApprovalItem[];
    readonly state: S;
}
/** RunStateClass is the SDK's RunState class (for fromString). */
export interface RunStateClass<A, S extends ApprovableState> {
    fromString(agent: A, serialized: string): Promise<S>;
}
/** callId is the id slackbot knows an interruption by. */
export declare function callId(item: ApprovalItem): string;
/** requestsFor turns interruptions into one DeferredToolRequests. */
export declare function requestsFor(items: readonly ApprovalItem[]): DeferredToolRequests;
/**
 * idempotencyKey names one round of interruptions: their call ids and a
 * random id bound to each interruption object. The SDK makes new
 * interruption objects for every run and round, and nothing in them or in
 * the RunState is unique to the run (the trace id is shared by every run
 * of a trace and absent with tracing off; response ids come from the
 * model), so the same interruptions submitted again find the same request
 * and another run's get their own, whatever call ids its model reuses.
 */
export declare function idempotencyKey(items: readonly ApprovalItem[]): Promise<string>;
/**
 * applyDecisions approves or rejects each interruption on state as the
 * ended request says; an interruption it does not decide (expired,
 * cancelled) is rejected with a message saying no decision arrived.
 * Edited arguments replace the call's arguments before it is approved.
 */
export declare function applyDecisions<I extends ApprovalItem>(state: ApprovableState<I>, items: readonly I[], a: Approval): Outcome[];
/**
 * argsSchemasOf returns the parameters (JSON Schema) of the function tools
 * the interruptions' agents have, by name: sent with the calls, they let
 * an approver edit the arguments in Slack, checked against them.
 */
export declare function argsSchemasOf(items: readonly ApprovalItem[]): ArgsSchemas;
/**
 * AskOptions are the create options plus an abort signal for the wait.
 * The schemas of the interruptions' function tools are sent by themselves
 * (argsSchemasOf); argsSchemas adds to them or replaces them.
 */
export interface AskOptions extends SubmitOptions {
    signal?: AbortSignal;
    /**
     * onPending sees the request once its cards are posted, before the wait:
     * log the token, or let whoever computes a call's result post it with
     * client.results(token, ...).
     */
    onPending?: (pending: Approval) => void | Promise<void>;
}
/** submit hands a result's interruptions to slackbot and returns the pending request. */
export declare function submit(client: SlackbotClient, items: readonly ApprovalItem[], opts?: SubmitOptions): Promise<Approval>;
/**
 * ask submits the interruptions, waits while people decide, and applies
 * the decisions to result.state. Run the agent again with result.state.
 */
export declare function ask(client: SlackbotClient, result: InterruptedResult, opts?: AskOptions): Promise<Outcome[]>;
/**
 * runWithApprovals runs agent on input with run (the SDK's run), and each
 * time the run stops on interruptions asks slackbot and runs on from the
 * state, until a run ends without interruptions.
 */
export declare function runWithApprovals<A, R extends InterruptedResult>(run: (agent: A, input: string | R["state"]) => Promise<R>, agent: A, input: string, client: SlackbotClient, opts?: AskOptions): Promise<R>;
/** Suspended is a stopped run: its state and the slackbot token deciding it. Store it anywhere. */
export interface Suspended {
    token: string;
    state: string;
}
/** suspend submits the interruptions and returns what to store; no process waits. */
export declare function suspend(client: SlackbotClient, result: InterruptedResult, opts?: SubmitOptions): Promise<Suspended>;
/**
 * resume restores a suspended run's state (RunState.fromString) once its
 * request has ended and applies the decisions; it returns undefined while
 * people are still deciding (unless wait is set, then it waits). Run the
 * agent again with the returned state.
 */
export declare function resume<A, S extends ApprovableState>(client: SlackbotClient, runState: RunStateClass<A, S>, agent: A, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<S | undefined>;
/**
 * withEditedArguments rewrites, in a serialized RunState, the arguments of
 * every function call that was approved with edited arguments. A restored
 * state keeps its own copy of each call for running the tools, apart from
 * the interruption items, so editing the items alone would not reach the
 * tool; the serialized form is the SDK's public, versioned one.
 */
export declare function withEditedArguments(serialized: string, a: Approval): string;
