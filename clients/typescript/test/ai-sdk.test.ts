// The Vercel AI SDK adapter against the real "ai" (generateText, tools with
// needsApproval, its MockLanguageModelV3 from ai/test) and a live slackbot
// whose approvers click.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asSchema, generateText, tool, type ModelMessage } from "ai";
import { z } from "zod";
import type { Approval } from "../src/index.js";
import { argsSchemasOf, generateWithApprovals, resume, suspend, type Message } from "../src/ai-sdk.js";
import { callingModel } from "./support/ai-sdk-model.js";
import { FormRefused, assertNoReceipt, assertReceipt, click, client, editInSlack, selfApproved, uniqueId } from "./support/live.js";

/**
 * fixture is a model that asks for delete_file once, with callId (fresh by
 * default, or one an earlier run's model used too), then says what the
 * tool results were.
 */
function fixture(path = "/srv/data", callId = uniqueId("call_ai")) {
  const ran: string[] = [];
  const model = callingModel("delete_file", { path }, callId);
  const tools = {
    delete_file: tool({
      description: "Deletes a file.",
      inputSchema: z.object({ path: z.string() }),
      needsApproval: true,
      execute: async ({ path }: { path: string }) => {
        ran.push(path);
        return `deleted ${path}`;
      },
    }),
  };
  const generate = (messages: Message[]) => generateText({ model, tools, messages: messages as ModelMessage[] });
  const start: Message[] = [{ role: "user", content: "clean up" }];
  return { callId, ran, model, tools, generate, start };
}

