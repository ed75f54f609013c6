// The adapter for the Vercel AI SDK (ai): generateText / streamText end
// with tool-approval-request parts for tools with needsApproval; the
// adapter turns them into one slackbot request and, when people have
// decided, answers with tool-approval-response parts (the denial reason
// included, which the SDK sends to the model in its execution-denied
// result). Edited arguments replace the tool call's input in the
// response messages, which the SDK executes from, in a way its checks of
// an approved call let through (ai-sdk-edits.ts). What became of each
// approved call (ran, failed, or refused by the SDK) is read from the
// next result and reported to slackbot (ai-sdk-outcomes.ts), so no card
// stays "approved" for a call that never ran. It uses the SDK's message
// shapes structurally: no runtime dependency on "ai".
//
// With experimental_toolApprovalSecret set, the SDK binds each approval to
// the call's original input, so an edit makes it refuse the call (and the
// adapter reports it as not run).
import { idempotencyKeyOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";
import { approvalOf, isHeld, rewriteEdits, strictDefaults } from "./ai-sdk-edits.js";
import { reportOutcomes } from "./ai-sdk-outcomes.js";
export { holdApprovals } from "./ai-sdk-edits.js";
export { reportOutcomes, ranOutcomes } from "./ai-sdk-outcomes.js";
/**
 * settle waits for a streamText result's stream to end (a generateText
 * result is settled already) and returns what the adapter reads of it.
 */
export async function settle(result) {
    const [content, response] = await Promise.all([result.content, result.response]);
    return { content, response: { messages: response.messages } };
}
/** approvalRequests returns the tool-approval-request parts of a (settled) result. */
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
    const edits = new Map(outcomes.filter((o) => o.approved && o.overrideArgs != null).map((o) => [o.callId, editedInput(o.overrideArgs)]));
    const messages = rewriteEdits(result.response.messages, edits);
    const responses = parts.map((p, i) => {
        const o = outcomes[i];
        if (!o.approved)
            return { type: "tool-approval-response", approvalId: p.approvalId, approved: false, reason: o.message };
        const receipt = o.receipt ? { providerOptions: { slackbot: { receipt: o.receipt } } } : {};
        return { type: "tool-approval-response", approvalId: p.approvalId, approved: true, ...receipt };
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
 * receiptFor returns the approval receipt slackbot signed for the call a
 * tool's execute runs, from the options the SDK gives it ({ toolCallId,
 * messages }): the answer's approval response carries it. Check it with
 * verifyReceipt before acting; undefined (which verifyReceipt refuses,
 * kind "missing") when the call was not approved through slackbot.
 */
export function receiptFor(options) {
    return approvalOf(options.messages, options.toolCallId)?.providerOptions?.slackbot?.receipt;
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
 * SDK's asSchema (import { asSchema } from "ai"). Members with a default
 * are required in it, so an approver's edit is what runs (the SDK refuses
 * an edit its schema would fill in). A tool whose needsApproval is a
 * function is left out (its cards offer no Edit: the SDK asks it again
 * with the edit, and an edit below its threshold would become a denial)
 * unless holdApprovals wrapped the tools.
 */
export async function argsSchemasOf(tools, asSchema) {
    const out = {};
    for (const [name, t] of Object.entries(tools)) {
        if (t.inputSchema === undefined || !isHeld(t))
            continue;
        const schema = strictDefaults(await asSchema(t.inputSchema).jsonSchema);
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
    const settled = await settle(result);
    if (approvalRequests(settled).length === 0)
        return undefined;
    const { signal, onPending, ...create } = opts;
    const pending = await submit(client, settled, create);
    await onPending?.(pending);
    return answer(settled, await client.wait(pending.token, { signal }));
}
/**
 * generateWithApprovals calls generate with the conversation and, while
 * the result asks for approvals, asks slackbot and calls it again with
 * the answers appended; what became of each approved call is read from
 * the next result and reported to slackbot (reportOutcomes), and all of
 * it returned in outcomes. generate is typically
 * (messages: ModelMessage[]) => generateText({ model, tools, messages }),
 * or streamText(...) in its place.
 */
export async function generateWithApprovals(generate, messages, client, opts = {}) {
    let conversation = [...messages];
    const outcomes = [];
    let answered;
    for (;;) {
        const result = await generate(conversation);
        const settled = await settle(result);
        if (answered)
            outcomes.push(...(await reportOutcomes(client, answered, settled)));
        answered = await ask(client, settled, opts);
        if (!answered)
            return { result, messages: [...conversation, ...settled.response.messages], outcomes };
        conversation = [...conversation, ...answered.messages];
    }
}
/**
 * suspend hands a result's approval requests to slackbot and returns what
 * to store; no process waits. conversation is the messages the result was
 * generated from.
 */
export async function suspend(client, result, conversation, opts = {}) {
    const settled = await settle(result);
    const a = await submit(client, settled, opts);
    return { token: a.token, messages: [...conversation, ...settled.response.messages], approvals: approvalRequests(settled) };
}
/**
 * resume returns the conversation to generate from once a suspended
 * request has ended (waiting when opts.wait is set): the stored messages,
 * edited arguments applied, then the approval responses; undefined while
 * people are still deciding.
 */
export async function resume(client, saved, opts = {}) {
    return (await resumeAnswer(client, saved, opts))?.messages;
}
/**
 * resumeAnswer is resume with the whole Answer: its messages are what
 * resume returns, its outcomes each call's decision and receipt; pass it
 * and the next result to reportOutcomes to tell slackbot what became of
 * the approved calls.
 */
export async function resumeAnswer(client, saved, opts = {}) {
    const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
    if (a.status === "pending")
        return undefined;
    return answer({ content: saved.approvals, response: { messages: saved.messages } }, a);
}
