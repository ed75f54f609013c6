import type { Approval, ApprovalResult, CreateOptions, DeferredToolRequests, SlackbotClient, ToolCall } from "./client.js";
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
export declare function reportUnrun(client: SlackbotClient, token: string, outcomes: readonly RunOutcome[]): Promise<void>;
/** outcomeOf reads the decision on call id from an ended request. */
export declare function outcomeOf(id: string, r: ApprovalResult | undefined, a: Approval): Outcome;
/**
 * toolArgs turns a framework's arguments (a JSON string or a value) into
 * /v1's args: an object, a string holding something else, or null.
 */
export declare function toolArgs(raw: unknown): ToolCall["args"];
/**
 * idempotencyKeyOf names one round of one run's calls: run holds what is
 * unique to that round of that run (the framework's own ids for it, or
 * nonceOf's), ids the call ids. A retried submit of the same round finds
 * the same request; another run gets its own request and cards even when
 * its model reuses call ids (mock models and some OpenAI-compatible
 * servers do), so it never receives an earlier run's decisions.
 */
export declare function idempotencyKeyOf(framework: string, run: readonly string[], ids: readonly string[]): Promise<string>;
/**
 * nonceOf is a random id bound to o for as long as o lives: for a
 * framework whose objects of one round (its interruptions) carry nothing
 * unique to the run, the same objects submitted again name the same round,
 * and the next run's (or round's) new objects another.
 */
export declare function nonceOf(o: object): string;
/**
 * ArgsSchemaKey is the member of a call's metadata that carries its tool's
 * JSON Schema: with it, an approver can edit the call's arguments on its
 * Slack card, and slackbot checks the edit against the schema (and the
 * route's auto_deny) before the tool runs with it.
 */
export declare const ArgsSchemaKey = "slackbot_args_schema";
/** ArgsSchemas are the JSON Schemas of tools' arguments, by tool name. */
export type ArgsSchemas = Record<string, Record<string, unknown>>;
/** SubmitOptions are the create options plus the tools' schemas, which make their calls editable in Slack. */
export interface SubmitOptions extends CreateOptions {
    /** argsSchemas: tool name → JSON Schema of its arguments (the tool's parameters). */
    argsSchemas?: ArgsSchemas;
}
/** withArgsSchemas returns requests with the schema of every approval's tool that schemas has, in its metadata. */
export declare function withArgsSchemas(requests: DeferredToolRequests, schemas: ArgsSchemas | undefined): DeferredToolRequests;
