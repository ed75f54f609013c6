// The OpenAI Agents SDK adapter against the real @openai/agents, in both
// versions it serves (0.20.0, the newest npm serves, and 0.14.3 under the
// alias @openai/agents-v0.14), with the SDK's own Model interface scripted,
// and a live slackbot whose approvers click. Every case runs for each.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as agents from "@openai/agents";
import * as agentsV014 from "@openai/agents-v0.14";
import type { AgentInputItem, Model, ModelRequest, ModelResponse } from "@openai/agents";
import { z } from "zod";
import { type Approval, verifyReceipt } from "../src/index.js";
import { type ApprovableState, type InterruptedResult, editable, receiptOf, runWithApprovals, resume, submit, suspend } from "../src/openai-agents.js";
import { FormRefused, assertNoReceipt, assertReceipt, click, client, editInSlack, jwks, selfApproved, uniqueId } from "./support/live.js";

// Both versions' own types fit the adapter's structural ones (tsc checks
// this line; the cases below run 0.14.3 through 0.20.0's types).
const fits: [agentsV014.RunState<unknown, agentsV014.Agent<any, any>> extends ApprovableState ? true : never, agentsV014.RunResult<unknown, agentsV014.Agent<any, any>> extends InterruptedResult ? true : never] = [true, true];
assert.deepEqual(fits, [true, true]);

function outputText(o: unknown): string {
  if (typeof o === "string") return o;
  const t = (o as { text?: unknown } | undefined)?.text;
  return typeof t === "string" ? t : JSON.stringify(o);
}

/** ScriptedModel asks for calls (delete_file, all in one turn) once, then says what the tool results were. */
class ScriptedModel implements Model {
  constructor(
    readonly sdk: typeof agents,
    readonly calls: ReadonlyArray<{ callId: string; args: Record<string, unknown> }>,
  ) {}

  async getResponse(req: ModelRequest): Promise<ModelResponse> {
    const items = typeof req.input === "string" ? [] : (req.input as AgentInputItem[]);
    const results = items.filter((i) => i.type === "function_call_result");
    if (results.length === 0) {
      return {
        usage: new this.sdk.Usage(),
        output: this.calls.map((c) => ({ type: "function_call" as const, id: `fc_${c.callId}`, callId: c.callId, name: "delete_file", arguments: JSON.stringify(c.args), status: "completed" as const })),
      };
    }
    const text = results.map((r) => `${(r as { callId: string }).callId}: ${outputText((r as { output: unknown }).output)}`).join("\n");
    return {
      usage: new this.sdk.Usage(),
      output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text }] }],
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
}

/**
 * fixture is an agent whose delete_file needs approval (editable() unless
 * plain is set), asked for one call per path in one turn, and what the
 * tool ran with. The tool runs only on a receipt it verified itself, as
 * the README shows: receiptOf its run's context, for its call and the raw
 * arguments it is handed, on the request of f.token. Call ids are fresh
 * unless given (ones an earlier run's model used too).
 */
function fixture(sdk: typeof agents, paths: string[], opts: { callIds?: string[]; plain?: boolean } = {}) {
  const callIds = opts.callIds ?? paths.map(() => uniqueId("call_oa"));
  const model = new ScriptedModel(
    sdk,
    paths.map((path, i) => ({ callId: callIds[i], args: { path } })),
  );
  const ran: string[] = [];
  const invoked: string[] = []; // before the receipt check
  const f = { token: "" };
  const deleteFile = sdk.tool({
    name: "delete_file",
    description: "Deletes a file.",
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    execute: async ({ path }, ctx, details) => {
      const { callId: id, name, arguments: args } = details!.toolCall!;
      invoked.push(path);
      await verifyReceipt(receiptOf(ctx, id), await jwks(), { callId: id, tool: name, args, token: f.token });
      ran.push(path);
      return `deleted ${path}`;
    },
  });
  const agent = new sdk.Agent({ name: "janitor", instructions: "Clean up.", model, tools: [opts.plain ? deleteFile : editable(deleteFile)] });
  const runner = new sdk.Runner({ tracingDisabled: true });
  const run = (a: typeof agent, input: string | agents.RunState<any, typeof agent>) => runner.run(a, input);
  return Object.assign(f, { callId: callIds[0], callIds, model, ran, invoked, agent, run });
}

