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

import type { Approval, DeferredToolRequests, SlackbotClient } from "./client.js";
import { type Outcome, type SubmitOptions, idempotencyKeyOf, outcomeOf, toolArgs, withArgsSchemas } from "./decisions.js";

export type { Outcome } from "./decisions.js";

/** ToolCallPart is the SDK's tool-call part (in result.content and in messages). */
export interface ToolCallPart {
  type: "tool-call";
  toolCallId: string;
  toolName: string;
  input: unknown;
  [k: string]: unknown;
}

/** ApprovalRequestPart is the SDK's tool-approval-request part of result.content. */
export interface ApprovalRequestPart {
  type: "tool-approval-request";
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

/** ApprovalResponsePart is the SDK's tool-approval-response part. */
export interface ApprovalResponsePart {
  type: "tool-approval-response";
  approvalId: string;
  approved: boolean;
  reason?: string;
}

/** Message is a model message as the SDK's response.messages hold them. */
export interface Message {
  role: string;
  content: unknown;
  [k: string]: unknown;
}

/** StepResult is what generateText's result (or an awaited streamText's) offers the adapter. */
export interface StepResult {
  readonly content: ReadonlyArray<{ type: string }>;
  readonly response: { readonly messages: readonly Message[] };
}

/** approvalRequests returns the tool-approval-request parts of a result. */
export function approvalRequests(result: StepResult): ApprovalRequestPart[] {
  return result.content.filter((p): p is ApprovalRequestPart => p.type === "tool-approval-request");
}

/** requestsFor turns approval requests into one DeferredToolRequests. */
export function requestsFor(parts: readonly ApprovalRequestPart[]): DeferredToolRequests {
  return {
    approvals: parts.map((p) => ({ tool_name: p.toolCall.toolName, args: toolArgs(p.toolCall.input), tool_call_id: p.toolCall.toolCallId })),
  };
}

/** Answer is what to send next: append messages to the conversation and call the model again. */
export interface Answer {
  /** result.response.messages (edited arguments applied) and one tool message of approval responses. */
  messages: Message[];
  outcomes: Outcome[];
  approval: Approval;
}

/**
 * answer builds the messages that answer a result's approval requests as
 * the ended request a says: the response messages, with the input of each
 * call approved with edited arguments replaced, then one tool message of
 * tool-approval-response parts. A call nobody decided is denied with a
 * reason saying no decision arrived.
 */
export function answer(result: StepResult, a: Approval): Answer {
  const parts = approvalRequests(result);
  const outcomes = parts.map((p) => outcomeOf(p.toolCall.toolCallId, a.results?.approvals?.[p.toolCall.toolCallId], a));
  const edits = new Map(outcomes.filter((o) => o.approved && o.overrideArgs != null).map((o) => [o.callId, o.overrideArgs]));
  const messages = result.response.messages.map((m) => {
    if (m.role !== "assistant" || !Array.isArray(m.content) || edits.size === 0) return m;
    const content = m.content.map((p: ToolCallPart) =>
      p?.type === "tool-call" && edits.has(p.toolCallId) ? { ...p, input: editedInput(edits.get(p.toolCallId)) } : p,
    );
    return { ...m, content };
  });
  const responses: ApprovalResponsePart[] = parts.map((p, i) => {
    const o = outcomes[i];
    return o.approved
      ? { type: "tool-approval-response", approvalId: p.approvalId, approved: true }
      : { type: "tool-approval-response", approvalId: p.approvalId, approved: false, reason: o.message };
  });
  return { messages: [...messages, { role: "tool", content: responses }], outcomes, approval: a };
}

function editedInput(v: unknown): unknown {
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/**
 * AskOptions are the create options, the tools' schemas (argsSchemas, e.g.
 * from argsSchemasOf(tools): approvers can then edit the calls in Slack),
 * an abort signal for the wait, and onPending.
 */
export interface AskOptions extends SubmitOptions {
  signal?: AbortSignal;
  /** onPending sees the request once its cards are posted, before the wait (e.g. to log the token). */
  onPending?: (pending: Approval) => void | Promise<void>;
}

/**
 * submit hands a result's approval requests to slackbot and returns the
 * pending request. Its idempotency key names the approval ids the SDK drew
 * for this result (random, and kept in the conversation) with the call
 * ids: the same result submitted again finds the same request, another
 * run's its own, whatever call ids its model reuses.
 */
export async function submit(client: SlackbotClient, result: StepResult, opts: SubmitOptions = {}): Promise<Approval> {
  const { argsSchemas, ...create } = opts;
  const parts = approvalRequests(result);
  const key = await idempotencyKeyOf("ai-sdk", parts.map((p) => p.approvalId), parts.map((p) => p.toolCall.toolCallId));
  return client.create(withArgsSchemas(requestsFor(parts), argsSchemas), { idempotency_key: key, ...create });
}

/** SchemaOf is the SDK's asSchema (from "ai"): a tool's inputSchema as a JSON Schema. */
export type SchemaOf = (inputSchema: never) => { jsonSchema: unknown };

/**
 * argsSchemasOf returns the JSON Schema of each tool's input, by name, for
 * AskOptions.argsSchemas: pass the tools given to generateText and the
 * SDK's asSchema (import { asSchema } from "ai").
 */
export async function argsSchemasOf(tools: Record<string, { inputSchema?: unknown }>, asSchema: SchemaOf): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, t] of Object.entries(tools)) {
    if (t.inputSchema === undefined) continue;
    const schema = await asSchema(t.inputSchema as never).jsonSchema;
    if (schema !== null && typeof schema === "object") out[name] = schema as Record<string, unknown>;
  }
  return out;
}

