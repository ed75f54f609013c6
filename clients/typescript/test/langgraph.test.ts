// The LangGraph.js adapter against the real @langchain/langgraph (a
// StateGraph with a MemorySaver whose review node calls interrupt()) and a
// live slackbot whose approvers click.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { Approval } from "../src/index.js";
import { type Decisions, type PendingToolCall, invokeWithApprovals, pendingToolCalls, resume, suspend } from "../src/langgraph.js";
import { FormRefused, assertNoReceipt, assertReceipt, click, client, editInSlack, selfApproved, uniqueId } from "./support/live.js";

const State = Annotation.Root({
  path: Annotation<string>(),
  calls: Annotation<PendingToolCall[]>(),
  results: Annotation<string[]>(),
});

/**
 * fixture is a graph that plans one delete_file call (with a fresh id, or
 * the calls planner returns) and runs it only as decided.
 */
function fixture(path = "/srv/data", planner?: (path: string) => Promise<PendingToolCall[]>) {
  const callId = uniqueId("call_lg");
  const ran: string[] = [];
  const plan = async (s: typeof State.State) => ({ calls: planner ? await planner(s.path) : [{ id: callId, name: "delete_file", args: { path: s.path } }] });
  const review = async (s: typeof State.State) => {
    // Nothing runs before interrupt(): LangGraph re-runs the node on resume.
    const decisions = interrupt(pendingToolCalls(s.calls)) as Decisions;
    const results = s.calls.map((c) => {
      const d = decisions[c.id];
      if (d?.type !== "approve") return `${c.id}: denied: ${d?.message}`;
      const p = String(d.args.path);
      ran.push(p);
      return `${c.id}: deleted ${p}`;
    });
    return { results };
  };
  const graph = new StateGraph(State)
    .addNode("plan", plan)
    .addNode("review", review)
    .addEdge(START, "plan")
    .addEdge("plan", "review")
    .addEdge("review", END)
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: randomUUID() } };
  return { callId, ran, graph, config, input: { path } };
}

