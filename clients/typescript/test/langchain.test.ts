// LangChain v1's createAgent with humanInTheLoopMiddleware (langchain
// 1.5.14, a MemorySaver checkpointer, LangChain's fake tool-calling chat
// model) through the LangGraph adapter, against a live slackbot whose
// approvers click: one HITLRequest of N action requests is one slackbot
// request of N calls, answered with one HITLResponse, decisions in order.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { Command, MemorySaver } from "@langchain/langgraph";
import { type InterruptOnConfig, createAgent, humanInTheLoopMiddleware, tool } from "langchain";
import { z } from "zod";
import { type Approval, verifyMetadata, verifyReceipt } from "../src/index.js";
import { type Outcome, invokeWithApprovals, resume, suspend } from "../src/langgraph.js";
import { click, client, editInSlack, jwks, uniqueId } from "./support/live.js";

/** Ran is what a tool received: its arguments and the tool call id LangChain gave it. */
interface Ran {
  tool: string;
  args: Record<string, unknown>;
  callId?: string;
}

// The tools' names fit the test routes (internal/apitest): delete_* and fetch_*, both decided by U0ALICE.
const fetchSchema = {
  type: "object",
  properties: { url: { type: "string", pattern: "^https://" } },
  required: ["url"],
  additionalProperties: false,
};

/**
 * agentOf is a createAgent whose fake model calls delete_file and
 * fetch_url in one turn (fresh call ids), then answers with the tool
 * messages it sees; interruptOn gates both tools unless told otherwise.
 */
function agentOf(interruptOn: Record<string, boolean | InterruptOnConfig> = {
  delete_file: { allowedDecisions: ["approve", "reject"] },
  fetch_url: { allowedDecisions: ["approve", "edit", "reject"], argsSchema: fetchSchema },
}) {
  const ids = { del: uniqueId("call_lc_del"), get: uniqueId("call_lc_get") };
  const ran: Ran[] = [];
  const deleteFile = tool(
    async ({ path }, config) => {
      ran.push({ tool: "delete_file", args: { path }, callId: config.toolCall?.id });
      return `deleted ${path}`;
    },
    { name: "delete_file", description: "Deletes a file.", schema: z.object({ path: z.string() }) },
  );
  const fetchUrl = tool(
    async ({ url }, config) => {
      ran.push({ tool: "fetch_url", args: { url }, callId: config.toolCall?.id });
      return `fetched ${url}`;
    },
    { name: "fetch_url", description: "Fetches a URL.", schema: z.object({ url: z.string() }) },
  );
  const seen = (msgs: BaseMessage[]) => msgs.filter((m) => m.type === "tool").map((m) => String(m.content)).join(" | ");
  const model = fakeModel()
    .respondWithTools([
      { name: "delete_file", args: { path: "/srv/old" }, id: ids.del },
      { name: "fetch_url", args: { url: "https://a.example/x" }, id: ids.get },
    ])
    .respond((msgs) => new AIMessage(`done: ${seen(msgs)}`));
  const agent = createAgent({
    model,
    tools: [deleteFile, fetchUrl],
    middleware: [humanInTheLoopMiddleware({ interruptOn })],
    checkpointer: new MemorySaver(),
  });
  const config = { configurable: { thread_id: randomUUID() } };
  const input = { messages: [{ role: "user", content: "Tidy /srv." }] };
  return { ids, ran, agent, config, input };
}

function last(out: { messages: BaseMessage[] }): string {
  return String(out.messages.at(-1)?.content);
}

/** assertSigned checks that call callId of the request token carries a receipt for exactly tool(args). */
async function assertSigned(token: string, callId: string, tool: string, args: Record<string, unknown>): Promise<void> {
  const md = (await client.get(token)).results?.metadata?.[callId];
  await verifyMetadata(md, await jwks(), { callId, tool, args, token });
  await assert.rejects(verifyMetadata(md, await jwks(), { callId, tool, args: { ...args, extra: 1 }, token }), { kind: "mismatch" });
}

