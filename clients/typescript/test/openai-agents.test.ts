// The OpenAI Agents SDK adapter against the real @openai/agents (its own
// Model interface, scripted) and a live slackbot whose approvers click.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as agents from "@openai/agents";
import * as agentsV014 from "@openai/agents-v0.14";
import type { AgentInputItem, Model, ModelRequest, ModelResponse } from "@openai/agents";
import { z } from "zod";
import { type Approval, verifyReceipt } from "../src/index.js";
import { runWithApprovals, resume, suspend } from "../src/openai-agents.js";
import { FormRefused, assertNoReceipt, click, client, editInSlack, jwks, uniqueId } from "./support/live.js";

function outputText(o: unknown): string {
  if (typeof o === "string") return o;
  const t = (o as { text?: unknown } | undefined)?.text;
  return typeof t === "string" ? t : JSON.stringify(o);
}

/** ScriptedModel asks for delete_file once, then says what the tool results were. */
class ScriptedModel implements Model {
  requests = 0;
  constructor(
    readonly callId: string,
    readonly args: Record<string, unknown>,
  ) {}

  async getResponse(req: ModelRequest): Promise<ModelResponse> {
    this.requests++;
    const items = typeof req.input === "string" ? [] : (req.input as AgentInputItem[]);
    const results = items.filter((i) => i.type === "function_call_result");
    if (results.length === 0) {
      return {
        usage: new agents.Usage(),
        output: [{ type: "function_call", id: `fc_${this.callId}`, callId: this.callId, name: "delete_file", arguments: JSON.stringify(this.args), status: "completed" }],
      };
    }
    const text = results.map((r) => `${(r as { callId: string }).callId}: ${outputText((r as { output: unknown }).output)}`).join("\n");
    return {
      usage: new agents.Usage(),
      output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text }] }],
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
}

/**
 * fixture is an agent whose delete_file needs approval, and what the tool
 * ran with. The tool runs only on a receipt it verified itself, as the
 * README shows: for its call and the raw arguments the SDK hands it, on
 * the request of f.token. callId is fresh unless given (one an earlier
 * run's model used too).
 */
function fixture(sdk: typeof agents, path = "/srv/data", callId = uniqueId("call_oa")) {
  const { Agent, Runner, tool } = sdk;
  const model = new ScriptedModel(callId, { path });
  const ran: string[] = [];
  const f = { token: "" };
  const deleteFile = tool({
    name: "delete_file",
    description: "Deletes a file.",
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    execute: async ({ path }, _ctx, details) => {
      const { callId: id, name, arguments: args } = details!.toolCall!;
      const receipt = (await client.get(f.token)).results?.metadata?.[id]?.slackbot_receipt;
      await verifyReceipt(receipt, await jwks(), { callId: id, tool: name, args, token: f.token });
      ran.push(path);
      return `deleted ${path}`;
    },
  });
  const agent = new Agent({ name: "janitor", instructions: "Clean up.", model, tools: [deleteFile] });
  const runner = new Runner({ tracingDisabled: true });
  const run = (a: typeof agent, input: string | agents.RunState<any, typeof agent>) => runner.run(a, input);
  return Object.assign(f, { callId, model, ran, agent, run });
}