describe("LangGraph.js", () => {
  test("approve: the tool runs once with the planned arguments", async () => {
    const f = fixture();
    let pending: Approval | undefined;
    const out = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, {
      onPending: async (a) => {
        pending = a;
        await click(a.token, f.callId, "approve");
      },
    });
    assert.deepEqual(f.ran, ["/srv/data"]);
    assert.deepEqual(out.results, [`${f.callId}: deleted /srv/data`]);
    assert.equal((await client.get(pending!.token)).results?.answered_by?.[f.callId], "U0ALICE");
    assert.deepEqual((await assertReceipt(pending!.token, f.callId, { path: "/srv/data" })).by, ["U0ALICE"]);
  });

  test("deny with a reason: the tool never runs and the node gets the reason", async () => {
    const f = fixture();
    let token = "";
    const out = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, {
      onPending: (a) => click((token = a.token), f.callId, "deny_reason", "Not on a Friday."),
    });
    assert.deepEqual(f.ran, []);
    assert.deepEqual(out.results, [`${f.callId}: denied: Not on a Friday.`]);
    await assertNoReceipt(token, f.callId);
  });

  // An approver's edit (a program's override_args arrives the same way).
  test("edited arguments reach the tool: an approver's edit in Slack, checked against the schema sent", async () => {
    const f = fixture("/srv/all");
    let token = "";
    const argsSchemas = {
      delete_file: { type: "object", properties: { path: { type: "string", pattern: "^/srv/" } }, required: ["path"], additionalProperties: false },
    };
    const out = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, {
      argsSchemas,
      onPending: async (a) => {
        token = a.token;
        await assert.rejects(editInSlack(a.token, f.callId, { path: "/etc" }), (err: Error) => err instanceof FormRefused && /path/.test(err.message));
        await editInSlack(a.token, f.callId, { path: "/srv/all/tmp" });
      },
    });
    assert.deepEqual(f.ran, ["/srv/all/tmp"]);
    assert.deepEqual(out.results, [`${f.callId}: deleted /srv/all/tmp`]);
    assert.equal((await client.get(token)).results?.answered_by?.[f.callId], "U0ALICE");
    await assertReceipt(token, f.callId, { path: "/srv/all/tmp" });
  });

  // Only where the route lets the requesting key approve its own calls.
  test("a program's override_args reach the tool too, answered by the API client", async () => {
    const f = fixture("/srv/all");
    let token = "";
    const out = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, {
      route: selfApproved,
      onPending: async (a) => {
        token = a.token;
        await client.results(a.token, { approvals: { [f.callId]: { kind: "tool-approved", override_args: { path: "/srv/all/tmp" } } } });
      },
    });
    assert.deepEqual(f.ran, ["/srv/all/tmp"]);
    assert.deepEqual(out.results, [`${f.callId}: deleted /srv/all/tmp`]);
    assert.equal((await client.get(token)).results?.answered_by?.[f.callId], "billing");
  });

  test("expiry: the tool never runs and the node is told no decision arrived", async () => {
    const f = fixture();
    // One second, the shortest timeout slackbot takes; nobody clicks.
    let token = "";
    const out = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, { timeout: 1, onPending: (a) => void (token = a.token) });
    assert.deepEqual(f.ran, []);
    assert.match(out.results[0], new RegExp(`^${f.callId}: denied: No decision on this tool call arrived: the request expired`));
    await assertNoReceipt(token, f.callId);
  });

  // LangChain's fake chat model answers every run with the same tool call
  // id, as mock models and some OpenAI-compatible servers do: each run's
  // approval is its own, a later run on the same thread's too.
  test("a model that reuses call ids across runs: each run gets its own card", async () => {
    const callId = uniqueId("call_lg_reused");
    const model = fakeModel()
      .respondWithTools([{ name: "delete_file", args: { path: "/srv/data" }, id: callId }])
      .respondWithTools([{ name: "delete_file", args: { path: "/srv/data" }, id: callId }])
      .respondWithTools([{ name: "delete_file", args: { path: "/srv/other" }, id: callId }]);
    const planner = async (path: string) => {
      const msg = await model.invoke([new HumanMessage(`Delete ${path}.`)]);
      return (msg.tool_calls ?? []).map((c) => ({ id: c.id!, name: c.name, args: c.args }));
    };
    const f = fixture("/srv/data", planner);
    const tokens: string[] = [];
    const ask = (action: "approve" | "deny") => ({
      onPending: (a: Approval) => {
        assert.ok(!tokens.includes(a.token), `run ${tokens.length + 1} got an earlier run's request`);
        assert.equal(a.status, "pending");
        tokens.push(a.token);
        return click(a.token, callId, action);
      },
    });
    const first = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, ask("approve"));
    assert.deepEqual(first.results, [`${callId}: deleted /srv/data`]);
    // The same thread's next run: the same call id, the same arguments.
    const again = await invokeWithApprovals(f.graph, f.input, f.config, client, Command, ask("deny"));
    assert.match(again.results[0], new RegExp(`^${callId}: denied: `));
    // Another thread: the same call id, other arguments.
    const other = await invokeWithApprovals(f.graph, { path: "/srv/other" }, { configurable: { thread_id: randomUUID() } }, client, Command, ask("approve"));
    assert.deepEqual(other.results, [`${callId}: deleted /srv/other`]);
    assert.deepEqual(f.ran, ["/srv/data", "/srv/other"]);
    assert.equal(tokens.length, 3);
    await assertNoReceipt(tokens[1], callId);
    await assertReceipt(tokens[2], callId, { path: "/srv/other" });
  });

  test("stop the world: the thread is resumed later from the stored token, once", async () => {
    const f = fixture("/srv/old");
    const first = await f.graph.invoke(f.input, f.config);
    const saved = JSON.parse(JSON.stringify(await suspend(client, first, f.config.configurable.thread_id)));
    // A retried submit of the same result (its answer lost) finds the same request.
    assert.equal((await suspend(client, first, f.config.configurable.thread_id)).token, saved.token);
    assert.equal(await resume(client, f.graph, Command, saved), undefined);
    assert.deepEqual(f.ran, []);
    await click(saved.token, f.callId, "approve");
    const out = await resume(client, f.graph, Command, saved, { wait: true });
    assert.deepEqual(f.ran, ["/srv/old"]);
    assert.deepEqual(out?.results, [`${f.callId}: deleted /srv/old`]);
    await assertReceipt(saved.token, f.callId, { path: "/srv/old" });
  });

  test("several interrupts at once: parallel nodes, one with parallel tool calls; each decision reaches its call", async () => {
    const ids = { a: uniqueId("call_lg_a"), b: uniqueId("call_lg_b"), c: uniqueId("call_lg_c") };
    const ran: string[] = [];
    const Parallel = Annotation.Root({
      results: Annotation<string[]>({ reducer: (x, y) => x.concat(y), default: () => [] }),
    });
    // Each review node interrupts for its own calls; LangGraph runs them in
    // the same superstep, so the graph stops on two interrupts at once.
    const review = (calls: PendingToolCall[]) => async () => {
      const decisions = interrupt(pendingToolCalls(calls)) as Decisions;
      return {
        results: calls.map((c) => {
          const d = decisions[c.id];
          if (d?.type !== "approve") return `${c.id}: denied: ${d?.message}`;
          ran.push(`${c.id} ${String(d.args.path)}`);
          return `${c.id}: deleted ${String(d.args.path)}${d.edited ? " (edited)" : ""}`;
        }),
      };
    };
    const graph = new StateGraph(Parallel)
      .addNode("tmp", review([
        { id: ids.a, name: "delete_file", args: { path: "/tmp/a" } },
        { id: ids.b, name: "delete_file", args: { path: "/tmp/b" } },
      ]))
      .addNode("logs", review([{ id: ids.c, name: "delete_file", args: { path: "/var/log" } }]))
      .addEdge(START, "tmp")
      .addEdge(START, "logs")
      .addEdge("tmp", END)
      .addEdge("logs", END)
      .compile({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: randomUUID() } };
    let pending: Approval | undefined;
    const out = await invokeWithApprovals(graph, {}, config, client, Command, {
      argsSchemas: { delete_file: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
      onPending: async (a) => {
        pending = a;
        // One request for all three calls of both interrupts.
        assert.deepEqual(a.calls.map((c) => c.tool_call_id).sort(), [ids.a, ids.b, ids.c].sort());
        await click(a.token, ids.a, "approve");
        await click(a.token, ids.b, "deny_reason", "Keep b.");
        await editInSlack(a.token, ids.c, { path: "/var/log/old" });
      },
    });
    assert.deepEqual(ran.sort(), [`${ids.a} /tmp/a`, `${ids.c} /var/log/old`].sort());
    assert.deepEqual(out.results.sort(), [
      `${ids.a}: deleted /tmp/a`,
      `${ids.b}: denied: Keep b.`,
      `${ids.c}: deleted /var/log/old (edited)`,
    ].sort());
    await assertReceipt(pending!.token, ids.a, { path: "/tmp/a" });
    await assertNoReceipt(pending!.token, ids.b);
    await assertReceipt(pending!.token, ids.c, { path: "/var/log/old" });
  });
});
