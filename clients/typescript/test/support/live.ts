// What every live test shares: the slackbot under test and its approvers.
// TestTypeScriptClients (cmd/slackbot) starts slackbot with a fake Slack
// and a real Redis and passes SLACKBOT_URL, SLACKBOT_API_KEY and
// SLACKBOT_CONTROL_URL; without them the tests fail, saying how to run them.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { type KeySet, type ReceiptClaims, SlackbotClient, fetchJwks, verifyMetadata } from "../../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is unset: run the tests with npm test (it starts slackbot: go test -run TestTypeScriptClients ./cmd/slackbot/)`);
  }
  return v;
}

export const slackbotURL = env("SLACKBOT_URL");
export const apiKey = env("SLACKBOT_API_KEY");
const controlURL = env("SLACKBOT_CONTROL_URL");

/** client is a SlackbotClient of the slackbot under test, with short long polls. */
export const client = new SlackbotClient(slackbotURL, apiKey, { pollSeconds: 2 });

/** uniqueId is a fresh tool call id, so that no test finds another test's cards. */
export function uniqueId(prefix: string): string {
  return `${prefix}_${randomUUID().slice(0, 8)}`;
}

/**
 * selfApproved is the route (internal/apitest's routing file) on which the
 * API key that opened a request may approve or deny its own calls: a test
 * whose program answers its own approvals names it; on every other route
 * only the approvers' clicks decide.
 */
export const selfApproved = "self-approved";

async function control(path: string, body: unknown): Promise<void> {
  const resp = await fetch(controlURL + path, { method: "POST", body: JSON.stringify(body) });
  if (resp.status === 422) throw new FormRefused(await resp.text());
  if (!resp.ok) throw new Error(`control ${path}: ${resp.status} ${await resp.text()}`);
}

/** FormRefused is slackbot's refusal of a submitted form: its answer holds the problems under the inputs. */
export class FormRefused extends Error {}

/**
 * editInSlack makes an approver (U0ALICE by default) click Edit on a call's
 * card and submit the edit form with args (an object, or the form's raw
 * text), signed as Slack signs; it throws FormRefused if slackbot refuses
 * the edit. Approving with the edit is the form's submission.
 */
export function editInSlack(token: string, toolCallId: string, args: Record<string, unknown> | string, user?: string): Promise<void> {
  return control("/decide", { token, tool_call_id: toolCallId, action: "edit", args: typeof args === "string" ? args : JSON.stringify(args, null, 2), user });
}

/** Action is a button on a card. */
export type Action = "approve" | "deny" | "deny_reason";

/** click makes an approver (U0ALICE by default) click a call's card, signed as Slack signs. */
export function click(token: string, toolCallId: string, action: Action, reason?: string, user?: string): Promise<void> {
  return control("/decide", { token, tool_call_id: toolCallId, action, reason, user });
}

let keys: Promise<KeySet> | undefined;

/** jwks is the receipt keys of the slackbot under test (its /.well-known/jwks.json). */
export function jwks(): Promise<KeySet> {
  keys ??= fetchJwks(slackbotURL);
  return keys;
}

/**
 * assertReceipt checks that the approved delete_file call callId of the
 * request token carries a receipt slackbot signed for exactly args (the
 * arguments that ran) on that request, and for no other arguments.
 */
export async function assertReceipt(token: string, callId: string, args: Record<string, unknown>): Promise<ReceiptClaims> {
  const md = (await client.get(token)).results?.metadata?.[callId];
  const claims = await verifyMetadata(md, await jwks(), { callId, tool: "delete_file", args, token });
  await assert.rejects(verifyMetadata(md, await jwks(), { callId, tool: "delete_file", args: { ...args, extra: 1 }, token }), { kind: "mismatch" });
  return claims;
}

/** assertNoReceipt checks that call callId of the request token, not approved, has no receipt. */
export async function assertNoReceipt(token: string, callId: string): Promise<void> {
  const a = await client.get(token);
  assert.notEqual(a.status, "pending");
  assert.equal(a.results?.metadata?.[callId]?.slackbot_receipt, undefined, `${callId} was not approved, yet has a receipt`);
}
