// What every live test shares: the slackbot under test and its approvers.
// TestTypeScriptClients (httpapi) starts slackbot with a fake Slack
// and a real Redis and passes SLACKBOT_URL, SLACKBOT_API_KEY and
// SLACKBOT_CONTROL_URL; without them the tests fail, saying how to run them.

import { randomUUID } from "node:crypto";
import { SlackbotClient } from "../../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is unset: run the tests with npm test (it starts slackbot: go test -run TestTypeScriptClients ./httpapi/)`);
  }
  return v;
}

export const slackbotURL = env("SLACKBOT_URL");
export const apiKey = env("SLACKBOT_API_KEY");
const controlURL = env("SLACKBOT_CONTROL_URL");

/** client is a SlackbotClient of the slackbot under test, with short long polls. */
export const client = new SlackbotClient(slackbotURL, apiKey, { pollSeconds: 2 });

/** uniqueId is a fresh tool call id: ids feed the idempotency key. */
export function uniqueId(prefix: string): string {
  return `${prefix}_${randomUUID().slice(0, 8)}`;
}

async function control(path: string, body: unknown): Promise<void> {
  const resp = await fetch(controlURL + path, { method: "POST", body: JSON.stringify(body) });
  if (!resp.ok) throw new Error(`control ${path}: ${resp.status} ${await resp.text()}`);
}

/** Action is a button on a card. */
export type Action = "approve" | "deny" | "deny_reason";

/** click makes an approver (U0ALICE by default) click a call's card, signed as Slack signs. */
export function click(token: string, toolCallId: string, action: Action, reason?: string, user?: string): Promise<void> {
  return control("/decide", { token, tool_call_id: toolCallId, action, reason, user });
}