/**
 * ask submits the result's approval requests, waits while people decide,
 * and returns the messages to append before calling the model again;
 * undefined when the result asks for no approval.
 */
export async function ask(client: SlackbotClient, result: StepResult, opts: AskOptions = {}): Promise<Answer | undefined> {
  if (approvalRequests(result).length === 0) return undefined;
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
export async function generateWithApprovals<R extends StepResult>(
  generate: (messages: Message[]) => Promise<R>,
  messages: Message[],
  client: SlackbotClient,
  opts: AskOptions = {},
): Promise<{ result: R; messages: Message[] }> {
  let conversation = [...messages];
  for (;;) {
    const result = await generate(conversation);
    const a = await ask(client, result, opts);
    if (!a) return { result, messages: [...conversation, ...result.response.messages] };
    conversation = [...conversation, ...a.messages];
  }
}

/**
 * Suspended is a conversation stopped on approval requests and the
 * slackbot token deciding them: plain JSON, store it anywhere.
 */
export interface Suspended {
  token: string;
  /** The conversation so far, the result's response messages included. */
  messages: Message[];
  /** The result's tool-approval-request parts. */
  approvals: ApprovalRequestPart[];
}

/**
 * suspend hands a result's approval requests to slackbot and returns what
 * to store; no process waits. conversation is the messages the result was
 * generated from.
 */
export async function suspend(
  client: SlackbotClient,
  result: StepResult,
  conversation: readonly Message[],
  opts: SubmitOptions = {},
): Promise<Suspended> {
  const a = await submit(client, result, opts);
  return { token: a.token, messages: [...conversation, ...result.response.messages], approvals: approvalRequests(result) };
}

/**
 * resume returns the conversation to generate from once a suspended
 * request has ended (waiting when opts.wait is set): the stored messages,
 * edited arguments applied, then the approval responses; undefined while
 * people are still deciding.
 */
export async function resume(
  client: SlackbotClient,
  saved: Suspended,
  opts: { wait?: boolean; signal?: AbortSignal } = {},
): Promise<Message[] | undefined> {
  const a = opts.wait ? await client.wait(saved.token, { signal: opts.signal }) : await client.get(saved.token);
  if (a.status === "pending") return undefined;
  return answer({ content: saved.approvals, response: { messages: saved.messages } }, a).messages;
}