describe("Vercel AI SDK", () => {
  test("approve: the tool runs once and the model sees its result", async () => {
    const f = fixture();
    let pending: Approval | undefined;
    const { result } = await generateWithApprovals(f.generate, f.start, client, {
      onPending: async (a) => {
        pending = a;
        await click(a.token, f.callId, "approve");
      },
    });
    assert.deepEqual(f.ran, ["/srv/data"]);
    assert.equal(result.text, `${f.callId}: deleted /srv/data`);
    assert.equal((await client.get(pending!.token)).results?.answered_by?.[f.callId], "U0ALICE");
    assert.equal(f.model.doGenerateCalls.length, 2);
    assert.deepEqual((await assertReceipt(pending!.token, f.callId, { path: "/srv/data" })).by, ["U0ALICE"]);
  });

  test("deny with a reason: the tool never runs and the model sees the reason", async () => {
    const f = fixture();
    let token = "";
    const { result } = await generateWithApprovals(f.generate, f.start, client, {
      onPending: (a) => click((token = a.token), f.callId, "deny_reason", "Not on a Friday."),
    });
    assert.deepEqual(f.ran, []);
    assert.equal(result.text, `${f.callId}: denied: Not on a Friday.`);
    await assertNoReceipt(token, f.callId);
  });

  // An approver's edit (a program's override_args arrives the same way):
  // the answer carries it, and an approver's edit has a receipt, a request's
  // own API client's approval none.
  test("edited arguments reach the tool: an approver's edit in Slack, checked against the tool's input schema", async () => {
    const f = fixture("/srv/all");
    let token = "";
    const { result, messages } = await generateWithApprovals(f.generate, f.start, client, {
      argsSchemas: await argsSchemasOf(f.tools, asSchema),
      onPending: async (a) => {
        token = a.token;
        await assert.rejects(editInSlack(a.token, f.callId, { path: ["/srv"] }), (err: Error) => err instanceof FormRefused && /path/.test(err.message));
        await editInSlack(a.token, f.callId, { path: "/srv/all/tmp" });
      },
    });
    assert.deepEqual(f.ran, ["/srv/all/tmp"]);
    assert.equal(result.text, `${f.callId}: deleted /srv/all/tmp`);
    assert.match(JSON.stringify(messages), /"input":\{"path":"\/srv\/all\/tmp"\}/);
    assert.equal((await client.get(token)).results?.answered_by?.[f.callId], "U0ALICE");
    await assertReceipt(token, f.callId, { path: "/srv/all/tmp" });
  });

  // Only where the route lets the requesting key approve its own calls.
  test("a program's override_args reach the tool too, answered by the API client", async () => {
    const f = fixture("/srv/all");
    let token = "";
    const { result } = await generateWithApprovals(f.generate, f.start, client, {
      route: selfApproved,
      onPending: async (a) => {
        token = a.token;
        await client.results(a.token, { approvals: { [f.callId]: { kind: "tool-approved", override_args: { path: "/srv/all/tmp" } } } });
      },
    });
    assert.deepEqual(f.ran, ["/srv/all/tmp"]);
    assert.equal(result.text, `${f.callId}: deleted /srv/all/tmp`);
    assert.equal((await client.get(token)).results?.answered_by?.[f.callId], "billing");
  });

  test("without the tools' schemas, the card offers no Edit", async () => {
    const f = fixture();
    let token = "";
    await generateWithApprovals(f.generate, f.start, client, {
      onPending: async (a) => {
        token = a.token;
        await assert.rejects(editInSlack(a.token, f.callId, { path: "/x" }), /no "edit" button/);
        await click(a.token, f.callId, "approve");
      },
    });
    assert.deepEqual(f.ran, ["/srv/data"]);
    await assertReceipt(token, f.callId, { path: "/srv/data" });
  });

  test("expiry: the tool never runs and the model is told no decision arrived", async () => {
    const f = fixture();
    // One second, the shortest timeout slackbot takes; nobody clicks.
    let token = "";
    const { result } = await generateWithApprovals(f.generate, f.start, client, { timeout: 1, onPending: (a) => void (token = a.token) });
    assert.deepEqual(f.ran, []);
    assert.match(result.text, new RegExp(`^${f.callId}: denied: No decision on this tool call arrived: the request expired`));
    await assertNoReceipt(token, f.callId);
  });

  // Mock models, some OpenAI-compatible servers and fixed test ids reuse
  // call ids from run to run: each run's approval is its own.
  test("a model that reuses call ids across runs: each run gets its own card", async () => {
    const callId = uniqueId("call_ai_reused");
    const first = fixture("/srv/data", callId);
    let firstToken = "";
    await generateWithApprovals(first.generate, first.start, client, { onPending: (a) => click((firstToken = a.token), callId, "approve") });
    assert.deepEqual(first.ran, ["/srv/data"]);

    const second = fixture("/srv/data", callId);
    let secondToken = "";
    const { result } = await generateWithApprovals(second.generate, second.start, client, {
      onPending: (a) => {
        secondToken = a.token;
        assert.notEqual(a.token, firstToken, "the second run got the first run's request");
        assert.equal(a.status, "pending");
        return click(a.token, callId, "deny_reason", "Not twice.");
      },
    });
    assert.deepEqual(second.ran, []);
    assert.equal(result.text, `${callId}: denied: Not twice.`);
    await assertNoReceipt(secondToken, callId);
  });

  test("stop the world: the conversation is stored as JSON and resumed later, once", async () => {
    const f = fixture("/srv/old");
    const first = await f.generate(f.start);
    const saved = JSON.parse(JSON.stringify(await suspend(client, first, f.start, { context: "nightly cleanup" })));
    // A retried submit of the same result (its answer lost) finds the same request.
    assert.equal((await suspend(client, first, f.start, { context: "nightly cleanup" })).token, saved.token);
    // No decision yet: nothing to resume, nothing ran.
    assert.equal(await resume(client, saved), undefined);
    assert.deepEqual(f.ran, []);
    await click(saved.token, f.callId, "approve");
    const messages = await resume(client, saved, { wait: true });
    assert.ok(messages);
    const result = await f.generate(messages);
    assert.deepEqual(f.ran, ["/srv/old"]);
    assert.equal(result.text, `${f.callId}: deleted /srv/old`);
    assert.equal(f.model.doGenerateCalls.length, 2);
    await assertReceipt(saved.token, f.callId, { path: "/srv/old" });
  });

  test("stop the world with edited arguments and with a denial", async () => {
    const f = fixture("/srv/all");
    const saved = await suspend(client, await f.generate(f.start), f.start, { argsSchemas: await argsSchemasOf(f.tools, asSchema) });
    await editInSlack(saved.token, f.callId, { path: "/srv/all/old" });
    const result = await f.generate((await resume(client, saved, { wait: true }))!);
    assert.deepEqual(f.ran, ["/srv/all/old"]);
    assert.equal(result.text, `${f.callId}: deleted /srv/all/old`);
    await assertReceipt(saved.token, f.callId, { path: "/srv/all/old" });

    const g = fixture();
    const denied = await suspend(client, await g.generate(g.start), g.start);
    await click(denied.token, g.callId, "deny_reason", "Not today.");
    const after = await g.generate((await resume(client, denied, { wait: true }))!);
    assert.deepEqual(g.ran, []);
    assert.equal(after.text, `${g.callId}: denied: Not today.`);
    await assertNoReceipt(denied.token, g.callId);
  });
});
