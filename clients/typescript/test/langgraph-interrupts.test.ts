// The interrupts the LangGraph adapter answers besides its own: LangGraph's
// prebuilt HumanInterrupt (the Agent Inbox shape, @langchain/langgraph
// 1.7.3's prebuilt/interrupt types), answered with HumanResponse, and
// every other interrupt value, which is an error naming it, never a
// silent return. A real StateGraph with a MemorySaver, a live slackbot.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { HumanInterrupt, HumanInterruptConfig, HumanResponse } from "@langchain/langgraph/prebuilt";
import type { Approval } from "../src/index.js";
import { invokeWithApprovals, pendingToolCalls, resume, submit, suspend } from "../src/langgraph.js";
import { click, client, editInSlack, uniqueId } from "./support/live.js";

const State = Annotation.Root({
  responses: Annotation<HumanResponse[]>(),
});

/** inboxGraph is a graph whose one node interrupts with value and keeps what interrupt() returned. */
function inboxGraph(value: unknown) {
  const graph = new StateGraph(State)
    .addNode("review", async () => ({ responses: interrupt(value) as HumanResponse[] }))
    .addEdge(START, "review")
    .addEdge("review", END)
    .compile({ checkpointer: new MemorySaver() });
  return { graph, config: { configurable: { thread_id: randomUUID() } } };
}

const none: HumanInterruptConfig = { allow_accept: false, allow_edit: false, allow_respond: false, allow_ignore: false };

function inbox(action: string, args: Record<string, unknown>, config: Partial<HumanInterruptConfig>): HumanInterrupt {
  return { action_request: { action, args }, config: { ...none, ...config }, description: `Review ${action}.` };
}

/** callsOf returns the request's call ids, in order. Tool names fit the test routes (internal/apitest). */
function callsOf(a: Approval): string[] {
  return a.calls.map((c) => c.tool_call_id);
}

describe("LangGraph HumanInterrupt (Agent Inbox)", () => {
  test("accept, edit, response and ignore, each as its config allows, in order", async () => {
    const { graph, config } = inboxGraph([
      inbox("delete_file", { path: "/srv/a" }, { allow_accept: true, allow_respond: true }),
      inbox("fetch_url", { url: "https://a.example/x" }, { allow_accept: true, allow_edit: true }),
      inbox("sandbox_email", { to: "ops@example.com" }, { allow_accept: true, allow_respond: true, allow_ignore: true }),
      inbox("sandbox_restart", { service: "api" }, { allow_accept: true, allow_ignore: true }),
    ]);
    const out = await invokeWithApprovals(graph, {}, config, client, Command, {
      argsSchemas: {
        fetch_url: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
        delete_file: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
      onPending: async (a) => {
        assert.deepEqual(a.calls.map((c) => c.tool_name), ["delete_file", "fetch_url", "sandbox_email", "sandbox_restart"]);
        const [del, get, mail, restart] = callsOf(a);
        // allow_edit is false for delete_file: no Edit button though its schema was given.
        await assert.rejects(editInSlack(a.token, del, { path: "/srv/x" }), /409/);
        await click(a.token, del, "approve");
        await editInSlack(a.token, get, { url: "https://b.example/y" });
        await click(a.token, mail, "deny_reason", "Not to ops.");
        await click(a.token, restart, "deny");
      },
    });
    assert.deepEqual(out.responses, [
      { type: "accept", args: null },
      { type: "edit", args: { action: "fetch_url", args: { url: "https://b.example/y" } } },
      { type: "response", args: "Not to ops." },
      { type: "ignore", args: null },
    ]);
  });

  test("a denial the config allows neither as response nor as ignore is an error naming the call", async () => {
    const { graph, config } = inboxGraph([inbox("delete_file", { path: "/srv/a" }, { allow_accept: true })]);
    await assert.rejects(
      invokeWithApprovals(graph, {}, config, client, Command, { onPending: (a) => click(a.token, callsOf(a)[0], "deny") }),
      (err: Error & { kind?: string }) => {
        assert.equal(err.kind, "decision_not_allowed");
        assert.match(err.message, /\(delete_file\) was denied, but its config allows accept only/);
        return true;
      },
    );
  });

  test("stop the world with a HumanInterrupt: resumed from the stored round", async () => {
    const { graph, config } = inboxGraph([inbox("delete_file", { path: "/srv/a" }, { allow_accept: true })]);
    const first = await graph.invoke({}, config);
    const saved = JSON.parse(JSON.stringify(await suspend(client, first, config.configurable.thread_id)));
    const a = await client.get(saved.token);
    await click(saved.token, callsOf(a)[0], "approve");
    const out = await resume(client, graph, Command, saved, { wait: true });
    assert.deepEqual(out?.responses, [{ type: "accept", args: null }]);
  });
});

describe("interrupts the adapter does not understand", () => {
  test("invokeWithApprovals, submit and suspend throw naming the interrupt, never return still interrupted", async () => {
    const { graph, config } = inboxGraph({ question: "Which region?", secretless: true });
    const first = await graph.invoke({}, config);
    const id = (first as { __interrupt__?: Array<{ id?: string }> }).__interrupt__?.[0]?.id;
    assert.ok(id);
    const namedAs = (want: string | RegExp) => (err: Error & { kind?: string }) => {
      assert.equal(err.kind, "unknown_interrupt");
      assert.match(err.message, typeof want === "string" ? new RegExp(`interrupt ${want},`) : want);
      assert.match(err.message, /\{"question":"Which region\?"/);
      return true;
    };
    const named = namedAs(id);
    // Another thread: another interrupt, with an id of its own.
    await assert.rejects(invokeWithApprovals(graph, {}, { configurable: { thread_id: randomUUID() } }, client, Command), namedAs(/interrupt [0-9a-f]{32},/));
    await assert.rejects(submit(client, first, { threadId: config.configurable.thread_id }), named);
    await assert.rejects(suspend(client, first, config.configurable.thread_id), named);
    const stored = { token: "unused", thread_id: config.configurable.thread_id, interrupts: (first as { __interrupt__?: unknown[] }).__interrupt__ };
    await assert.rejects(resume(client, graph, Command, stored as never), named);
  });

  test("a mix of an understood and an unknown interrupt names the unknown one and asks nobody", async () => {
    const ids = { a: uniqueId("call_mix") };
    const Parallel = Annotation.Root({ got: Annotation<unknown[]>({ reducer: (x, y) => x.concat(y), default: () => [] }) });
    const graph = new StateGraph(Parallel)
      .addNode("tools", async () => ({ got: [interrupt(pendingToolCalls([{ id: ids.a, name: "delete_file", args: { path: "/tmp/a" } }]))] }))
      .addNode("other", async () => ({ got: [interrupt("free text: continue?")] }))
      .addEdge(START, "tools")
      .addEdge(START, "other")
      .addEdge("tools", END)
      .addEdge("other", END)
      .compile({ checkpointer: new MemorySaver() });
    let asked = false;
    await assert.rejects(
      // A one-second timeout: an adapter that asked about the understood one alone would not wait long.
      invokeWithApprovals(graph, {}, { configurable: { thread_id: randomUUID() } }, client, Command, { timeout: 1, onPending: () => void (asked = true) }),
      (err: Error & { kind?: string }) => {
        assert.equal(err.kind, "unknown_interrupt");
        assert.match(err.message, /"free text: continue\?"/);
        assert.ok(!err.message.includes(ids.a), err.message);
        return true;
      },
    );
    assert.equal(asked, false);
  });
});
