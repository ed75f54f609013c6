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
import { ArgsSchemaKey, idempotencyKeyOf, nonceOf, outcomeOf, reportUnrun, toolArgs } from "./decisions.js";
import { InterruptError, isPending, readInterrupt } from "./interrupts.js";
export { InterruptError, } from "./interrupts.js";
/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export function pendingToolCalls(calls) {
    return { type: "slackbot/tool-approvals", tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })) };
}
/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result (readRound reads every kind). */
export function pendingInterrupts(result) {
    return (result.__interrupt__ ?? []).filter((i) => isPending(i.value));
}
/** requestsFor turns PendingToolCalls interrupts' calls into one DeferredToolRequests. */
export function requestsFor(interrupts) {
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
export function readRound(result, opts = {}) {
    const interrupts = result.__interrupt__ ?? [];
    const messages = interrupts.length === 1 ? result.messages : undefined;
    return interrupts.map((i, n) => readInterrupt(i, { argsSchemas: opts.argsSchemas, ids: opts.callIds?.[n], messages }));
}
/** callIdsOf returns the slackbot call ids of each interrupt's calls, as submit gives them. */
export function callIdsOf(round) {
    return round.map((r) => r.calls.map((c) => c.id));
}
function requestOf(round) {
    const calls = round.flatMap((r) => r.calls);
    const metadata = {};
    for (const c of calls)
        if (c.schema)
            metadata[c.id] = { [ArgsSchemaKey]: c.schema };
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
export function answerRound(round, a) {
    const known = new Set((a.calls ?? []).map((c) => c.tool_call_id));
    for (const r of round) {
        const missing = r.calls.find((c) => !known.has(c.id));
        if (missing) {
            throw new InterruptError("unknown_call", `request ${a.token} has no call ${missing.id} (${missing.name}) of interrupt ${r.interrupt.id ?? "with no id"}: resume with the request submit opened for this round, and its call ids`, r.interrupt.id);
        }
    }
    const answers = round.map((r) => r.answer(a));
    if (round.length === 1)
        return answers[0];
    return Object.fromEntries(round.map((r, n) => [r.interrupt.id, answers[n]]));
}
/**
 * resumeValue is answerRound for interrupts read again: callIds are the
 * ids their calls were submitted under (Suspended.call_ids), needed for a
 * HITLRequest whose calls took their ids from the agent's messages.
 */
export function resumeValue(interrupts, a, callIds) {
    return answerRound(readRound({ __interrupt__: [...interrupts] }, { callIds }), a);
}
/**
 * markNotRun marks each approved call of a decided round that the
 * framework will not run (Reading.notRun) ran: false, with why.
 */
function markNotRun(round, a, outcomes) {
    const byId = new Map(outcomes.map((o) => [o.callId, o]));
    for (const { id, why } of round.flatMap((r) => r.notRun?.(a) ?? [])) {
        const o = byId.get(id);
        if (o)
            Object.assign(o, { ran: false, error: why });
    }
}
/** roundOutcomes is what became of every call of a decided round. */
export function roundOutcomes(round, a) {
    return round.flatMap((r) => r.calls.map((c) => outcomeOf(c.id, a.results?.approvals?.[c.id], a)));
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
export async function submit(client, result, opts = {}) {
    const { argsSchemas, threadId, ...create } = opts;
    return submitRound(client, readRound(result, { argsSchemas }), threadId, create);
}
async function submitRound(client, round, threadId, create) {
    if (round.length === 0)
        throw new InterruptError("not_interrupted", "the result is not interrupted: there is no call to ask about");
    const run = round.map(({ interrupt: i }) => (i.id ? `interrupt:${i.id}` : `object:${nonceOf(i)}`));
    if (threadId !== undefined)
        run.push(`thread:${threadId}`);
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
export async function invokeWithApprovals(graph, input, config, client, Command, opts = {}) {
    const { signal, onPending, onOutcomes, argsSchemas, ...create } = opts;
    let result = await graph.invoke(input, config);
    for (;;) {
        const round = readRound(result, { argsSchemas });
        if (round.length === 0)
            return result;
        const pending = await submitRound(client, round, config.configurable.thread_id, create);
        await onPending?.(pending);
        const done = await client.wait(pending.token, { signal });
        const resume = answerRound(round, done);
        const outcomes = roundOutcomes(round, done);
        markNotRun(round, done, outcomes);
        await reportUnrun(client, done.token, outcomes);
        await onOutcomes?.(outcomes);
        result = await graph.invoke(new Command({ resume }), config);
    }
}
/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export async function suspend(client, result, threadId, opts = {}) {
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
export async function resume(client, graph, Command, saved, opts = {}) {
    const round = readRound({ __interrupt__: saved.interrupts }, { callIds: saved.call_ids });
    if (round.length === 0)
        throw new InterruptError("not_interrupted", `the stored round of request ${saved.token} holds no interrupt`);
    const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
    if (a.status === "pending")
        return undefined;
    return graph.invoke(new Command({ resume: answerRound(round, a) }), { configurable: { thread_id: saved.thread_id } });
}
