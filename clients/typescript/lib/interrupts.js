// The interrupt values the LangGraph adapter answers, each read into the
// tool calls it asks people about and answered with the resume value its
// author expects:
//
//   - its own, interrupt(pendingToolCalls(calls)) → Decisions by call id;
//   - LangChain v1's humanInTheLoopMiddleware (langchain 1.5.14,
//     src/agents/middleware/hitl.ts): HITLRequest {actionRequests,
//     reviewConfigs} → HITLResponse {decisions}, one per action, in order;
//   - LangGraph's prebuilt HumanInterrupt[] (@langchain/langgraph 1.7.3,
//     src/prebuilt/interrupt.ts; the Agent Inbox shape) → HumanResponse[],
//     one per HumanInterrupt, in order.
//
// Anything else is an InterruptError naming the interrupt: returning a
// result still interrupted would look like a finished run. A decision the
// interrupt's own rules do not allow (a denial where LangChain's
// reviewConfig forbids reject, say) is an InterruptError too, raised before
// anything is sent to the graph: LangChain would refuse it anyway, and
// sending another decision in its place would run what no person chose.
import { canonicalJson } from "./canonical.js";
import { nonceOf, outcomeOf, toolArgs } from "./decisions.js";
/** InterruptError is an interrupt the adapter cannot answer; the thread stays interrupted and nothing was sent to it. */
export class InterruptError extends Error {
    kind;
    interruptId;
    constructor(kind, message, 
    /** The interrupt's id (LangGraph's), when it has one. */
    interruptId) {
        super(`slackbot/langgraph: ${message}`);
        this.kind = kind;
        this.interruptId = interruptId;
        this.name = "InterruptError";
    }
}
// --- reading ---
function isObject(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v);
}
/** isPending reports whether v is a PendingToolCalls value. */
export function isPending(v) {
    return v?.type === "slackbot/tool-approvals" && Array.isArray(v.tool_calls);
}
function isHITLRequest(v) {
    return isObject(v) && Array.isArray(v.actionRequests) && Array.isArray(v.reviewConfigs);
}
function isInbox(v) {
    return Array.isArray(v) && v.length > 0 && v.every((h) => isObject(h) && isObject(h.action_request) && isObject(h.config));
}
/** preview is a short, bounded view of an interrupt's value for an error message. */
export function preview(v) {
    let s;
    try {
        s = JSON.stringify(v) ?? String(v);
    }
    catch {
        s = Object.prototype.toString.call(v);
    }
    return s.length > 160 ? `${s.slice(0, 160)}…` : s;
}
function named(i) {
    return i.id ? `interrupt ${i.id}` : "an interrupt with no id";
}
/**
 * readInterrupt reads one interrupt the adapter understands, or throws
 * InterruptError (unknown_interrupt, malformed_interrupt) naming it.
 */
