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

import type { Approval } from "./client.js";
import { canonicalJson } from "./canonical.js";
import { type ArgsSchemas, type Outcome, nonceOf, outcomeOf, toolArgs } from "./decisions.js";

/** InterruptErrorKind says why the adapter cannot answer an interrupt. */
export type InterruptErrorKind = "unknown_interrupt" | "malformed_interrupt" | "decision_not_allowed" | "not_interrupted" | "unknown_call";

/** InterruptError is an interrupt the adapter cannot answer; the thread stays interrupted and nothing was sent to it. */
export class InterruptError extends Error {
  constructor(
    readonly kind: InterruptErrorKind,
    message: string,
    /** The interrupt's id (LangGraph's), when it has one. */
    readonly interruptId?: string,
  ) {
    super(`slackbot/langgraph: ${message}`);
    this.name = "InterruptError";
  }
}

/** Interrupt is LangGraph's interrupt record ({id, value}) as invoke's __interrupt__ holds it. */
export interface Interrupt {
  id?: string;
  value?: unknown;
}

/** Asked is one tool call an interrupt asks about, as slackbot gets it. */
export interface Asked {
  id: string;
  name: string;
  args: Record<string, unknown>;
  /** The JSON Schema of its arguments, only where the interrupt's rules allow an edit: the card then offers Edit. */
  schema?: Record<string, unknown>;
}

/** Reading is one interrupt as the adapter understands it: its calls, and how to answer them. */
export interface Reading {
  interrupt: Interrupt;
  calls: Asked[];
  /** answer is the resume value for this interrupt as the ended request a decided its calls. */
  answer(a: Approval): unknown;
  /**
   * notRun names the calls a approved that the framework will not run
   * all the same, and why (absent: it runs every approved call).
   */
  notRun?(a: Approval): Array<{ id: string; why: string }>;
}

/** ReadOptions are what a reading needs beyond the interrupt. */
export interface ReadOptions {
  /** Tool name → JSON Schema of its arguments, for the calls whose rules allow an edit. */
  argsSchemas?: ArgsSchemas;
  /** The ids the calls were submitted under (Suspended.call_ids), else derived. */
  ids?: readonly string[];
  /** The graph state's messages: a HITLRequest's calls take the ids of the AI message's tool calls they are. */
  messages?: unknown;
}

// --- shapes (structural copies, so the package needs neither langchain nor LangGraph at runtime) ---

/** PendingToolCall is a LangChain tool call: {id, name, args}. */
export interface PendingToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** PendingToolCalls is the interrupt value of pendingToolCalls(). */
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

/** HITLDecisionType is one of LangChain's decision types (langchain 1.5.14, DecisionType). */
export type HITLDecisionType = "approve" | "edit" | "reject";

/** HITLRequest is humanInTheLoopMiddleware's interrupt value (langchain 1.5.14). */
export interface HITLRequest {
  actionRequests: Array<{ name: string; args: Record<string, unknown>; description?: string }>;
  reviewConfigs: Array<{ actionName: string; allowedDecisions: HITLDecisionType[]; argsSchema?: Record<string, unknown> }>;
}

/** HITLDecision is one decision of a HITLResponse. */
export type HITLDecision =
  | { type: "approve" }
  | { type: "edit"; editedAction: { name: string; args: Record<string, unknown> } }
  | { type: "reject"; message?: string };

/** HITLResponse is the resume value humanInTheLoopMiddleware expects: one decision per action request, in order. */
export interface HITLResponse {
  decisions: HITLDecision[];
}

/** HumanInterruptConfig is what a HumanInterrupt allows (@langchain/langgraph 1.7.3, prebuilt). */
export interface HumanInterruptConfig {
  allow_ignore: boolean;
  allow_respond: boolean;
  allow_edit: boolean;
  allow_accept: boolean;
}

/** HumanInterrupt is one Agent Inbox request; the interrupt value is an array of them. */
export interface HumanInterrupt {
  action_request: { action: string; args: Record<string, unknown> };
  config: HumanInterruptConfig;
  description?: string;
}

