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
import { idempotencyKeyOf, nonceOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";
/** pendingToolCalls is the value to pass to interrupt() for calls that need a person. */
export function pendingToolCalls(calls) {
    return { type: "slackbot/tool-approvals", tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })) };
}
function isPending(v) {
    return v?.type === "slackbot/tool-approvals" && Array.isArray(v.tool_calls);
}
/** pendingInterrupts returns the PendingToolCalls interrupts of an invoke result. */
export function pendingInterrupts(result) {
    return (result.__interrupt__ ?? []).filter((i) => isPending(i.value));
}
/** requestsFor turns the interrupts' calls into one DeferredToolRequests. */
export function requestsFor(interrupts) {
    return {
        approvals: interrupts.flatMap((i) => i.value.tool_calls.map((c) => ({ tool_name: c.name, args: toolArgs(c.args), tool_call_id: c.id }))),
    };
}
function decision(call, o) {
    if (!o.approved)
        return { type: "reject", message: o.message ?? "The tool call was denied.", decidedBy: o.decidedBy };
    if (o.overrideArgs == null)
        return { type: "approve", args: call.args, edited: false, decidedBy: o.decidedBy };
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
export function resumeValue(interrupts, a) {
    const perInterrupt = interrupts.map((i) => {
        const d = {};
        for (const c of i.value.tool_calls)
            d[c.id] = decision(c, outcomeOf(c.id, a.results?.approvals?.[c.id], a));
        return d;
    });
    if (perInterrupt.length === 1)
        return perInterrupt[0];
    return Object.fromEntries(interrupts.map((i, n) => [i.id, perInterrupt[n]]));
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
    const interrupts = pendingInterrupts(result);
    const run = interrupts.map((i) => (i.id ? `interrupt:${i.id}` : `object:${nonceOf(i)}`));
    if (threadId !== undefined)
        run.push(`thread:${threadId}`);
    const ids = interrupts.flatMap((i) => i.value.tool_calls.map((c) => c.id));
    return client.create(withArgsSchemas(requestsFor(interrupts), argsSchemas), { idempotency_key: await idempotencyKeyOf("langgraph", run, ids), ...create });
}
/**
 * invokeWithApprovals invokes graph on input in config's thread and, while
 * the result is interrupted for tool approvals, asks slackbot and resumes
 * the thread with new Command({ resume }) carrying the decisions. The
 * graph needs a checkpointer (MemorySaver or a durable one).
 */
export async function invokeWithApprovals(graph, input, config, client, Command, opts = {}) {
    const { signal, onPending, ...create } = opts;
    let result = await graph.invoke(input, config);
    for (;;) {
        const interrupts = pendingInterrupts(result);
        if (interrupts.length === 0)
            return result;
        const pending = await submit(client, result, { ...create, threadId: config.configurable.thread_id });
        await onPending?.(pending);
        const done = await client.wait(pending.token, { signal });
        result = await graph.invoke(new Command({ resume: resumeValue(interrupts, done) }), config);
    }
}
/** suspend submits the interrupted thread's calls and returns what to store; no process waits. */
export async function suspend(client, result, threadId, opts = {}) {
    const a = await submit(client, result, { ...opts, threadId });
    return { token: a.token, thread_id: threadId, interrupts: pendingInterrupts(result) };
}
/**
 * resume resumes a suspended thread with the decisions once its request
 * has ended (waiting when opts.wait is set), and returns invoke's result;
 * undefined while people are still deciding.
 */
export async function resume(client, graph, Command, saved, opts = {}) {
    const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
    if (a.status === "pending")
        return undefined;
    return graph.invoke(new Command({ resume: resumeValue(saved.interrupts, a) }), { configurable: { thread_id: saved.thread_id } });
}