export function readInterrupt(i, opts = {}) {
    const v = i.value;
    if (isPending(v))
        return readPending(i, v, opts);
    if (isHITLRequest(v))
        return readHITL(i, v, opts);
    if (isInbox(v))
        return readInbox(i, v, opts);
    throw new InterruptError("unknown_interrupt", `the graph stopped on ${named(i)}, whose value this adapter does not answer: ${preview(v)}. It answers ` +
        "interrupt(pendingToolCalls(calls)), LangChain's humanInTheLoopMiddleware (HITLRequest) and LangGraph's HumanInterrupt[]; " +
        "answer this one with your own Command({ resume })", i.id);
}
function malformed(i, problem) {
    return new InterruptError("malformed_interrupt", `${named(i)} looks like ${problem}`, i.id);
}
/** synthetic are ids for calls that carry none: unique to the interrupt, the same each time it is read. */
function synthetic(i, n) {
    const base = i.id ?? nonceOf(i);
    return Array.from({ length: n }, (_, k) => `${base}:${k}`);
}
function idsOr(i, opts, n, derive) {
    if (opts.ids === undefined)
        return derive();
    if (opts.ids.length !== n) {
        throw new InterruptError("malformed_interrupt", `${named(i)} asks about ${n} calls, but the stored round gives it ${opts.ids.length} call ids`, i.id);
    }
    return [...opts.ids];
}
function readPending(i, v, opts) {
    const calls = v.tool_calls.map((c) => ({ id: c.id, name: c.name, args: c.args, schema: schemaOf(opts.argsSchemas, c.name) }));
    return {
        interrupt: i,
        calls,
        answer(a) {
            const d = {};
            for (const c of v.tool_calls)
                d[c.id] = pendingDecision(c, outcomeOf(c.id, a.results?.approvals?.[c.id], a));
            return d;
        },
    };
}
function pendingDecision(call, o) {
    if (!o.approved)
        return { type: "reject", message: o.message ?? "The tool call was denied.", decidedBy: o.decidedBy };
    if (o.overrideArgs == null)
        return { type: "approve", args: call.args, edited: false, decidedBy: o.decidedBy };
    const edited = toolArgs(o.overrideArgs);
    const args = edited !== null && typeof edited === "object" ? edited : call.args;
    return { type: "approve", args, edited: true, decidedBy: o.decidedBy };
}
function schemaOf(schemas, tool) {
    return schemas && Object.hasOwn(schemas, tool) ? schemas[tool] : undefined;
}
const hitlTypes = ["approve", "edit", "reject"];
function readHITL(i, v, opts) {
    const actions = v.actionRequests;
    const configs = v.reviewConfigs;
    if (actions.length === 0)
        throw malformed(i, "a HITLRequest with no actionRequests");
    const read = actions.map((raw, k) => {
        if (!isObject(raw) || typeof raw.name !== "string" || raw.name === "" || !isObject(raw.args)) {
            throw malformed(i, `a HITLRequest whose actionRequests[${k}] is not {name, args: an object}: ${preview(raw)}`);
        }
        const cfg = reviewConfigOf(i, configs, k, raw.name);
        return { name: raw.name, args: raw.args, cfg };
    });
    const ids = idsOr(i, opts, read.length, () => messageIds(opts.messages, read) ?? synthetic(i, read.length));
    const calls = read.map((r, k) => ({
        id: ids[k],
        name: r.name,
        args: r.args,
        schema: r.cfg.allowed.includes("edit") ? (r.cfg.argsSchema ?? schemaOf(opts.argsSchemas, r.name)) : undefined,
    }));
    return {
        interrupt: i,
        calls,
        answer(a) {
            const problems = [];
            const decisions = calls.map((c, k) => hitlDecision(c, read[k].cfg.allowed, a, problems));
            if (problems.length > 0)
                throw notAllowed(i, a, problems);
            return { decisions };
        },
        // langchain 1.5.14 (dist/agents/middleware/hitl.js): once any decision
        // of the batch is a rejection, the middleware runs none of its calls
        // and asks the model again, so an approved call there never runs.
        notRun(a) {
            const problems = [];
            const decisions = calls.map((c, k) => hitlDecision(c, read[k].cfg.allowed, a, problems));
            if (problems.length > 0 || !decisions.some((d) => d.type === "reject"))
                return [];
            const why = "LangChain's humanInTheLoopMiddleware runs none of a batch of calls once one of them is rejected; the model was asked again";
            return calls.filter((_, k) => decisions[k].type !== "reject").map((c) => ({ id: c.id, why }));
        },
    };
}
/**
 * reviewConfigOf finds action k's review config: the middleware writes one
 * per action, in order; a request written by hand may hold one per tool
 * name instead. An action without one, or with a decision LangChain does
 * not know, is refused: what people may decide would be a guess.
 */
function reviewConfigOf(i, configs, k, name) {
    const at = configs[k];
    const raw = isObject(at) && at.actionName === name ? at : configs.find((c) => isObject(c) && c.actionName === name);
    if (!isObject(raw))
        throw malformed(i, `a HITLRequest with no reviewConfig for action ${k} (${name})`);
    const allowed = raw.allowedDecisions;
    if (!Array.isArray(allowed) || !allowed.every((d) => typeof d === "string" && hitlTypes.includes(d))) {
        throw malformed(i, `a HITLRequest whose reviewConfig for ${name} has allowedDecisions ${preview(allowed)}, not a list of approve, edit, reject`);
    }
    if (raw.argsSchema !== undefined && !isObject(raw.argsSchema))
        throw malformed(i, `a HITLRequest whose reviewConfig for ${name} has an argsSchema that is no object`);
    return { allowed: allowed, argsSchema: raw.argsSchema };
}
/**
 * messageIds gives the HITLRequest's calls the ids of the tool calls they
 * are: the middleware asks about the last AI message's tool calls, in
 * order, leaving out those it lets run. Matched by name and arguments, so
 * the receipt slackbot signs names the call id the tool itself sees.
 */
