// What every adapter shares: reading an ended request's decision on one
// call, the arguments a framework hands over, and idempotency keys (one
// per round of a run, never the call ids alone).

import type { Approval, ApprovalResult, CreateOptions, DeferredToolRequests, SlackbotClient, ToolCall } from "./client.js";
import { MetadataKey } from "./receipt.js";

/** Outcome is what happened to one call. */
export interface Outcome {
  callId: string;
  approved: boolean;
  /** The denial reason the model sees. */
  message?: string;
  /** The edited arguments the tool runs with. */
  overrideArgs?: unknown;
  decidedBy?: string;
  /**
   * The approval receipt slackbot signed for an approved call: hand it to
   * the tool, which checks it with verifyReceipt before acting.
   */
  receipt?: string;
}

/** RunOutcome is an Outcome and what became of the call once the framework acted on it. */
export interface RunOutcome extends Outcome {
  /** Whether the approved call ran; undefined for a call not approved, or whose result the SDK did not give. */
  ran?: boolean;
  /** Why the approved call did not run, or how its tool failed. */
  error?: string;
  /** Why slackbot could not be told what became of the call, if it could not. */
  reportError?: string;
}

/**
 * reportUnrun tells slackbot (SlackbotClient.reportOutcome) about each
 * outcome marked ran: false, a call the framework did not run although it
 * was approved, so its card says it did not run and why instead of
 * "approved". A report slackbot refuses or cannot take is kept in
 * reportError, not thrown: the run goes on.
 */
export async function reportUnrun(client: SlackbotClient, token: string, outcomes: readonly RunOutcome[]): Promise<void> {
  await Promise.all(
    outcomes
      .filter((o) => o.ran === false)
      .map(async (o) => {
        try {
          await client.reportOutcome(token, { tool_call_id: o.callId, ran: false, ...(o.error ? { error: o.error.slice(0, 1000) } : {}) });
        } catch (err) {
          o.reportError = err instanceof Error ? err.message : String(err);
        }
      }),
  );
}

function noDecision(a: Approval): string {
  return `No decision on this tool call arrived: the request ${a.status === "resolved" ? "ended" : a.status}.`;
}

/** outcomeOf reads the decision on call id from an ended request. */
export function outcomeOf(id: string, r: ApprovalResult | undefined, a: Approval): Outcome {
  const decidedBy = a.results?.answered_by?.[id];
  const signed = a.results?.metadata?.[id]?.[MetadataKey];
  const receipt = typeof signed === "string" ? signed : undefined;
  if (r === true) return { callId: id, approved: true, decidedBy, receipt };
  if (r === false) return { callId: id, approved: false, message: "The tool call was denied.", decidedBy };
  if (r?.kind === "tool-approved") return { callId: id, approved: true, overrideArgs: r.override_args ?? undefined, decidedBy, receipt };
  if (r?.kind === "tool-denied") return { callId: id, approved: false, message: r.message || "The tool call was denied.", decidedBy };
  return { callId: id, approved: false, message: noDecision(a) };
}

/**
 * toolArgs turns a framework's arguments (a JSON string or a value) into
 * /v1's args: an object, a string holding something else, or null.
 */
export function toolArgs(raw: unknown): ToolCall["args"] {
  if (raw === undefined || raw === null || raw === "") return null;
  let v = raw;
  if (typeof raw === "string") {
    try {
      v = JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  return typeof raw === "string" ? raw : JSON.stringify(raw);
}

/**
 * idempotencyKeyOf names one round of one run's calls: run holds what is
 * unique to that round of that run (the framework's own ids for it, or
 * nonceOf's), ids the call ids. A retried submit of the same round finds
 * the same request; another run gets its own request and cards even when
 * its model reuses call ids (mock models and some OpenAI-compatible
 * servers do), so it never receives an earlier run's decisions.
 */
export async function idempotencyKeyOf(framework: string, run: readonly string[], ids: readonly string[]): Promise<string> {
  const named = JSON.stringify([[...run].sort(), [...ids].sort()]);
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(named));
  return `${framework}:` + Array.from(new Uint8Array(d).slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

const nonces = new WeakMap<object, string>();

/**
 * nonceOf is a random id bound to o for as long as o lives: for a
 * framework whose objects of one round (its interruptions) carry nothing
 * unique to the run, the same objects submitted again name the same round,
 * and the next run's (or round's) new objects another.
 */
export function nonceOf(o: object): string {
  let n = nonces.get(o);
  if (n === undefined) {
    n = crypto.randomUUID();
    nonces.set(o, n);
  }
  return n;
}

/**
 * ArgsSchemaKey is the member of a call's metadata that carries its tool's
 * JSON Schema: with it, an approver can edit the call's arguments on its
 * Slack card, and slackbot checks the edit against the schema (and the
 * route's auto_deny) before the tool runs with it.
 */
export const ArgsSchemaKey = "slackbot_args_schema";

/** ArgsSchemas are the JSON Schemas of tools' arguments, by tool name. */
export type ArgsSchemas = Record<string, Record<string, unknown>>;

/** SubmitOptions are the create options plus the tools' schemas, which make their calls editable in Slack. */
export interface SubmitOptions extends CreateOptions {
  /** argsSchemas: tool name → JSON Schema of its arguments (the tool's parameters). */
  argsSchemas?: ArgsSchemas;
}

/** withArgsSchemas returns requests with the schema of every approval's tool that schemas has, in its metadata. */
export function withArgsSchemas(requests: DeferredToolRequests, schemas: ArgsSchemas | undefined): DeferredToolRequests {
  if (!schemas) return requests;
  const metadata = { ...requests.metadata };
  for (const c of requests.approvals ?? []) {
    const schema = Object.hasOwn(schemas, c.tool_name) ? schemas[c.tool_name] : undefined;
    if (schema) metadata[c.tool_call_id] = { ...metadata[c.tool_call_id], [ArgsSchemaKey]: schema };
  }
  return Object.keys(metadata).length > 0 ? { ...requests, metadata } : requests;
}
