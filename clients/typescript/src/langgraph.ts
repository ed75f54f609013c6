// The adapter for LangGraph.js (@langchain/langgraph): a node calls
// interrupt(pendingToolCalls(calls)) with the tool calls it may not run
// alone; the adapter finds those interrupts in the graph's result, submits
// every call as one slackbot request, and when people have decided resumes
// the thread with Command({ resume }) carrying one ToolDecision per call
// (edited arguments included). The node gets the decisions as interrupt()'s
// return value and runs only the approved calls, with decision.args.
// LangGraph re-runs a node from its start on resume, so tools run after
// the interrupt() call, never before. No runtime dependency on LangGraph:
// the Command class is passed in.

import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type Outcome, type SubmitOptions, idempotencyKeyOf, nonceOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";

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
export type ToolDecision =
  | { type: "approve"; args: Record<string, unknown>; edited: boolean; decidedBy?: string }
  | { type: "reject"; message: string; decidedBy?: string };

/** Decisions are the resume value of one PendingToolCalls interrupt. */
export type Decisions = Record<string, ToolDecision>;

/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export function pendingToolCalls(calls: readonly PendingToolCall[]): PendingToolCalls {
  return { type: "slackbot/tool-approvals", tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })) };
}

/** Interrupt is LangGraph's interrupt record ({id, value}) as invoke's __interrupt__ holds it. */
export interface Interrupt {
  id?: string;
  value?: unknown;
}

/** InterruptedResult is invoke's result: the state, plus __interrupt__ when interrupted. */
export interface InterruptedResult {
  __interrupt__?: Interrupt[];
}

function isPending(v: unknown): v is PendingToolCalls {
  return (v as PendingToolCalls | undefined)?.type === "slackbot/tool-approvals" && Array.isArray((v as PendingToolCalls).tool_calls);
}

/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result. */
export function pendingInterrupts(result: object): Array<Interrupt & { value: PendingToolCalls }> {
  return ((result as InterruptedResult).__interrupt__ ?? []).filter((i): i is Interrupt & { value: PendingToolCalls } => isPending(i.value));
}

/** requestsFor turns the interrupts' calls into one DeferredToolRequests. */
export function requestsFor(interrupts: ReadonlyArray<{ value: PendingToolCalls }>): DeferredToolRequests {
  return {
    approvals: interrupts.flatMap((i) => i.value.tool_calls.map((c) => ({ tool_name: c.name, args: toolArgs(c.args), tool_call_id: c.id }))),
  };
}

function decision(call: PendingToolCall, o: Outcome): ToolDecision {
  if (!o.approved) return { type: "reject", message: o.message ?? "The tool call was denied.", decidedBy: o.decidedBy };
  if (o.overrideArgs == null) return { type: "approve", args: call.args, edited: false, decidedBy: o.decidedBy };
  const edited = toolArgs(o.overrideArgs);
  const args = edited !== null && typeof edited === "object" ? edited : call.args;
  return { type: "approve", args, edited: true, decidedBy: o.decidedBy };
}

/**
 * resumeValue is the Command resume value answering the interrupts as the
 * ended request a says: the Decisions themselves for one interrupt, or a
 * map from interrupt id to Decisions for several. A call nobody decided
 * is rejected with a message saying no decision arrived.
 */
export function resumeValue(interrupts: ReadonlyArray<Interrupt & { value: PendingToolCalls }>, a: Approval): unknown {
  const perInterrupt = interrupts.map((i) => {
    const d: Decisions = {};
    for (const c of i.value.tool_calls) d[c.id] = decision(c, outcomeOf(c.id, a.results?.approvals?.[c.id], a));
    return d;
  });
  if (perInterrupt.length === 1) return perInterrupt[0];
  return Object.fromEntries(interrupts.map((i, n) => [i.id, perInterrupt[n]]));
}

/** CommandClass is LangGraph's Command class. */
export type CommandClass = new (params: { resume: unknown }) => unknown;

/** Graph is what a compiled LangGraph graph offers the adapter. */
export interface Graph<R extends object> {
  invoke(input: unknown, config: { configurable: { thread_id: string } } & Record<string, unknown>): Promise<R>;
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
export async function submit(client: SlackbotClient, result: object, opts: ThreadOptions = {}): Promise<Approval> {
  const { argsSchemas, threadId, ...create } = opts;
  const interrupts = pendingInterrupts(result);
  const run = interrupts.map((i) => (i.id ? `interrupt:${i.id}` : `object:${nonceOf(i)}`));
  if (threadId !== undefined) run.push(`thread:${threadId}`);
  const ids = interrupts.flatMap((i) => i.value.tool_calls.map((c) => c.id));
  return client.create(withArgsSchemas(requestsFor(interrupts), argsSchemas), { idempotency_key: await idempotencyKeyOf("langgraph", run, ids), ...create });
}

/**
 * invokeWithApprovals invokes graph on input in config's thread and, while
 * the result is interrupted for tool approvals, asks slackbot and resumes
 * the thread with new Command({ resume }) carrying the decisions. The
 * graph needs a checkpointer (MemorySaver or a durable one).
 */
export async function invokeWithApprovals<R extends object>(
  graph: Graph<R>,
  input: unknown,
  config: { configurable: { thread_id: string } } & Record<string, unknown>,
  client: SlackbotClient,
  Command: CommandClass,
  opts: AskOptions = {},
): Promise<R> {
  const { signal, onPending, ...create } = opts;
  let result = await graph.invoke(input, config);
  for (;;) {
    const interrupts = pendingInterrupts(result);
    if (interrupts.length === 0) return result;
    const pending = await submit(client, result, { ...create, threadId: config.configurable.thread_id });
    await onPending?.(pending);
    const done = await client.wait(pending.token, { signal });
    result = await graph.invoke(new Command({ resume: resumeValue(interrupts, done) }), config);
  }
}

/** Suspended is an interrupted thread and the slackbot token deciding it. Store it anywhere. */
export interface Suspended {
  token: string;
  thread_id: string;
  interrupts: Array<Interrupt & { value: PendingToolCalls }>;
}

/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export async function suspend(client: SlackbotClient, result: object, threadId: string, opts: SubmitOptions = {}): Promise<Suspended> {
  const a = await submit(client, result, { ...opts, threadId });
  return { token: a.token, thread_id: threadId, interrupts: pendingInterrupts(result) };
}

/**
 * resume resumes a suspended thread with the decisions once its request
 * has ended (waiting when opts.wait is set), and returns invoke's result;
 * undefined while people are still deciding.
 */
export async function resume<R extends object>(
  client: SlackbotClient,
  graph: Graph<R>,
  Command: CommandClass,
  saved: Suspended,
  opts: { wait?: boolean; signal?: AbortSignal } = {},
): Promise<R | undefined> {
  const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
  if (a.status === "pending") return undefined;
  return graph.invoke(new Command({ resume: resumeValue(saved.interrupts, a) }), { configurable: { thread_id: saved.thread_id } });
}