/** HumanResponse answers one HumanInterrupt; the resume value is an array of them, in order. */
export type HumanResponse =
  | { type: "accept"; args: null }
  | { type: "ignore"; args: null }
  | { type: "response"; args: string }
  | { type: "edit"; args: { action: string; args: Record<string, unknown> } };

// --- reading ---

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** isPending reports whether v is a PendingToolCalls value. */
export function isPending(v: unknown): v is PendingToolCalls {
  return (v as PendingToolCalls | undefined)?.type === "slackbot/tool-approvals" && Array.isArray((v as PendingToolCalls).tool_calls);
}

function isHITLRequest(v: unknown): boolean {
  return isObject(v) && Array.isArray(v.actionRequests) && Array.isArray(v.reviewConfigs);
}

function isInbox(v: unknown): boolean {
  return Array.isArray(v) && v.length > 0 && v.every((h) => isObject(h) && isObject(h.action_request) && isObject(h.config));
}

/** preview is a short, bounded view of an interrupt's value for an error message. */
export function preview(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = Object.prototype.toString.call(v);
  }
  return s.length > 160 ? `${s.slice(0, 160)}…` : s;
}

function named(i: Interrupt): string {
  return i.id ? `interrupt ${i.id}` : "an interrupt with no id";
}

/**
 * readInterrupt reads one interrupt the adapter understands, or throws
 * InterruptError (unknown_interrupt, malformed_interrupt) naming it.
 */
export function readInterrupt(i: Interrupt, opts: ReadOptions = {}): Reading {
  const v = i.value;
  if (isPending(v)) return readPending(i, v, opts);
  if (isHITLRequest(v)) return readHITL(i, v as Record<string, unknown>, opts);
  if (isInbox(v)) return readInbox(i, v as unknown[], opts);
  throw new InterruptError(
    "unknown_interrupt",
    `the graph stopped on ${named(i)}, whose value this adapter does not answer: ${preview(v)}. It answers ` +
      "interrupt(pendingToolCalls(calls)), LangChain's humanInTheLoopMiddleware (HITLRequest) and LangGraph's HumanInterrupt[]; " +
      "answer this one with your own Command({ resume })",
    i.id,
  );
}

function malformed(i: Interrupt, problem: string): InterruptError {
  return new InterruptError("malformed_interrupt", `${named(i)} looks like ${problem}`, i.id);
}

/** synthetic are ids for calls that carry none: unique to the interrupt, the same each time it is read. */
function synthetic(i: Interrupt, n: number): string[] {
  const base = i.id ?? nonceOf(i);
  return Array.from({ length: n }, (_, k) => `${base}:${k}`);
}

function idsOr(i: Interrupt, opts: ReadOptions, n: number, derive: () => string[]): string[] {
  if (opts.ids === undefined) return derive();
  if (opts.ids.length !== n) {
    throw new InterruptError("malformed_interrupt", `${named(i)} asks about ${n} calls, but the stored round gives it ${opts.ids.length} call ids`, i.id);
  }
  return [...opts.ids];
}

function readPending(i: Interrupt, v: PendingToolCalls, opts: ReadOptions): Reading {
  const calls = v.tool_calls.map((c) => ({ id: c.id, name: c.name, args: c.args, schema: schemaOf(opts.argsSchemas, c.name) }));
  return {
    interrupt: i,
    calls,
    answer(a) {
      const d: Decisions = {};
      for (const c of v.tool_calls) d[c.id] = pendingDecision(c, outcomeOf(c.id, a.results?.approvals?.[c.id], a));
      return d;
    },
  };
}

function pendingDecision(call: PendingToolCall, o: Outcome): ToolDecision {
  if (!o.approved) return { type: "reject", message: o.message ?? "The tool call was denied.", decidedBy: o.decidedBy };
  if (o.overrideArgs == null) return { type: "approve", args: call.args, edited: false, decidedBy: o.decidedBy };
  const edited = toolArgs(o.overrideArgs);
  const args = edited !== null && typeof edited === "object" ? edited : call.args;
  return { type: "approve", args, edited: true, decidedBy: o.decidedBy };
}

