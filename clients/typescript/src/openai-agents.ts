// The adapter for the OpenAI Agents SDK (@openai/agents, 0.14.3 up to
// 0.20): a run that stops on tools with needsApproval hands its
// interruptions to slackbot as one request; when people decide in Slack,
// each interruption is approved or rejected with the reason through the
// SDK's public RunState.approve/reject, and the run goes on. An approver's
// edit runs only through a tool wrapped with editable() (see there); the
// adapter never writes to the SDK's items or serialized state. It uses the
// SDK through the few members it needs (structural types), so this package
// has no runtime dependency on it and serves both versions.

import type { Approval, DeferredToolRequests, SlackbotClient, ToolCall } from "./client.js";
import { canonicalJson } from "./canonical.js";
import { type ArgsSchemas, type Outcome, type RunOutcome, type SubmitOptions, idempotencyKeyOf, nonceOf, outcomeOf, reportUnrun, toolArgs, withArgsSchemas } from "./decisions.js";

export type { Outcome } from "./decisions.js";

/** ApprovalItem is what the SDK's RunToolApprovalItem offers the adapter; the adapter never writes to it. */
export interface ApprovalItem {
  readonly type?: string;
  readonly rawItem: { readonly name?: string; readonly callId?: string; readonly id?: string; readonly arguments?: string };
  readonly name?: string;
  /** The agent whose tool it is: its function tools, wrapped with editable(), make the call editable in Slack. */
  readonly agent?: { readonly tools?: ReadonlyArray<object> };
}

