// What the AI SDK ("ai" 6) checks again before it runs an approved call,
// and how an approver's edit gets through it. Its
// validateApprovedToolApprovals (dist/index.mjs) takes the approval
// request's inputSchemaInput (the model's own input, kept when the schema
// changed it) or else the tool call's input, parses it with the tool's
// inputSchema, and refuses the call ("Approved tool input does not match
// the validated schema output") unless the result deep-equals the tool
// call's input; then it asks needsApproval again with that input and
// turns the approval into a denial ("does not require approval") when it
// says no. So an edit holds when:
//   - the tool call's input is the edit and the approval request keeps no
//     inputSchemaInput (rewriteEdits), and the edit parses to itself: the
//     schema sent for Edit requires every member that has a default
//     (strictDefaults), so the form refuses an edit the schema would fill
//     in; a transform that changes what it parses still refuses the call,
//     which the adapter then reports to slackbot as not run;
//   - needsApproval still says yes: a tool whose needsApproval is a
//     function gets no Edit (argsSchemasOf leaves it out) unless
//     holdApprovals wrapped it.
/** held marks the tools holdApprovals wrapped. */
const held = new WeakSet();
/**
 * rewriteEdits returns messages with each call of edits (call id →
 * edited input) holding the edited input, and its approval request
 * without the model's own input, so that the SDK checks the edit and runs
 * exactly it.
 */
export function rewriteEdits(messages, edits) {
    if (edits.size === 0)
        return [...messages];
    return messages.map((m) => {
        if (m.role !== "assistant" || !Array.isArray(m.content))
            return m;
        const content = m.content.map((p) => {
            if (p?.type === "tool-call" && edits.has(p.toolCallId))
                return { ...p, input: edits.get(p.toolCallId) };
            if (p?.type === "tool-approval-request" && edits.has(p.toolCallId) && Object.hasOwn(p, "inputSchemaInput")) {
                const { inputSchemaInput: _model, ...rest } = p;
                return rest;
            }
            return p;
        });
        return { ...m, content };
    });
}
/**
 * holdApprovals returns the tools with each conditional needsApproval
 * (a function) wrapped so that it also says yes for a call the
 * conversation's last message approves: the SDK asks needsApproval again
 * with the approved (possibly edited) input before it runs the call, and
 * an edit below the tool's threshold would otherwise turn the approval
 * into a denial. It only ever adds "yes": a call the function would have
 * let through unasked still is asked about only when approved already.
 * argsSchemasOf offers Edit for a conditional tool only once held.
 */
export function holdApprovals(tools) {
    const out = {};
    for (const [name, t] of Object.entries(tools)) {
        if (typeof t.needsApproval !== "function") {
            out[name] = t;
            continue;
        }
        const needs = t.needsApproval;
        const wrapped = {
            ...t,
            needsApproval: async (input, options) => approvedInLastMessage(options.messages, options.toolCallId) || (await needs(input, options)),
        };
        held.add(wrapped);
        out[name] = wrapped;
    }
    return out;
}
/** isHeld reports whether argsSchemasOf may offer Edit for t: its needsApproval is no function, or holdApprovals wrapped it. */
export function isHeld(t) {
    return typeof t.needsApproval !== "function" || held.has(t);
}
/**
 * approvedInLastMessage reports whether the last message is a tool
 * message approving (tool-approval-response, approved) a request for call
 * id: what the SDK's collectToolApprovals reads, from the same message.
 */
function approvedInLastMessage(messages, id) {
    return approvalOf(messages, id) !== undefined;
}
/**
 * approvalOf returns the approving tool-approval-response for call id in
 * the last message, a tool message (what the SDK's collectToolApprovals
 * reads), or undefined.
 */
export function approvalOf(messages, id) {
    const last = messages.at(-1);
    if (last?.role !== "tool" || !Array.isArray(last.content))
        return undefined;
    const approved = new Map();
    for (const p of last.content)
        if (p?.type === "tool-approval-response" && p.approved === true)
            approved.set(p.approvalId, p);
    if (approved.size === 0)
        return undefined;
    for (const m of messages) {
        if (m?.role !== "assistant" || !Array.isArray(m.content))
            continue;
        for (const p of m.content) {
            if (p?.type === "tool-approval-request" && p.toolCallId === id && approved.has(p.approvalId))
                return approved.get(p.approvalId);
        }
    }
    return undefined;
}
/**
 * strictDefaults returns a JSON Schema in which every object member that
 * has a default is required too: the SDK parses an approved edit again and
 * refuses it unless it parses to itself, which an edit that leaves a
 * defaulted member out never does.
 */
export function strictDefaults(schema) {
    if (Array.isArray(schema))
        return schema.map(strictDefaults);
    if (schema === null || typeof schema !== "object")
        return schema;
    const out = {};
    for (const [k, v] of Object.entries(schema))
        out[k] = k === "default" || k === "const" || k === "enum" || k === "examples" ? v : strictDefaults(v);
    const props = out.properties;
    if (props !== null && typeof props === "object" && !Array.isArray(props)) {
        const defaulted = Object.entries(props).filter(([, p]) => p !== null && typeof p === "object" && Object.hasOwn(p, "default")).map(([k]) => k);
        if (defaulted.length > 0) {
            const required = Array.isArray(out.required) ? out.required : [];
            out.required = [...required, ...defaulted.filter((k) => !required.includes(k))];
        }
    }
    return out;
}
