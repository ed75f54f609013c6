import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type ArgsSchemas, type Outcome, type RunOutcome, type SubmitOptions } from "./decisions.js";
export type { Outcome } from "./decisions.js";
/** ApprovalItem is what the SDK's RunToolApprovalItem offers the adapter; the adapter never writes to it. */
export interface ApprovalItem {
    readonly type?: string;
    readonly rawItem: {
        readonly name?: string;
        readonly callId?: string;
        readonly id?: string;
        readonly arguments?: string;
    };
    readonly name?: string;
    /** The agent whose tool it is: its function tools, wrapped with editable(), make the call editable in Slack. */
    readonly agent?: {
        readonly tools?: ReadonlyArray<object>;
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
    /**
     * The run's Usage (RunState.usage, the same object as the RunContext's
     * usage that every tool of the run receives): the adapter binds a call's
     * edit and receipt to its run with it.
     */
    readonly usage?: object;
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
 * random id bound to the result that stopped on them. The SDK makes a new
 * result for every run and round (0.20 also new interruption objects on
 * every read of result.interruptions), and nothing in it or in the
 * RunState is unique to the run (the trace id is shared by every run of a
 * trace and absent with tracing off; response ids come from the model), so
 * the same result submitted again finds the same request and another
 * run's get their own, whatever call ids its model reuses.
 */
export declare function idempotencyKey(result: InterruptedResult): Promise<string>;
/**
 * applyDecisions approves or rejects each interruption on state as the
 * ended request says; an interruption it does not decide (expired,
 * cancelled) is rejected with a message saying no decision arrived. A call
 * approved with edited arguments is approved only if its tool is
 * editable() (and state has its run's usage): the tool then runs with
 * exactly the edit. Otherwise it is rejected, and its outcome says it did
 * not run: neither SDK version lets a program change an approved call's
 * arguments (RunState.approve takes only alwaysApprove), and the original
 * arguments never run once a person approved others.
 */
export declare function applyDecisions<I extends ApprovalItem>(state: ApprovableState<I>, items: readonly I[], a: Approval): RunOutcome[];
/**
 * receiptOf returns the receipt slackbot signed for the approved call
 * callId of the run whose RunContext a tool received (the second argument
 * of a tool's execute), or undefined: a tool checks it with verifyReceipt
 * before acting. It works on every path (runWithApprovals, ask, resume).
 */
export declare function receiptOf(runContext: unknown, callId: string): string | undefined;
/** FunctionToolLike is what the SDK's function tool (from tool()) offers the adapter. */
export interface FunctionToolLike {
    readonly type: string;
    readonly name: string;
    readonly parameters?: unknown;
    invoke(runContext: never, input: string, details?: never): Promise<unknown>;
}
/**
 * editable returns a copy of a function tool whose calls an approver may
 * edit in Slack: the adapter sends its parameters as the call's schema
 * (the card offers Edit), and when the call was approved with edited
 * arguments the copy runs the tool with exactly them (its input, and
 * details.toolCall.arguments, which a receipt check reads) instead of the
 * model's. Give the agent the copy. Neither SDK version offers a public
 * way to approve a call with other arguments (RunState.approve takes only
 * alwaysApprove, RunToolApprovalItem.arguments is read-only, tool input
 * guardrails allow or reject), so the edit is applied where the SDK
 * publicly hands a tool its input: FunctionTool.invoke. The tool's input
 * guardrails and needsApproval saw the model's arguments; slackbot checked
 * the edit against the parameters and the route's auto_deny. Calls of a
 * tool not wrapped are never editable: no Edit button, and a program's
 * edit is refused (the call does not run).
 */
export declare function editable<T extends FunctionToolLike>(tool: T): T;
/**
 * argsSchemasOf returns the parameters (JSON Schema) of the editable()
 * function tools the interruptions' agents have, by name: sent with the
 * calls, they let an approver edit the arguments in Slack, checked
 * against them.
 */
export declare function argsSchemasOf(items: readonly ApprovalItem[]): ArgsSchemas;
/**
 * AskOptions are the create options plus an abort signal for the wait.
 * The schemas of the interruptions' editable() function tools are sent by
 * themselves (argsSchemasOf); argsSchemas adds to them or replaces them,
 * for editable() tools only.
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
/**
 * submit hands a result's interruptions to slackbot and returns the
 * pending request. A schema in argsSchemas for a tool that is not
 * editable() is an error: its card would offer an Edit the run cannot
 * apply.
 */
export declare function submit(client: SlackbotClient, result: InterruptedResult, opts?: SubmitOptions): Promise<Approval>;
/**
 * ask submits the interruptions, waits while people decide, and applies
 * the decisions to result.state. Run the agent again with result.state.
 */
export declare function ask(client: SlackbotClient, result: InterruptedResult, opts?: AskOptions): Promise<Outcome[]>;
/** Ran is what runWithApprovals returns: the last run's result and every decision on the way, in order. */
export interface Ran<R> {
    result: R;
    /** Each decided call's outcome, with its receipt when approved. */
    outcomes: Outcome[];
}
/**
 * runWithApprovals runs agent on input with run (the SDK's run), and each
 * time the run stops on interruptions asks slackbot and runs on from the
 * state, until a run ends without interruptions. Its tools get their
 * receipts with receiptOf(runContext, callId).
 */
export declare function runWithApprovals<A, R extends InterruptedResult>(run: (agent: A, input: string | R["state"]) => Promise<R>, agent: A, input: string, client: SlackbotClient, opts?: AskOptions): Promise<Ran<R>>;
/** Suspended is a stopped run: its state and the slackbot token deciding it. Store it anywhere. */
export interface Suspended {
    token: string;
    state: string;
}
/** suspend submits the interruptions and returns what to store; no process waits. */
export declare function suspend(client: SlackbotClient, result: InterruptedResult, opts?: SubmitOptions): Promise<Suspended>;
/**
 * resume restores a suspended run's state (RunState.fromString, the
 * SDK's own serialized form, unchanged) once its request has ended and
 * applies the decisions; it returns undefined while people are still
 * deciding (unless wait is set, then it waits). Run the agent again with
 * the returned state: an editable() tool runs with an approver's edit.
 */
export declare function resume<A, S extends ApprovableState>(client: SlackbotClient, runState: RunStateClass<A, S>, agent: A, saved: Suspended, opts?: {
    wait?: boolean;
    signal?: AbortSignal;
}): Promise<S | undefined>;