function schemaOf(schemas: ArgsSchemas | undefined, tool: string): Record<string, unknown> | undefined {
  return schemas && Object.hasOwn(schemas, tool) ? schemas[tool] : undefined;
}

const hitlTypes: readonly string[] = ["approve", "edit", "reject"];

function readHITL(i: Interrupt, v: Record<string, unknown>, opts: ReadOptions): Reading {
  const actions = v.actionRequests as unknown[];
  const configs = v.reviewConfigs as unknown[];
  if (actions.length === 0) throw malformed(i, "a HITLRequest with no actionRequests");
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
      const problems: string[] = [];
      const decisions = calls.map((c, k) => hitlDecision(c, read[k].cfg.allowed, a, problems));
      if (problems.length > 0) throw notAllowed(i, a, problems);
      return { decisions } satisfies HITLResponse;
    },
    // langchain 1.5.14 (dist/agents/middleware/hitl.js): once any decision
    // of the batch is a rejection, the middleware runs none of its calls
    // and asks the model again, so an approved call there never runs.
    notRun(a) {
      const problems: string[] = [];
      const decisions = calls.map((c, k) => hitlDecision(c, read[k].cfg.allowed, a, problems));
      if (problems.length > 0 || !decisions.some((d) => d.type === "reject")) return [];
      const why = "LangChain's humanInTheLoopMiddleware runs none of a batch of calls once one of them is rejected; the model was asked again";
      return calls.filter((_, k) => decisions[k].type !== "reject").map((c) => ({ id: c.id, why }));
    },
  };
}

interface ReviewConfig {
  allowed: HITLDecisionType[];
  argsSchema?: Record<string, unknown>;
}

/**
 * reviewConfigOf finds action k's review config: the middleware writes one
 * per action, in order; a request written by hand may hold one per tool
 * name instead. An action without one, or with a decision LangChain does
 * not know, is refused: what people may decide would be a guess.
 */
function reviewConfigOf(i: Interrupt, configs: unknown[], k: number, name: string): ReviewConfig {
  const at = configs[k];
  const raw = isObject(at) && at.actionName === name ? at : configs.find((c) => isObject(c) && c.actionName === name);
  if (!isObject(raw)) throw malformed(i, `a HITLRequest with no reviewConfig for action ${k} (${name})`);
  const allowed = raw.allowedDecisions;
  if (!Array.isArray(allowed) || !allowed.every((d) => typeof d === "string" && hitlTypes.includes(d))) {
    throw malformed(i, `a HITLRequest whose reviewConfig for ${name} has allowedDecisions ${preview(allowed)}, not a list of approve, edit, reject`);
  }
  if (raw.argsSchema !== undefined && !isObject(raw.argsSchema)) throw malformed(i, `a HITLRequest whose reviewConfig for ${name} has an argsSchema that is no object`);
  return { allowed: allowed as HITLDecisionType[], argsSchema: raw.argsSchema as Record<string, unknown> | undefined };
}

/**
 * messageIds gives the HITLRequest's calls the ids of the tool calls they
 * are: the middleware asks about the last AI message's tool calls, in
 * order, leaving out those it lets run. Matched by name and arguments, so
 * the receipt slackbot signs names the call id the tool itself sees.
 */
function messageIds(messages: unknown, read: ReadonlyArray<{ name: string; args: Record<string, unknown> }>): string[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  const ai = [...messages].reverse().find((m) => isObject(m) && Array.isArray(m.tool_calls)) as { tool_calls: unknown[] } | undefined;
  if (!ai) return undefined;
  const ids: string[] = [];
  for (const tc of ai.tool_calls) {
    const want = read[ids.length];
    if (!want || !isObject(tc) || typeof tc.id !== "string" || tc.id === "" || tc.name !== want.name) continue;
    if (sameArgs(tc.args, want.args)) ids.push(tc.id);
  }
  return ids.length === read.length && new Set(ids).size === ids.length ? ids : undefined;
}

