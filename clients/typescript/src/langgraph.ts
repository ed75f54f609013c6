// The adapter for LangGraph.js (@langchain/langgraph) and LangChain v1's
// createAgent: it finds the interrupts in the graph's result, submits all
// their tool calls as one slackbot request, and when people have decided
// resumes the thread with Command({ resume }) carrying the answer each
// interrupt expects. It answers three kinds (src/interrupts.ts): its own
// interrupt(pendingToolCalls(calls)), whose node gets one ToolDecision per
// call id (edited arguments included) and runs only the approved calls;
// LangChain's humanInTheLoopMiddleware (HITLRequest → HITLResponse); and
// LangGraph's prebuilt HumanInterrupt[] (→ HumanResponse[]). Any other
// interrupt is an InterruptError naming it, never a silent return.
// LangGraph re-runs a node from its start on resume, so tools run after
// the interrupt() call, never before. No runtime dependency on LangGraph:
// the Command class is passed in.

import type { Approval, CreateOptions, DeferredToolRequests, SlackbotClient } from "./client.js";
import { ArgsSchemaKey, type Outcome, type RunOutcome, type SubmitOptions, idempotencyKeyOf, nonceOf, outcomeOf, reportUnrun, toolArgs } from "./decisions.js";
import { type Interrupt, InterruptError, type PendingToolCall, type PendingToolCalls, type Reading, isPending, readInterrupt } from "./interrupts.js";

export type { Outcome } from "./decisions.js";
export {
  type Asked,
  type Decisions,
  type HITLDecision,
  type HITLDecisionType,
  type HITLRequest,
  type HITLResponse,
  type HumanInterrupt,
  type HumanInterruptConfig,
  type HumanResponse,
  type Interrupt,
  InterruptError,
  type InterruptErrorKind,
  type PendingToolCall,
  type PendingToolCalls,
  type Reading,
  type ToolDecision,
} from "./interrupts.js";

/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export function pendingToolCalls(calls: readonly PendingToolCall[]): PendingToolCalls {
  return { type: "slackbot/tool-approvals", tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })) };
}

/** InterruptedResult is invoke's result: the state, plus __interrupt__ when interrupted. */
export interface InterruptedResult {
  __interrupt__?: Interrupt[];
}

/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result (readRound reads every kind). */
export function pendingInterrupts(result: object): Array<Interrupt & { value: PendingToolCalls }> {
  return ((result as InterruptedResult).__interrupt__ ?? []).filter((i): i is Interrupt & { value: PendingToolCalls } => isPending(i.value));
}

/** requestsFor turns PendingToolCalls interrupts' calls into one DeferredToolRequests. */
export function requestsFor(interrupts: ReadonlyArray<{ value: PendingToolCalls }>): DeferredToolRequests {
  return {
    approvals: interrupts.flatMap((i) => i.value.tool_calls.map((c) => ({ tool_name: c.name, args: toolArgs(c.args), tool_call_id: c.id }))),
  };
}

/**
 * readRound reads every interrupt of an invoke result (none when it is not
 * interrupted), or throws InterruptError naming the first one this adapter
 * does not answer. callIds are the ids a stored round's calls were
 * submitted under (Suspended.call_ids); without them a HITLRequest's calls
 * take their tool call ids from the result's messages, when it stopped on
 * that one interrupt.
 */
export function readRound(result: object, opts: { argsSchemas?: SubmitOptions["argsSchemas"]; callIds?: ReadonlyArray<readonly string[]> } = {}): Reading[] {
  const interrupts = (result as InterruptedResult).__interrupt__ ?? [];
  const messages = interrupts.length === 1 ? (result as { messages?: unknown }).messages : undefined;
  return interrupts.map((i, n) => readInterrupt(i, { argsSchemas: opts.argsSchemas, ids: opts.callIds?.[n], messages }));
}

/** callIdsOf returns the slackbot call ids of each interrupt's calls, as submit gives them. */
export function callIdsOf(round: readonly Reading[]): string[][] {
  return round.map((r) => r.calls.map((c) => c.id));
}

function requestOf(round: readonly Reading[]): DeferredToolRequests {
  const calls = round.flatMap((r) => r.calls);
  const metadata: Record<string, Record<string, unknown>> = {};
  for (const c of calls) if (c.schema) metadata[c.id] = { [ArgsSchemaKey]: c.schema };
  const approvals = calls.map((c) => ({ tool_name: c.name, args: toolArgs(c.args), tool_call_id: c.id }));
  return Object.keys(metadata).length > 0 ? { approvals, metadata } : { approvals };
}

/**
 * answerRound is the Command resume value answering the round as the
 * ended request a decided it: the one interrupt's own answer, or a map
 * from interrupt id to answers for several. It throws InterruptError
 * (unknown_call) when a call is not one of a's, so that a wrong token or
 * call id never answers a call as undecided, and (decision_not_allowed)
 * when a decision breaks the interrupt's rules.
 */
export function answerRound(round: readonly Reading[], a: Approval): unknown {
  const known = new Set((a.calls ?? []).map((c) => c.tool_call_id));
  for (const r of round) {
    const missing = r.calls.find((c) => !known.has(c.id));
    if (missing) {
      throw new InterruptError(
        "unknown_call",
        `request ${a.token} has no call ${missing.id} (${missing.name}) of interrupt ${r.interrupt.id ?? "with no id"}: resume with the request submit opened for this round, and its call ids`,
        r.interrupt.id,
      );
    }
  }
  const answers = round.map((r) => r.answer(a));
  if (round.length === 1) return answers[0];
  return Object.fromEntries(round.map((r, n) => [r.interrupt.id, answers[n]]));
}

