// The adapter for the Vercel AI SDK (ai): generateText / streamText end
// with tool-approval-request parts for tools with needsApproval; the
// adapter turns them into one slackbot request and, when people have
// decided, answers with tool-approval-response parts (the denial reason
// included, which the SDK sends to the model in its execution-denied
// result). Edited arguments replace the tool call's input in the
// response messages, which the SDK executes from. It uses the SDK's
// message shapes structurally: no runtime dependency on "ai".
//
// With experimental_toolApprovalSecret set, the SDK binds each approval to
// the call's original input, so an edit makes it refuse the call.
import { idempotencyKeyOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";
/** approvalRequests returns the tool-approval-request parts of a result. */
export function approvalRequests(result) {
    return result.content.filter((p) => p.type === "tool-approval-request");
}
/** requestsFor turns approval requests into one DeferredToolRequests. */
export function requestsFor(parts) {
    return {
        approvals: parts.map((p) => ({ tool_name: p.toolCall.toolName, args: toolArgs(p.toolCall.input), tool_call_id: p.toolCall.toolCallId })),
    };
}
/**
 * answer builds the messages that answer a result's approval requests as
 * the ended request a says: the response messages, with the input of each
 * call approved with edited arguments replaced, then one tool message of
 * tool-approval-response parts. A call nobody decided is denied with a
 * reason saying no decision arrived.
 */
export function answer(result, a) {
    const parts = approvalRequests(result);
    const outcomes = parts.map((p) => outcomeOf(p.toolCall.toolCallId, a.results?.approvals?.[p.toolCall.toolCallId], a));
    const edits = new Map(outcomes.filter((o) => o.approved && o.overrideArgs != null).map((o) => [o.callId, o.overrideArgs]));
    const messages = result.response.messages.map((m) => {
        if (m.role !== "assistant" || !Array.isArray(m.content) || edits.size === 0)
            return m;
        const content = m.content.map((p) => p?.type === "tool-call" && edits.has(p.toolCallId) ? { ...p, input: editedInput(edits.get(p.toolCallId)) } : p);
        return { ...m, content };
    });
    const responses = parts.map((p, i) => {
        const o = outcomes[i];
        return o.approved
            ? { type: "tool-approval-response", approvalId: p.approvalId, approved: true }
            : { type: "tool-approval-response", approvalId: p.approvalId, approved: false, reason: o.message };
    });
    return { messages: [...messages, { role: "tool", content: responses }], outcomes, approval: a };
}
function editedInput(v) {
    if (typeof v !== "string")
        return v;
    try {
        return JSON.parse(v);
    }
    catch {
        return v;
    }
}
/**
 * submit hands a result's approval requests to slackbot and returns the
 * pending request. Its idempotency key names the approval ids the SDK drew
 * for this result (random, and kept in the conversation) with the call
 * ids: the same result submitted again finds the same request, another
 * run's its own, whatever call ids its model reuses.
 */
export async function submit(client, result, opts = {}) {
    const { argsSchemas, ...create } = opts;
    const parts = approvalRequests(result);
    const key = await idempotencyKeyOf("ai-sdk", parts.map((p) => p.approvalId), parts.map((p) => p.toolCall.toolCallId));
    return client.create(withArgsSchemas(requestsFor(parts), argsSchemas), { idempotency_key: key, ...create });
}
/**
 * argsSchemasOf returns the JSON Schema of each tool's input, by name, for
 * AskOptions.argsSchemas: pass the tools given to generateText and the
 * SDK's asSchema (import { asSchema } from "ai").
 */
export async function argsSchemasOf(tools, asSchema) {
    const out = {};
    for (const [name, t] of Object.entries(tools)) {
        if (t.inputSchema === undefined)
            continue;
        const schema = await asSchema(t.inputSchema).jsonSchema;
        if (schema !== null && typeof schema === "object")
            out[name] = schema;
    }
    return out;
}
/**
 * ask submits the result's approval requests, waits while people decide,
 * and returns the messages to append before calling the model again;
 * undefined when the result asks for no approval.
 */
export async function ask(client, result, opts = {}) {
    if (approvalRequests(result).length === 0)
        return undefined;
    const { signal, onPending, ...create } = opts;
    const pending = await submit(client, result, create);
    await onPending?.(pending);
    return answer(result, await client.wait(pending.token, { signal }));
}
/**
 * generateWithApprovals calls generate with the conversation and, while
 * the result asks for approvals, asks slackbot and calls it again with
 * the answers appended. generate is typically
 * (messages) => generateText({ model, tools, messages }).
 */
export async function generateWithApprovals(generate, messages, client, opts = {}) {
    let conversation = [...messages];
    for (;;) {
        const result = await generate(conversation);
        const a = await ask(client, result, opts);
        if (!a)
            return { result, messages: [...conversation, ...result.response.messages] };
        conversation = [...conversation, ...a.messages];
    }
}
/**
 * suspend hands a result's approval requests to slackbot and returns what
 * to store; no process waits. conversation is the messages the result was
 * generated from.
 */
export async function suspend(client, result, conversation, opts = {}) {
    const a = await submit(client, result, opts);
    return { token: a.token, messages: [...conversation, ...result.response.messages], approvals: approvalRequests(result) };
}
/**
 * resume returns the conversation to generate from once a suspended
 * request has ended (waiting when opts.wait is set): the stored messages,
 * edited arguments applied, then the approval responses; undefined while
 * people are still deciding.
 */
export async function resume(client, saved, opts = {}) {
    const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
    if (a.status === "pending")
        return undefined;
    return answer({ content: saved.approvals, response: { messages: saved.messages } }, a).messages;
}