function sameArgs(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

/** decided names what became of a call, for an error. */
function decided(a: Approval, id: string, o: Outcome): string {
  if (o.approved) return o.overrideArgs == null ? "approved" : "approved with edited arguments";
  return a.results?.approvals?.[id] === undefined ? `left without a decision (the request ${a.status})` : "denied";
}

function editedArgs(c: Asked, o: Outcome, problems: string[]): Record<string, unknown> {
  const args = toolArgs(o.overrideArgs);
  if (isObject(args)) return args;
  problems.push(`${c.id} (${c.name}) was approved with edited arguments that are no JSON object`);
  return c.args;
}

function hitlDecision(c: Asked, allowed: readonly HITLDecisionType[], a: Approval, problems: string[]): HITLDecision {
  const o = outcomeOf(c.id, a.results?.approvals?.[c.id], a);
  let d: HITLDecision;
  if (!o.approved) d = { type: "reject", message: o.message };
  else if (o.overrideArgs != null) d = { type: "edit", editedAction: { name: c.name, args: editedArgs(c, o, problems) } };
  else d = { type: "approve" };
  if (!allowed.includes(d.type)) problems.push(`${c.id} (${c.name}) was ${decided(a, c.id, o)}, but its allowed decisions are ${allowed.join(", ") || "none"}`);
  return d;
}

function notAllowed(i: Interrupt, a: Approval, problems: string[]): InterruptError {
  return new InterruptError(
    "decision_not_allowed",
    `request ${a.token}, ${named(i)}: ${problems.join("; ")}. Nothing was sent to the graph, which stays interrupted`,
    i.id,
  );
}

function readInbox(i: Interrupt, v: unknown[], opts: ReadOptions): Reading {
  const read = v.map((raw, k) => {
    const h = raw as { action_request: Record<string, unknown>; config: Record<string, unknown> };
    const { action, args } = h.action_request;
    if (typeof action !== "string" || action === "" || !isObject(args)) {
      throw malformed(i, `a HumanInterrupt whose [${k}].action_request is not {action, args: an object}: ${preview(h.action_request)}`);
    }
    // A permission that is not exactly true is not given.
    const allow = (name: keyof HumanInterruptConfig) => h.config[name] === true;
    const config: HumanInterruptConfig = { allow_accept: allow("allow_accept"), allow_edit: allow("allow_edit"), allow_respond: allow("allow_respond"), allow_ignore: allow("allow_ignore") };
    return { action, args, config };
  });
  const ids = idsOr(i, opts, read.length, () => synthetic(i, read.length));
  const calls = read.map((r, k) => ({ id: ids[k], name: r.action, args: r.args, schema: r.config.allow_edit ? schemaOf(opts.argsSchemas, r.action) : undefined }));
  return {
    interrupt: i,
    calls,
    answer(a) {
      const problems: string[] = [];
      const responses = calls.map((c, k) => inboxResponse(c, read[k].config, a, problems));
      if (problems.length > 0) throw notAllowed(i, a, problems);
      return responses;
    },
  };
}

function allowsOf(cfg: HumanInterruptConfig): string {
  const on = (["accept", "edit", "respond", "ignore"] as const).filter((n) => cfg[`allow_${n}`]);
  return on.length === 0 ? "nothing" : `${on.join(", ")} only`;
}

/** inboxResponse: approve → accept, edited → edit, denied → response with the reason, else ignore. */
function inboxResponse(c: Asked, cfg: HumanInterruptConfig, a: Approval, problems: string[]): HumanResponse {
  const o = outcomeOf(c.id, a.results?.approvals?.[c.id], a);
  const refuse = (): HumanResponse => {
    problems.push(`${c.id} (${c.name}) was ${decided(a, c.id, o)}, but its config allows ${allowsOf(cfg)}`);
    return { type: "ignore", args: null };
  };
  if (!o.approved) {
    if (cfg.allow_respond) return { type: "response", args: o.message ?? "The tool call was denied." };
    return cfg.allow_ignore ? { type: "ignore", args: null } : refuse();
  }
  if (o.overrideArgs != null) return cfg.allow_edit ? { type: "edit", args: { action: c.name, args: editedArgs(c, o, problems) } } : refuse();
  return cfg.allow_accept ? { type: "accept", args: null } : refuse();
}