describe("LangChain createAgent + humanInTheLoopMiddleware", () => {
  test("one request for both calls; approve one, edit the other in Slack: both tools ran as decided, receipts verify", async () => {
    const f = agentOf();
    let pending: Approval | undefined;
    const out = await invokeWithApprovals(f.agent, f.input, f.config, client, Command, {
      onPending: async (a) => {
        pending = a;
        // The model's own call ids, in the order of its tool calls.
        assert.deepEqual(a.calls.map((c) => [c.tool_call_id, c.tool_name]), [[f.ids.del, "delete_file"], [f.ids.get, "fetch_url"]]);
        await click(a.token, f.ids.del, "approve");
        await editInSlack(a.token, f.ids.get, { url: "https://b.example/y" });
      },
    });
    assert.deepEqual(f.ran, [
      { tool: "delete_file", args: { path: "/srv/old" }, callId: f.ids.del },
      { tool: "fetch_url", args: { url: "https://b.example/y" }, callId: f.ids.get },
    ]);
    assert.equal(last(out), "done: deleted /srv/old | fetched https://b.example/y");
    await assertSigned(pending!.token, f.ids.del, "delete_file", { path: "/srv/old" });
    await assertSigned(pending!.token, f.ids.get, "fetch_url", { url: "https://b.example/y" });
  });

  test("onOutcomes hands each round's receipts over before the tools run; each verifies for exactly what its tool ran", async () => {
    const f = agentOf();
    const rounds: Outcome[][] = [];
    let ranBefore = -1;
    await invokeWithApprovals(f.agent, f.input, f.config, client, Command, {
      onPending: async (a) => {
        await click(a.token, f.ids.del, "approve");
        await editInSlack(a.token, f.ids.get, { url: "https://b.example/z" });
      },
      onOutcomes: (outcomes) => {
        ranBefore = f.ran.length;
        rounds.push(outcomes);
      },
    });
    assert.equal(ranBefore, 0, "onOutcomes ran after a tool: the tool could not have had its receipt");
    assert.equal(rounds.length, 1);
    const byId = new Map(rounds[0].map((o) => [o.callId, o]));
    assert.deepEqual([...byId.keys()].sort(), [f.ids.del, f.ids.get].sort());
    assert.equal(f.ran.length, 2);
    for (const r of f.ran) {
      const o = byId.get(r.callId!);
      assert.ok(o?.approved && o.receipt, `${r.tool}: no approved outcome with a receipt`);
      await verifyReceipt(o.receipt, await jwks(), { callId: r.callId!, tool: r.tool, args: r.args });
    }
    assert.deepEqual(byId.get(f.ids.get)?.overrideArgs, { url: "https://b.example/z" });
  });

  // LangChain (hitl.js, langchain 1.5.14): once any call of the batch is
  // rejected, none of the others runs and the model is asked again.
  test("reject with a reason: the model sees the reason; the batch's approved call does not run", async () => {
    const f = agentOf();
    let token = "";
    const seen: Outcome[][] = [];
    const out = await invokeWithApprovals(f.agent, f.input, f.config, client, Command, {
      onPending: async (a) => {
        token = a.token;
        await click(a.token, f.ids.del, "deny_reason", "Keep /srv/old until Monday.");
        await click(a.token, f.ids.get, "approve");
      },
      onOutcomes: (o) => void seen.push(o),
    });
    assert.deepEqual(f.ran, []);
    assert.equal(last(out), "done: Keep /srv/old until Monday.");
    // The approved call that LangChain did not run is reported: its card
    // says it did not run, instead of "approved" as if it had.
    const calls = (await client.get(token)).calls;
    assert.equal(calls.find((c) => c.tool_call_id === f.ids.get)?.outcome?.status, "not_run");
    assert.equal(calls.find((c) => c.tool_call_id === f.ids.del)?.outcome ?? null, null);
    const approved = seen.flat().find((o) => o.callId === f.ids.get);
    assert.equal((approved as { ran?: boolean } | undefined)?.ran, false);
  });

  test("expiry: both calls are rejected with 'no decision', which the model reads; nothing runs", async () => {
    const f = agentOf();
    // One second, the shortest timeout slackbot takes; nobody clicks.
    const out = await invokeWithApprovals(f.agent, f.input, f.config, client, Command, { timeout: 1 });
    assert.deepEqual(f.ran, []);
    const expired = "No decision on this tool call arrived: the request expired"; // slackbot's words for an expired call
    assert.equal(last(out), `done: ${expired} | ${expired}`);
  });

  test("a tool whose allowedDecisions lack edit gets no Edit button, even with its schema in argsSchemas", async () => {
    const f = agentOf();
    const out = await invokeWithApprovals(f.agent, f.input, f.config, client, Command, {
      argsSchemas: { delete_file: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
      onPending: async (a) => {
        await assert.rejects(editInSlack(a.token, f.ids.del, { path: "/srv/other" }), /409/);
        await click(a.token, f.ids.del, "approve");
        await click(a.token, f.ids.get, "approve");
      },
    });
    assert.deepEqual(f.ran.map((r) => r.args), [{ path: "/srv/old" }, { url: "https://a.example/x" }]);
    assert.equal(last(out), "done: deleted /srv/old | fetched https://a.example/x");
  });

  test("a denial where the tool's allowedDecisions lack reject is an error naming the call; nothing is sent, the thread stays interrupted", async () => {
    const f = agentOf({ delete_file: { allowedDecisions: ["approve", "edit"] }, fetch_url: true });
    let token = "";
    await assert.rejects(
      invokeWithApprovals(f.agent, f.input, f.config, client, Command, {
        onPending: async (a) => {
          token = a.token;
          await click(a.token, f.ids.del, "deny_reason", "No.");
          await click(a.token, f.ids.get, "approve");
        },
      }),
      (err: Error & { kind?: string }) => {
        assert.equal(err.kind, "decision_not_allowed");
        assert.match(err.message, new RegExp(`${f.ids.del} \\(delete_file\\) was denied, but its allowed decisions are approve, edit`));
        assert.ok(err.message.includes(token), err.message);
        assert.ok(!err.message.includes(f.ids.get), err.message);
        return true;
      },
    );
    assert.deepEqual(f.ran, []);
    // The thread still waits on the same interrupt: a resume of one's own goes on from it.
    const out = await f.agent.invoke(new Command({ resume: { decisions: [{ type: "approve" }, { type: "approve" }] } }), f.config);
    assert.equal(last(out), "done: deleted /srv/old | fetched https://a.example/x");
  });

  test("stop the world: suspend stores the round as JSON; resume answers it from the stored token, once", async () => {
    const f = agentOf();
    const first = await f.agent.invoke(f.input, f.config);
    const saved = JSON.parse(JSON.stringify(await suspend(client, first, f.config.configurable.thread_id)));
    assert.equal((await suspend(client, first, f.config.configurable.thread_id)).token, saved.token);
    assert.equal(await resume(client, f.agent, Command, saved), undefined);
    await click(saved.token, f.ids.del, "approve");
    await editInSlack(saved.token, f.ids.get, { url: "https://z.example/" });
    const out = await resume(client, f.agent, Command, saved, { wait: true });
    assert.deepEqual(f.ran.map((r) => [r.callId, r.args]), [[f.ids.del, { path: "/srv/old" }], [f.ids.get, { url: "https://z.example/" }]]);
    assert.equal(last(out!), "done: deleted /srv/old | fetched https://z.example/");
    await assertSigned(saved.token, f.ids.get, "fetch_url", { url: "https://z.example/" });
  });
});