/** ApprovableState is what the SDK's RunState offers the adapter. */
export interface ApprovableState<I extends ApprovalItem = ApprovalItem> {
  approve(item: I, options?: { alwaysApprove?: boolean }): void;
  reject(item: I, options?: { alwaysReject?: boolean; message?: string }): void;
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
export function callId(item: ApprovalItem): string {
  const id = item.rawItem.callId ?? item.rawItem.id;
  if (!id) throw new TypeError("slackbot: an interruption has no callId");
  return id;
}

function toolName(item: ApprovalItem): string {
  return item.name ?? item.rawItem.name ?? "unknown";
}

function toolCall(item: ApprovalItem): ToolCall {
  return { tool_name: toolName(item), args: toolArgs(item.rawItem.arguments), tool_call_id: callId(item) };
}

/** requestsFor turns interruptions into one DeferredToolRequests. */
export function requestsFor(items: readonly ApprovalItem[]): DeferredToolRequests {
  return { approvals: items.map(toolCall) };
}

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
export function idempotencyKey(result: InterruptedResult): Promise<string> {
  return idempotencyKeyOf("openai-agents", [nonceOf(result)], (result.interruptions ?? []).map(callId));
}

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
export function applyDecisions<I extends ApprovalItem>(state: ApprovableState<I>, items: readonly I[], a: Approval): RunOutcome[] {
  return items.map((item) => {
    const o = outcomeOf(callId(item), a.results?.approvals?.[callId(item)], a);
    if (!o.approved) {
      state.reject(item, { message: o.message });
      return o;
    }
    const edited = editOf(item, o.overrideArgs);
    const run = runOf(state.usage);
    if (edited !== undefined && (!run || !isEditable(toolOf(item)))) {
      const why = run ? "its tool is not wrapped with editable()" : "the run state has no usage to bind the edit to";
      const message = `The approver edited the arguments of this ${toolName(item)} call, which cannot run with edited arguments here (${why}), so it did not run.`;
      state.reject(item, { message });
      // slackbot recorded an approval: ran: false lets ask and resume
      // tell it the call did not run (reportUnrun), so the card says so.
      return { callId: o.callId, approved: false, message, decidedBy: o.decidedBy, ran: false, error: message };
    }
    run?.set(o.callId, { tool: toolName(item), original: item.rawItem.arguments, edited, receipt: o.receipt });
    if (edited !== undefined) remember(unrunKey(toolName(item), o.callId, item.rawItem.arguments), state.usage!);
    state.approve(item);
    return o;
  });
}

/**
 * editOf returns the edited arguments (JSON text) an approval carries for
 * item, or undefined when it carries none or the same arguments the model
 * gave (canonically), which need no edit.
 */
function editOf(item: ApprovalItem, overrideArgs: unknown): string | undefined {
  if (overrideArgs == null) return undefined;
  const edited = typeof overrideArgs === "string" ? overrideArgs : JSON.stringify(overrideArgs);
  try {
    if (canonicalJson(toolArgs(edited)) === canonicalJson(toolArgs(item.rawItem.arguments))) return undefined;
  } catch {
    // Arguments canonicalJson refuses are compared no further: an edit.
  }
  return edited;
}

/** Decided is what the adapter keeps of one approved call for its run's tools. */
interface Decided {
  tool: string;
  /** The arguments the model gave and the approvers saw. */
  original: string | undefined;
  /** The edited arguments the call runs with instead, if any. */
  edited: string | undefined;
  receipt: string | undefined;
}

// Each run's approved calls, by call id, under the run's Usage: the one
// object the RunState (state.usage) and every tool invocation of the run
// (runContext.usage) share, in 0.14 and 0.20 alike, so an edit or a receipt
// reaches only the run it was decided for, however the model reuses call ids.
const runs = new WeakMap<object, Map<string, Decided>>();

// Edited calls not yet run, by tool, call id and the model's arguments,
// with the run they were decided for: an invocation of the same call that
// finds no decision in its own run (a nested agent's run, with a Usage of
// its own) is refused rather than run with the arguments the person
// replaced. An entry goes once its edit ran or its run is gone.
const unrun = new Map<string, WeakRef<object>>();

function unrunKey(tool: string, id: string, original: string | undefined): string {
  return JSON.stringify([tool, id, original ?? null]);
}

function remember(key: string, usage: object): void {
  for (const [k, r] of unrun) if (r.deref() === undefined) unrun.delete(k);
  unrun.set(key, new WeakRef(usage));
}

function runOf(usage: unknown): Map<string, Decided> | undefined {
  if (usage === null || typeof usage !== "object") return undefined;
  let m = runs.get(usage);
  if (!m) runs.set(usage, (m = new Map()));
  return m;
}

function decidedIn(runContext: unknown, id: string): Decided | undefined {
  const usage = (runContext as { usage?: unknown } | null | undefined)?.usage;
  return usage !== null && typeof usage === "object" ? runs.get(usage)?.get(id) : undefined;
}

/**
 * receiptOf returns the receipt slackbot signed for the approved call
 * callId of the run whose RunContext a tool received (the second argument
 * of a tool's execute), or undefined: a tool checks it with verifyReceipt
 * before acting. It works on every path (runWithApprovals, ask, resume).
 */
export function receiptOf(runContext: unknown, callId: string): string | undefined {
  return decidedIn(runContext, callId)?.receipt;
}

/** FunctionToolLike is what the SDK's function tool (from tool()) offers the adapter. */
export interface FunctionToolLike {
  readonly type: string;
  readonly name: string;
  readonly parameters?: unknown;
  invoke(runContext: never, input: string, details?: never): Promise<unknown>;
}

interface ToolDetails {
  toolCall?: { callId?: string; arguments?: string };
}

type Invoke = (runContext: unknown, input: string, details?: ToolDetails) => Promise<unknown>;

const editables = new WeakSet<object>();

function isEditable(tool: object | undefined): boolean {
  return tool !== undefined && editables.has(tool);
}

function toolOf(item: ApprovalItem): object | undefined {
  const name = toolName(item);
  return item.agent?.tools?.find((t) => (t as { type?: unknown }).type === "function" && (t as { name?: unknown }).name === name);
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
export function editable<T extends FunctionToolLike>(tool: T): T {
  if (editables.has(tool)) return tool;
  if (tool.type !== "function") throw new TypeError(`slackbot: editable() takes a function tool; ${tool.name} is a ${tool.type} tool`);
  const invoke = (tool.invoke as unknown as Invoke).bind(tool);
  const copy = Object.create(Object.getPrototypeOf(tool), Object.getOwnPropertyDescriptors(tool)) as T;
  const edited: Invoke = async (runContext, input, details) => {
    const id = details?.toolCall?.callId;
    const d = id === undefined ? undefined : decidedIn(runContext, id);
    if (d?.edited === undefined) {
      const key = unrunKey(tool.name, id ?? "", input);
      if (unrun.get(key)?.deref() !== undefined) {
        throw new Error(`slackbot: ${tool.name} call ${id} was approved with edited arguments in another run than this one; it did not run`);
      }
      unrun.delete(key);
      return invoke(runContext, input, details);
    }
    if (d.tool !== tool.name || d.original !== input) {
      throw new Error(`slackbot: ${tool.name} call ${id} was approved with edited arguments for other arguments than the ones it ran with; it did not run`);
    }
    unrun.delete(unrunKey(tool.name, id!, input));
    return invoke(runContext, d.edited, { ...details, toolCall: { ...details?.toolCall, arguments: d.edited } });
  };
  Object.defineProperty(copy, "invoke", { value: edited, writable: true, enumerable: true, configurable: true });
  editables.add(copy);
  return copy;
}

/**
 * argsSchemasOf returns the parameters (JSON Schema) of the editable()
 * function tools the interruptions' agents have, by name: sent with the
 * calls, they let an approver edit the arguments in Slack, checked
 * against them.
 */
export function argsSchemasOf(items: readonly ApprovalItem[]): ArgsSchemas {
  const out: ArgsSchemas = {};
  for (const item of items) {
    const t = toolOf(item) as { parameters?: unknown } | undefined;
    if (t && isEditable(t) && t.parameters !== null && typeof t.parameters === "object") out[toolName(item)] = t.parameters as Record<string, unknown>;
  }
  return out;
}

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
export async function submit(client: SlackbotClient, result: InterruptedResult, opts: SubmitOptions = {}): Promise<Approval> {
  const items = result.interruptions ?? [];
  const { argsSchemas, ...create } = opts;
  const refused = items.filter((i) => argsSchemas && Object.hasOwn(argsSchemas, toolName(i)) && !isEditable(toolOf(i))).map(toolName);
  if (refused.length > 0) {
    throw new TypeError(`slackbot: argsSchemas names ${[...new Set(refused)].join(", ")}, whose tool is not wrapped with editable(): its edits could not run`);
  }
  const requests = withArgsSchemas(requestsFor(items), { ...argsSchemasOf(items), ...argsSchemas });
  return client.create(requests, { idempotency_key: await idempotencyKey(result), ...create });
}

/**
 * ask submits the interruptions, waits while people decide, and applies
 * the decisions to result.state. Run the agent again with result.state.
 */
export async function ask(client: SlackbotClient, result: InterruptedResult, opts: AskOptions = {}): Promise<Outcome[]> {
  const items = result.interruptions ?? [];
  if (items.length === 0) return [];
  const { signal, onPending, ...create } = opts;
  const pending = await submit(client, result, create);
  await onPending?.(pending);
  const done = await client.wait(pending.token, { signal });
  const outcomes = applyDecisions(result.state, items, done);
  await reportUnrun(client, done.token, outcomes);
  return outcomes;
}

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
export async function runWithApprovals<A, R extends InterruptedResult>(
  run: (agent: A, input: string | R["state"]) => Promise<R>,
  agent: A,
  input: string,
  client: SlackbotClient,
  opts: AskOptions = {},
): Promise<Ran<R>> {
  const outcomes: Outcome[] = [];
  let result = await run(agent, input);
  while ((result.interruptions?.length ?? 0) > 0) {
    outcomes.push(...(await ask(client, result, opts)));
    result = await run(agent, result.state);
  }
  return { result, outcomes };
}

/** Suspended is a stopped run: its state and the slackbot token deciding it. Store it anywhere. */
export interface Suspended {
  token: string;
  state: string;
}

/** suspend submits the interruptions and returns what to store; no process waits. */
export async function suspend(client: SlackbotClient, result: InterruptedResult, opts: SubmitOptions = {}): Promise<Suspended> {
  const a = await submit(client, result, opts);
  return { token: a.token, state: result.state.toString() };
}

/**
 * resume restores a suspended run's state (RunState.fromString, the
 * SDK's own serialized form, unchanged) once its request has ended and
 * applies the decisions; it returns undefined while people are still
 * deciding (unless wait is set, then it waits). Run the agent again with
 * the returned state: an editable() tool runs with an approver's edit.
 */
export async function resume<A, S extends ApprovableState>(
  client: SlackbotClient,
  runState: RunStateClass<A, S>,
  agent: A,
  saved: Suspended,
  opts: { wait?: boolean; signal?: AbortSignal } = {},
): Promise<S | undefined> {
  const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
  if (a.status === "pending") return undefined;
  const state = await runState.fromString(agent, saved.state);
  await reportUnrun(client, a.token, applyDecisions(state, state.getInterruptions(), a));
  return state;
}