/**
 * resumeValue is answerRound for interrupts read again: callIds are the
 * ids their calls were submitted under (Suspended.call_ids), needed for a
 * HITLRequest whose calls took their ids from the agent's messages.
 */
export function resumeValue(interrupts: readonly Interrupt[], a: Approval, callIds?: ReadonlyArray<readonly string[]>): unknown {
  return answerRound(readRound({ __interrupt__: [...interrupts] }, { callIds }), a);
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
  /**
   * onOutcomes sees each round's decisions, with the receipts of approved
   * calls, before the graph resumes: keep them by call id (a LangChain
   * tool's own is config.toolCall.id) for the tools to check with
   * verifyReceipt before they act.
   */
  onOutcomes?: (outcomes: RunOutcome[]) => void | Promise<void>;
}

/**
 * markNotRun marks each approved call of a decided round that the
 * framework will not run (Reading.notRun) ran: false, with why.
 */
function markNotRun(round: readonly Reading[], a: Approval, outcomes: RunOutcome[]): void {
  const byId = new Map(outcomes.map((o) => [o.callId, o]));
  for (const { id, why } of round.flatMap((r) => r.notRun?.(a) ?? [])) {
    const o = byId.get(id);
    if (o) Object.assign(o, { ran: false, error: why });
  }
}

/** roundOutcomes is what became of every call of a decided round. */
export function roundOutcomes(round: readonly Reading[], a: Approval): Outcome[] {
  return round.flatMap((r) => r.calls.map((c) => outcomeOf(c.id, a.results?.approvals?.[c.id], a)));
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
  return submitRound(client, readRound(result, { argsSchemas }), threadId, create);
}

async function submitRound(client: SlackbotClient, round: readonly Reading[], threadId: string | undefined, create: CreateOptions): Promise<Approval> {
  if (round.length === 0) throw new InterruptError("not_interrupted", "the result is not interrupted: there is no call to ask about");
  const run = round.map(({ interrupt: i }) => (i.id ? `interrupt:${i.id}` : `object:${nonceOf(i)}`));
  if (threadId !== undefined) run.push(`thread:${threadId}`);
  const ids = callIdsOf(round).flat();
  return client.create(requestOf(round), { idempotency_key: await idempotencyKeyOf("langgraph", run, ids), ...create });
}

/**
 * invokeWithApprovals invokes graph on input in config's thread and, while
 * the result is interrupted, asks slackbot about every interrupt's calls
 * and resumes the thread with new Command({ resume }) carrying the answers.
 * An interrupt it does not answer, or a decision the interrupt's rules do
 * not allow, throws InterruptError and leaves the thread interrupted. The
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
  const { signal, onPending, onOutcomes, argsSchemas, ...create } = opts;
  let result = await graph.invoke(input, config);
  for (;;) {
    const round = readRound(result, { argsSchemas });
    if (round.length === 0) return result;
    const pending = await submitRound(client, round, config.configurable.thread_id, create);
    await onPending?.(pending);
    const done = await client.wait(pending.token, { signal });
    const resume = answerRound(round, done);
    const outcomes: RunOutcome[] = roundOutcomes(round, done);
    markNotRun(round, done, outcomes);
    await reportUnrun(client, done.token, outcomes);
    await onOutcomes?.(outcomes);
    result = await graph.invoke(new Command({ resume }), config);
  }
}

/** Suspended is an interrupted thread and the slackbot token deciding it: plain JSON, store it anywhere. */
export interface Suspended {
  token: string;
  thread_id: string;
  interrupts: Interrupt[];
  /** The slackbot call ids of each interrupt's calls (absent in rounds stored before it was added: each call's own id). */
  call_ids?: string[][];
}

/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export async function suspend(client: SlackbotClient, result: object, threadId: string, opts: SubmitOptions = {}): Promise<Suspended> {
  const { argsSchemas, ...create } = opts;
  const round = readRound(result, { argsSchemas });
  const a = await submitRound(client, round, threadId, create);
  return { token: a.token, thread_id: threadId, interrupts: round.map((r) => r.interrupt), call_ids: callIdsOf(round) };
}

/**
 * resume resumes a suspended thread with the decisions once its request
 * has ended (waiting when opts.wait is set), and returns invoke's result;
 * undefined while people are still deciding. A stored interrupt it does
 * not answer throws InterruptError before anything is read.
 */
export async function resume<R extends object>(
  client: SlackbotClient,
  graph: Graph<R>,
  Command: CommandClass,
  saved: Suspended,
  opts: { wait?: boolean; signal?: AbortSignal } = {},
): Promise<R | undefined> {
  const round = readRound({ __interrupt__: saved.interrupts }, { callIds: saved.call_ids });
  if (round.length === 0) throw new InterruptError("not_interrupted", `the stored round of request ${saved.token} holds no interrupt`);
  const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
  if (a.status === "pending") return undefined;
  return graph.invoke(new Command({ resume: answerRound(round, a) }), { configurable: { thread_id: saved.thread_id } });
}