for (const [version, sdk] of [
  ["0.20.0", agents],
  ["0.14.3", agentsV014 as unknown as typeof agents],
] as const) {
  describe(`OpenAI Agents SDK ${version}`, () => {
    test("approve: the tool runs once with the args, the model sees its result, the outcome has the receipt", async () => {
      const f = fixture(sdk, ["/srv/data"]);
      let pending: Approval | undefined;
      const { result, outcomes } = await runWithApprovals(f.run, f.agent, "clean /srv/data", client, {
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
      assert.equal(outcomes.length, 1);
      assert.equal(outcomes[0].approved, true);
      assert.equal(outcomes[0].receipt, done.results?.metadata?.[f.callId]?.slackbot_receipt);
      await assertReceipt(f.token, f.callId, { path: "/srv/data" });
    });

    test("deny with a reason: the tool never runs and the model sees the reason", async () => {
      const f = fixture(sdk, ["/srv/data"]);
      const { result, outcomes } = await runWithApprovals(f.run, f.agent, "clean /srv/data", client, {
        onPending: (a) => click((f.token = a.token), f.callId, "deny_reason", "Not on a Friday."),
      });
      assert.deepEqual(f.ran, []);
      assert.equal(result.finalOutput, `${f.callId}: Not on a Friday.`);
      assert.deepEqual(
        outcomes.map((o) => [o.approved, o.message, o.receipt]),
        [[false, "Not on a Friday.", undefined]],
      );
      await assertNoReceipt(f.token, f.callId);
    });

    test("plain Deny: the model sees slackbot's denial", async () => {
      const f = fixture(sdk, ["/srv/data"]);
      const { result } = await runWithApprovals(f.run, f.agent, "clean", client, {
        onPending: (a) => click((f.token = a.token), f.callId, "deny"),
      });
      assert.deepEqual(f.ran, []);
      await assertNoReceipt(f.token, f.callId);
      assert.match(String(result.finalOutput), new RegExp(`^${f.callId}: .*denied`, "i"));
    });

    test("edit in Slack on an editable() tool: the tool runs with exactly the edited args, which the receipt binds", async () => {
      const f = fixture(sdk, ["/srv/all"]);
      const { result, outcomes } = await runWithApprovals(f.run, f.agent, "clean", client, {
        onPending: async (a) => {
          f.token = a.token;
          // The adapter sent delete_file's parameters: the card offers Edit,
          // and an edit that does not fit them is refused in the form.
          await assert.rejects(editInSlack(a.token, f.callId, { path: 7 }), (err: Error) => err instanceof FormRefused && /path/.test(err.message));
          await editInSlack(a.token, f.callId, { path: "/srv/all/tmp" });
        },
      });
      assert.deepEqual(f.ran, ["/srv/all/tmp"]); // the tool verified the receipt for the edit
      assert.equal(result.finalOutput, `${f.callId}: deleted /srv/all/tmp`);
      assert.deepEqual(outcomes[0].overrideArgs, { path: "/srv/all/tmp" });
      await assertReceipt(f.token, f.callId, { path: "/srv/all/tmp" });
      assert.equal((await client.get(f.token)).results?.answered_by?.[f.callId], "U0ALICE");
    });

    test("a tool not wrapped with editable(): its card offers no Edit", async () => {
      const f = fixture(sdk, ["/srv/all"], { plain: true });
      await runWithApprovals(f.run, f.agent, "clean", client, {
        onPending: async (a) => {
          f.token = a.token;
          await assert.rejects(editInSlack(a.token, f.callId, { path: "/srv/all/tmp" }), /409.*no "edit" button/);
          await click(a.token, f.callId, "approve");
        },
      });
      assert.deepEqual(f.ran, ["/srv/all"]);
      // A schema for it, which would bring Edit back, is refused before any card.
      const g = fixture(sdk, ["/srv/all"], { plain: true });
      const stopped = await g.run(g.agent, "clean");
      await assert.rejects(submit(client, stopped, { argsSchemas: { delete_file: { type: "object" } } }), /delete_file, whose tool is not wrapped with editable\(\)/);
    });

    test("a program's edit of a call whose tool is not editable(): refused, neither the edit nor the original runs", async () => {
      const f = fixture(sdk, ["/srv/all"], { plain: true });
      const { result, outcomes } = await runWithApprovals(f.run, f.agent, "clean", client, {
        route: selfApproved,
        onPending: async (a) => {
          f.token = a.token;
          await client.results(a.token, { approvals: { [f.callId]: { kind: "tool-approved", override_args: { path: "/srv/all/tmp" } } } });
        },
      });
      assert.deepEqual(f.invoked, []);
      assert.equal(outcomes[0].approved, false);
      assert.equal(outcomes[0].receipt, undefined);
      assert.match(outcomes[0].message ?? "", /edited the arguments of this delete_file call.*did not run/);
      assert.equal(result.finalOutput, `${f.callId}: ${outcomes[0].message}`);
      // slackbot recorded the approval; the adapter told it the call did not run, and its card says so.
      const call = (await client.get(f.token)).calls.find((c) => c.tool_call_id === f.callId);
      assert.equal(call?.outcome?.status, "not_run");
      assert.match(call?.outcome?.summary ?? "", /did not run/);
    });

    test("a program's override_args equal to the model's arguments is no edit: the call of a tool not wrapped runs", async () => {
      const f = fixture(sdk, ["/srv/same"], { plain: true });
      const { outcomes } = await runWithApprovals(f.run, f.agent, "clean", client, {
        route: selfApproved,
        onPending: async (a) => {
          f.token = a.token;
          await client.results(a.token, { approvals: { [f.callId]: { kind: "tool-approved", override_args: { path: "/srv/same" } } } });
        },
      });
      // The key's own approval carries no receipt (slackbot signs none for
      // a self-approval), so the tool, invoked with the model's arguments,
      // refuses to act.
      assert.deepEqual(f.invoked, ["/srv/same"]);
      assert.deepEqual(f.ran, []);
      assert.equal(outcomes[0].approved, true);
    });

    test("an edited call invoked in another run (a nested agent's, say) is refused, never run with the model's arguments", async () => {
      const f = fixture(sdk, ["/srv/all"]);
      const stopped = await f.run(f.agent, "clean");
      const saved = await suspend(client, stopped);
      f.token = saved.token;
      await editInSlack(saved.token, f.callId, { path: "/srv/all/tmp" });
      const state = await resume(client, sdk.RunState, f.agent, saved, { wait: true });
      const wrapped = f.agent.tools[0] as agents.FunctionTool;
      const args = stopped.interruptions[0].arguments!;
      const toolCall = { type: "function_call" as const, callId: f.callId, name: "delete_file", arguments: args };
      await assert.rejects(wrapped.invoke(new sdk.RunContext(), args, { toolCall }), /delete_file call .* was approved with edited arguments in another run than this one; it did not run/);
      assert.deepEqual(f.ran, []);
      // Its own run runs the edit.
      await f.run(f.agent, state!);
      assert.deepEqual(f.ran, ["/srv/all/tmp"]);
    });

    test("parallel calls in one turn: one request with every call, each decision reaching its call", async () => {
      const f = fixture(sdk, ["/srv/a", "/srv/b", "/srv/c"]);
      const [a, b, c] = f.callIds;
      const { result, outcomes } = await runWithApprovals(f.run, f.agent, "clean three", client, {
        onPending: async (p) => {
          f.token = p.token;
          assert.deepEqual(
            p.calls.map((x) => x.tool_call_id),
            [a, b, c],
          );
          await click(p.token, a, "approve");
          await click(p.token, b, "deny_reason", "Keep b.");
          await editInSlack(p.token, c, { path: "/srv/c/tmp" });
        },
      });
      assert.deepEqual(f.ran.sort(), ["/srv/a", "/srv/c/tmp"]);
      assert.deepEqual(
        outcomes.map((o) => [o.callId, o.approved]),
        [
          [a, true],
          [b, false],
          [c, true],
        ],
      );
      assert.equal(result.finalOutput, `${a}: deleted /srv/a\n${b}: Keep b.\n${c}: deleted /srv/c/tmp`);
      await assertReceipt(f.token, a, { path: "/srv/a" });
      await assertReceipt(f.token, c, { path: "/srv/c/tmp" });
      await assertNoReceipt(f.token, b);
    });

    test("expiry: the tool never runs and the model is told no decision arrived", async () => {
      const f = fixture(sdk, ["/srv/data"]);
      // One second, the shortest timeout slackbot takes; nobody clicks.
      const { result } = await runWithApprovals(f.run, f.agent, "clean", client, {
        timeout: 1,
        onPending: (a) => {
          f.token = a.token;
        },
      });
      assert.deepEqual(f.ran, []);
      assert.match(String(result.finalOutput), new RegExp(`^${f.callId}: No decision on this tool call arrived: the request expired`));
      assert.equal((await client.get(f.token)).status, "expired");
      await assertNoReceipt(f.token, f.callId);
    });

    // Mock models, some OpenAI-compatible servers and fixed test ids reuse
    // call ids from run to run: each run's approval is its own.
    test("a model that reuses call ids across runs: each run gets its own card", async () => {
      const callIds = [uniqueId("call_oa_reused")];
      const first = fixture(sdk, ["/srv/data"], { callIds });
      await runWithApprovals(first.run, first.agent, "clean /srv/data", client, {
        onPending: (a) => editInSlack((first.token = a.token), first.callId, { path: "/srv/data/old" }),
      });
      assert.deepEqual(first.ran, ["/srv/data/old"]);

      const second = fixture(sdk, ["/srv/data"], { callIds });
      const { result } = await runWithApprovals(second.run, second.agent, "clean /srv/data", client, {
        onPending: (a) => {
          second.token = a.token;
          assert.notEqual(a.token, first.token, "the second run got the first run's request");
          assert.equal(a.status, "pending");
          return click(a.token, second.callId, "approve");
        },
      });
      // The first run's edit stayed with the first run.
      assert.deepEqual(second.ran, ["/srv/data"]);
      assert.equal(result.finalOutput, `${second.callId}: deleted /srv/data`);
    });

    test("stop the world: the state is stored as a string and resumed later, once", async () => {
      const f = fixture(sdk, ["/srv/old"]);
      const first = await f.run(f.agent, "clean /srv/old");
      assert.equal(first.interruptions.length, 1);
      const stored = JSON.stringify(await suspend(client, first, { context: "nightly cleanup" }));
      const saved = JSON.parse(stored);
      // A retried submit of the same result (its answer lost) finds the same request.
      assert.equal((await suspend(client, first, { context: "nightly cleanup" })).token, saved.token);
      // No decision yet: nothing to resume.
      assert.equal(await resume(client, sdk.RunState, f.agent, saved), undefined);
      await click((f.token = saved.token), f.callId, "approve");
      const state = await resume(client, sdk.RunState, f.agent, saved, { wait: true });
      assert.ok(state);
      const result = await f.run(f.agent, state);
      assert.deepEqual(f.ran, ["/srv/old"]);
      assert.equal(result.finalOutput, `${f.callId}: deleted /srv/old`);
      assert.equal(result.interruptions.length, 0);
    });

    test("stop the world with edited arguments: the restored run's editable() tool runs with the edit", async () => {
      const f = fixture(sdk, ["/srv/all"]);
      const first = await f.run(f.agent, "clean");
      const saved = await suspend(client, first); // with delete_file's parameters, from the interruption's agent
      f.token = saved.token;
      await editInSlack(saved.token, f.callId, { path: "/srv/all/old" });
      const state = await resume(client, sdk.RunState, f.agent, JSON.parse(JSON.stringify(saved)), { wait: true });
      const result = await f.run(f.agent, state!);
      assert.deepEqual(f.ran, ["/srv/all/old"]);
      assert.equal(result.finalOutput, `${f.callId}: deleted /srv/all/old`);
      await assertReceipt(f.token, f.callId, { path: "/srv/all/old" });
    });
  });
}