for (const [version, sdk] of [["0.20.0", agents], ["0.14.3", agentsV014 as unknown as typeof agents]] as const) {
const { RunState } = sdk;
describe(`OpenAI Agents SDK ${version}`, () => {
  test("approve: the tool runs once and the model sees its result", async () => {
    const f = fixture(sdk);
    let pending: Approval | undefined;
    const result = await runWithApprovals(f.run, f.agent, "clean /srv/data", client, {
      requester: "janitor agent",
      onPending: async (a) => {
        pending = a;
        f.token = a.token;
        await click(a.token, f.callId, "approve");
      },
    });
    assert.deepEqual(f.ran, ["/srv/data"]);
    assert.equal(result.finalOutput, `${f.callId}: deleted /srv/data`);
    const done = await client.get(pending!.token);
    assert.equal(done.status, "resolved");
    assert.equal(done.results?.answered_by?.[f.callId], "U0ALICE");
    assert.equal(done.calls[0].tool_name, "delete_file");
  });

  test("deny with a reason: the tool never runs and the model sees the reason", async () => {
    const f = fixture(sdk);
    const result = await runWithApprovals(f.run, f.agent, "clean /srv/data", client, {
      onPending: (a) => click((f.token = a.token), f.callId, "deny_reason", "Not on a Friday."),
    });
    assert.deepEqual(f.ran, []);
    assert.equal(result.finalOutput, `${f.callId}: Not on a Friday.`);
    await assertNoReceipt(f.token, f.callId);
  });

  test("plain Deny: the model sees slackbot's denial", async () => {
    const f = fixture(sdk);
    const result = await runWithApprovals(f.run, f.agent, "clean", client, {
      onPending: (a) => click((f.token = a.token), f.callId, "deny"),
    });
    assert.deepEqual(f.ran, []);
    await assertNoReceipt(f.token, f.callId);
    assert.match(String(result.finalOutput), new RegExp(`^${f.callId}: .*denied`, "i"));
  });

  // An approver's edit (a program's override_args arrives the same way).
  test("edited arguments reach the tool: an approver's edit in Slack, checked against the tool's parameters", async () => {
    const f = fixture(sdk, "/srv/all");
    let token = "";
    const result = await runWithApprovals(f.run, f.agent, "clean", client, {
      onPending: async (a) => {
        f.token = token = a.token;
        // The adapter sent delete_file's parameters: the card offers Edit,
        // and an edit that does not fit them is refused in the form.
        await assert.rejects(editInSlack(a.token, f.callId, { path: 7 }), (err: Error) => err instanceof FormRefused && /path/.test(err.message));
        await editInSlack(a.token, f.callId, { path: "/srv/all/tmp" });
      },
    });
    assert.deepEqual(f.ran, ["/srv/all/tmp"]); // the receipt binds the edit: the tool verified it
    assert.equal(result.finalOutput, `${f.callId}: deleted /srv/all/tmp`);
    assert.equal((await client.get(token)).results?.answered_by?.[f.callId], "U0ALICE");
  });

  test("expiry: the tool never runs and the model is told no decision arrived", async () => {
    const f = fixture(sdk);
    let token = "";
    // One second, the shortest timeout slackbot takes; nobody clicks.
    const result = await runWithApprovals(f.run, f.agent, "clean", client, {
      timeout: 1,
      onPending: (a) => {
        token = a.token;
      },
    });
    assert.deepEqual(f.ran, []);
    assert.match(String(result.finalOutput), new RegExp(`^${f.callId}: No decision on this tool call arrived: the request expired`));
    assert.equal((await client.get(token)).status, "expired");
    await assertNoReceipt(token, f.callId);
  });

  // Mock models, some OpenAI-compatible servers and fixed test ids reuse
  // call ids from run to run: each run's approval is its own.
  test("a model that reuses call ids across runs: each run gets its own card", async () => {
    const callId = uniqueId("call_oa_reused");
    const first = fixture(sdk, "/srv/data", callId);
    await runWithApprovals(first.run, first.agent, "clean /srv/data", client, {
      onPending: (a) => click((first.token = a.token), callId, "approve"),
    });
    assert.deepEqual(first.ran, ["/srv/data"]);

    const second = fixture(sdk, "/srv/data", callId);
    const result = await runWithApprovals(second.run, second.agent, "clean /srv/data", client, {
      onPending: (a) => {
        second.token = a.token;
        assert.notEqual(a.token, first.token, "the second run got the first run's request");
        assert.equal(a.status, "pending");
        return click(a.token, callId, "deny_reason", "Not twice.");
      },
    });
    assert.deepEqual(second.ran, []);
    assert.equal(result.finalOutput, `${callId}: Not twice.`);
    await assertNoReceipt(second.token, callId);
  });

  test("stop the world: the state is stored as a string and resumed later, once", async () => {
    const f = fixture(sdk, "/srv/old");
    const first = await f.run(f.agent, "clean /srv/old");
    assert.equal(first.interruptions.length, 1);
    const stored = JSON.stringify(await suspend(client, first, { context: "nightly cleanup" }));
    const saved = JSON.parse(stored);
    // A retried submit of the same result (its answer lost) finds the same request.
    assert.equal((await suspend(client, first, { context: "nightly cleanup" })).token, saved.token);
    // No decision yet: nothing to resume.
    assert.equal(await resume(client, RunState, f.agent, saved), undefined);
    await click((f.token = saved.token), f.callId, "approve");
    const state = await resume(client, RunState, f.agent, saved, { wait: true });
    assert.ok(state);
    const result = await f.run(f.agent, state);
    assert.deepEqual(f.ran, ["/srv/old"]);
    assert.equal(result.finalOutput, `${f.callId}: deleted /srv/old`);
    assert.equal(result.interruptions.length, 0);
  });

  test("stop the world with edited arguments", async () => {
    const f = fixture(sdk, "/srv/all");
    const first = await f.run(f.agent, "clean");
    const saved = await suspend(client, first); // with delete_file's parameters, from the interruption's agent
    f.token = saved.token;
    await editInSlack(saved.token, f.callId, { path: "/srv/all/old" });
    const state = await resume(client, RunState, f.agent, saved, { wait: true });
    const result = await f.run(f.agent, state!);
    assert.deepEqual(f.ran, ["/srv/all/old"]);
    assert.equal(result.finalOutput, `${f.callId}: deleted /srv/all/old`);
  });
});
}
