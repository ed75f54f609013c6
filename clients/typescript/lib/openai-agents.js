// The adapter for the OpenAI Agents SDK (@openai/agents): a run that stops
// on tools with needsApproval hands its interruptions to slackbot as one
// request; when people decide in Slack, each interruption is approved
// (with edited arguments, if an approver or a program edited them) or
// rejected with the reason, and the run goes on. It uses the SDK through
// the few members it needs (structural types), so this package has no
// runtime dependency on it.
import { idempotencyKeyOf, nonceOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";
/** callId is the id slackbot knows an interruption by. */
export function callId(item) {
    const id = item.rawItem.callId ?? item.rawItem.id;
    if (!id)
        throw new TypeError("slackbot: an interruption has no callId");
    return id;
}
function toolCall(item) {
    return { tool_name: item.name ?? item.rawItem.name ?? "unknown", args: toolArgs(item.rawItem.arguments), tool_call_id: callId(item) };
}
/** requestsFor turns interruptions into one DeferredToolRequests. */
export function requestsFor(items) {
    return { approvals: items.map(toolCall) };
}
/**
 * idempotencyKey names one round of interruptions: their call ids and a
 * random id bound to each interruption object. The SDK makes new
 * interruption objects for every run and round, and nothing in them or in
 * the RunState is unique to the run (the trace id is shared by every run
 * of a trace and absent with tracing off; response ids come from the
 * model), so the same interruptions submitted again find the same request
 * and another run's get their own, whatever call ids its model reuses.
 */
export function idempotencyKey(items) {
    return idempotencyKeyOf("openai-agents", items.map(nonceOf), items.map(callId));
}
/**
 * applyDecisions approves or rejects each interruption on state as the
 * ended request says; an interruption it does not decide (expired,
 * cancelled) is rejected with a message saying no decision arrived.
 * Edited arguments replace the call's arguments before it is approved.
 */
export function applyDecisions(state, items, a) {
    return items.map((item) => {
        const o = outcomeOf(callId(item), a.results?.approvals?.[callId(item)], a);
        if (o.approved) {
            if (o.overrideArgs !== undefined && o.overrideArgs !== null) {
                item.rawItem.arguments = typeof o.overrideArgs === "string" ? o.overrideArgs : JSON.stringify(o.overrideArgs);
            }
            state.approve(item);
        }
        else {
            state.reject(item, { message: o.message });
        }
        return o;
    });
}
/**
 * argsSchemasOf returns the parameters (JSON Schema) of the function tools
 * the interruptions' agents have, by name: sent with the calls, they let
 * an approver edit the arguments in Slack, checked against them.
 */
export function argsSchemasOf(items) {
    const out = {};
    for (const item of items) {
        const name = item.name ?? item.rawItem.name;
        const t = item.agent?.tools?.find((t) => t.type === "function" && t.name === name);
        if (name && t?.parameters !== null && typeof t?.parameters === "object")
            out[name] = t.parameters;
    }
    return out;
}
/** submit hands a result's interruptions to slackbot and returns the pending request. */
export async function submit(client, items, opts = {}) {
    const { argsSchemas, ...create } = opts;
    const requests = withArgsSchemas(requestsFor(items), { ...argsSchemasOf(items), ...argsSchemas });
    return client.create(requests, { idempotency_key: await idempotencyKey(items), ...create });
}
/**
 * ask submits the interruptions, waits while people decide, and applies
 * the decisions to result.state. Run the agent again with result.state.
 */
export async function ask(client, result, opts = {}) {
    const items = result.interruptions ?? [];
    if (items.length === 0)
        return [];
    const { signal, onPending, ...create } = opts;
    const pending = await submit(client, items, create);
    await onPending?.(pending);
    const done = await client.wait(pending.token, { signal });
    return applyDecisions(result.state, items, done);
}
/**
 * runWithApprovals runs agent on input with run (the SDK's run), and each
 * time the run stops on interruptions asks slackbot and runs on from the
 * state, until a run ends without interruptions.
 */
export async function runWithApprovals(run, agent, input, client, opts = {}) {
    let result = await run(agent, input);
    while ((result.interruptions?.length ?? 0) > 0) {
        await ask(client, result, opts);
        result = await run(agent, result.state);
    }
    return result;
}
/** suspend submits the interruptions and returns what to store; no process waits. */
export async function suspend(client, result, opts = {}) {
    const a = await submit(client, result.interruptions ?? [], opts);
    return { token: a.token, state: result.state.toString() };
}
/**
 * resume restores a suspended run's state (RunState.fromString) once its
 * request has ended and applies the decisions; it returns undefined while
 * people are still deciding (unless wait is set, then it waits). Run the
 * agent again with the returned state.
 */
export async function resume(client, runState, agent, saved, opts = {}) {
    const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
    if (a.status === "pending")
        return undefined;
    const state = await runState.fromString(agent, withEditedArguments(saved.state, a));
    applyDecisions(state, state.getInterruptions(), a);
    return state;
}
/**
 * withEditedArguments rewrites, in a serialized RunState, the arguments of
 * every function call that was approved with edited arguments. A restored
 * state keeps its own copy of each call for running the tools, apart from
 * the interruption items, so editing the items alone would not reach the
 * tool; the serialized form is the SDK's public, versioned one.
 */
export function withEditedArguments(serialized, a) {
    const edits = new Map();
    for (const [id, r] of Object.entries(a.results?.approvals ?? {})) {
        if (typeof r === "object" && r.kind === "tool-approved" && r.override_args != null) {
            edits.set(id, typeof r.override_args === "string" ? r.override_args : JSON.stringify(r.override_args));
        }
    }
    if (edits.size === 0)
        return serialized;
    const edit = (v) => {
        if (Array.isArray(v)) {
            v.forEach(edit);
        }
        else if (v !== null && typeof v === "object") {
            const o = v;
            const id = o.callId;
            if (o.type === "function_call" && typeof id === "string" && edits.has(id) && typeof o.arguments === "string") {
                o.arguments = edits.get(id);
            }
            Object.values(o).forEach(edit);
        }
    };
    const parsed = JSON.parse(serialized);
    edit(parsed);
    return JSON.stringify(parsed);
}