function messageIds(messages, read) {
    if (!Array.isArray(messages))
        return undefined;
    const ai = [...messages].reverse().find((m) => isObject(m) && Array.isArray(m.tool_calls));
    if (!ai)
        return undefined;
    const ids = [];
    for (const tc of ai.tool_calls) {
        const want = read[ids.length];
        if (!want || !isObject(tc) || typeof tc.id !== "string" || tc.id === "" || tc.name !== want.name)
            continue;
        if (sameArgs(tc.args, want.args))
            ids.push(tc.id);
    }
    return ids.length === read.length && new Set(ids).size === ids.length ? ids : undefined;
}
function sameArgs(a, b) {
    try {
        return canonicalJson(a) === canonicalJson(b);
    }
    catch {
        return false;
    }
}
/** decided names what became of a call, for an error. */
function decided(a, id, o) {
    if (o.approved)
        return o.overrideArgs == null ? "approved" : "approved with edited arguments";
    return a.results?.approvals?.[id] === undefined ? `left without a decision (the request ${a.status})` : "denied";
}
function editedArgs(c, o, problems) {
    const args = toolArgs(o.overrideArgs);
    if (isObject(args))
        return args;
    problems.push(`${c.id} (${c.name}) was approved with edited arguments that are no JSON object`);
    return c.args;
}
function hitlDecision(c, allowed, a, problems) {
    const o = outcomeOf(c.id, a.results?.approvals?.[c.id], a);
    let d;
    if (!o.approved)
        d = { type: "reject", message: o.message };
    else if (o.overrideArgs != null)
        d = { type: "edit", editedAction: { name: c.name, args: editedArgs(c, o, problems) } };
    else
        d = { type: "approve" };
    if (!allowed.includes(d.type))
        problems.push(`${c.id} (${c.name}) was ${decided(a, c.id, o)}, but its allowed decisions are ${allowed.join(", ") || "none"}`);
    return d;
}
function notAllowed(i, a, problems) {
    return new InterruptError("decision_not_allowed", `request ${a.token}, ${named(i)}: ${problems.join("; ")}. Nothing was sent to the graph, which stays interrupted`, i.id);
}
function readInbox(i, v, opts) {
    const read = v.map((raw, k) => {
        const h = raw;
        const { action, args } = h.action_request;
        if (typeof action !== "string" || action === "" || !isObject(args)) {
            throw malformed(i, `a HumanInterrupt whose [${k}].action_request is not {action, args: an object}: ${preview(h.action_request)}`);
        }
        // A permission that is not exactly true is not given.
        const allow = (name) => h.config[name] === true;
        const config = { allow_accept: allow("allow_accept"), allow_edit: allow("allow_edit"), allow_respond: allow("allow_respond"), allow_ignore: allow("allow_ignore") };
        return { action, args, config };
    });
    const ids = idsOr(i, opts, read.length, () => synthetic(i, read.length));
    const calls = read.map((r, k) => ({ id: ids[k], name: r.action, args: r.args, schema: r.config.allow_edit ? schemaOf(opts.argsSchemas, r.action) : undefined }));
    return {
        interrupt: i,
        calls,
        answer(a) {
            const problems = [];
            const responses = calls.map((c, k) => inboxResponse(c, read[k].config, a, problems));
            if (problems.length > 0)
                throw notAllowed(i, a, problems);
            return responses;
        },
    };
}
function allowsOf(cfg) {
    const on = ["accept", "edit", "respond", "ignore"].filter((n) => cfg[`allow_${n}`]);
    return on.length === 0 ? "nothing" : `${on.join(", ")} only`;
}
/** inboxResponse: approve → accept, edited → edit, denied → response with the reason, else ignore. */
function inboxResponse(c, cfg, a, problems) {
    const o = outcomeOf(c.id, a.results?.approvals?.[c.id], a);
    const refuse = () => {
        problems.push(`${c.id} (${c.name}) was ${decided(a, c.id, o)}, but its config allows ${allowsOf(cfg)}`);
        return { type: "ignore", args: null };
    };
    if (!o.approved) {
        if (cfg.allow_respond)
            return { type: "response", args: o.message ?? "The tool call was denied." };
        return cfg.allow_ignore ? { type: "ignore", args: null } : refuse();
    }
    if (o.overrideArgs != null)
        return cfg.allow_edit ? { type: "edit", args: { action: c.name, args: editedArgs(c, o, problems) } } : refuse();
    return cfg.allow_accept ? { type: "accept", args: null } : refuse();
}
