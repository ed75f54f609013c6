// What became of approved calls, reported to slackbot by the AI SDK
// adapter, and the run helper's outcomes, with generateText and with
// streamText: the real "ai", MockLanguageModelV3 and a live slackbot.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asSchema, generateText, simulateReadableStream, streamText, tool, type ModelMessage } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider"; // ai's own dependency
import { z } from "zod";
import { SlackbotError, verifyReceipt } from "../src/index.js";
import { argsSchemasOf, generateWithApprovals, receiptFor, reportOutcomes, resumeAnswer, suspend, type Message } from "../src/ai-sdk.js";
import { callingModel, usage } from "./support/ai-sdk-model.js";
import { click, client, editInSlack, jwks, uniqueId } from "./support/live.js";

/** StreamPart is a chunk MockLanguageModelV3's doStream streams. */
type StreamPart = LanguageModelV3StreamPart;

const start: ModelMessage[] = [{ role: "user", content: "clean up" }];

describe("Vercel AI SDK: outcomes", () => {
  // The schema trims a trailing slash: the approver's edit keeps one, so
  // the SDK parses it to something else and refuses to run it ("Approved
  // tool input does not match the validated schema output"). The adapter
  // tells slackbot, and the card no longer looks approved and done.
  test("an approved call the SDK refuses to run is reported as not run, and the card says why", async () => {
    const callId = uniqueId("call_ai_refused");
    const ran: unknown[] = [];
    const tools = {
      delete_file: tool({
        description: "Deletes a file.",
        inputSchema: z.object({ path: z.string().transform((p) => p.replace(/\/+$/, "")) }),
        needsApproval: true,
        execute: async (input) => {
          ran.push(input);
          return `deleted ${input.path}`;
        },
      }),
    };
    const model = callingModel("delete_file", { path: "/srv/data" }, callId);
    let token = "";
    const { result, outcomes } = await generateWithApprovals(
      (messages: ModelMessage[]) => generateText({ model, tools, messages }),
      start,
      client,
      {
        argsSchemas: await argsSchemasOf(tools, asSchema),
        onPending: async (a) => {
          token = a.token;
          await editInSlack(a.token, callId, { path: "/srv/data/tmp/" });
        },
      },
    );
    assert.deepEqual(ran, [], "the SDK ran the call after all");
    assert.match(result.text, /Invalid input for tool delete_file/);
    assert.equal(outcomes.length, 1);
    assert.equal(outcomes[0].approved, true);
    assert.equal(outcomes[0].ran, false);
    assert.match(outcomes[0].error ?? "", /does not match the validated schema output/);
    assert.equal(outcomes[0].reportError, undefined);
    const call = (await client.get(token)).calls.find((c) => c.tool_call_id === callId);
    assert.equal(call?.state, "approved");
    assert.equal(call?.outcome?.status, "not_run");
    assert.match(call?.outcome?.summary ?? "", /does not match the validated schema output/);
  });

  // The tool checks its receipt before acting (receiptFor reads it from
  // the messages the SDK hands execute), and the run helper returns it too.
  test("generateWithApprovals returns each call's outcome with its receipt, which the tool checked, and slackbot hears it ran", async () => {
    const callId = uniqueId("call_ai_receipt");
    const checked: string[] = [];
    const tools = {
      delete_file: tool({
        description: "Deletes a file.",
        inputSchema: z.object({ path: z.string() }),
        needsApproval: true,
        execute: async ({ path }, { toolCallId, messages }) => {
          await verifyReceipt(receiptFor({ toolCallId, messages }), await jwks(), { callId: toolCallId, tool: "delete_file", args: { path } });
          checked.push(toolCallId);
          return `deleted ${path}`;
        },
      }),
    };
    const model = callingModel("delete_file", { path: "/srv/old" }, callId);
    let token = "";
    const { outcomes } = await generateWithApprovals((messages: ModelMessage[]) => generateText({ model, tools, messages }), start, client, {
      onPending: (a) => click((token = a.token), callId, "approve"),
    });
    assert.deepEqual(checked, [callId], "the tool did not check its receipt");
    assert.equal(outcomes.length, 1);
    const [o] = outcomes;
    assert.equal(o.callId, callId);
    assert.equal(o.ran, true);
    const claims = await verifyReceipt(o.receipt, await jwks(), { callId, tool: "delete_file", args: { path: "/srv/old" }, token });
    assert.deepEqual(claims.by, ["U0ALICE"]);
    const call = (await client.get(token)).calls.find((c) => c.tool_call_id === callId);
    assert.deepEqual(call?.outcome, { status: "ran" });
  });

  // streamText's result is passed as it is: its content and response are
  // promises the adapter awaits once the stream ends.
  test("streamText: the run helper takes its results, streams, and returns the outcomes", async () => {
    const callId = uniqueId("call_ai_stream");
    const ran: string[] = [];
    const model = new MockLanguageModelV3({
      doStream: async (options) => {
        const done = options.prompt.some((m) => m.role === "tool" && m.content.some((p) => p.type === "tool-result"));
        const finish = { type: "finish" as const, usage, finishReason: done ? { unified: "stop" as const, raw: "stop" } : { unified: "tool-calls" as const, raw: "tool_calls" } };
        const chunks: StreamPart[] = done
          ? [
              { type: "stream-start" as const, warnings: [] },
              { type: "text-start" as const, id: "t1" },
              { type: "text-delta" as const, id: "t1", delta: "all " },
              { type: "text-delta" as const, id: "t1", delta: "done" },
              { type: "text-end" as const, id: "t1" },
              finish,
            ]
          : [
              { type: "stream-start" as const, warnings: [] },
              { type: "tool-call" as const, toolCallId: callId, toolName: "delete_file", input: JSON.stringify({ path: "/srv/stream" }) },
              finish,
            ];
        return { stream: simulateReadableStream({ chunks }) };
      },
    });
    const tools = {
      delete_file: tool({
        description: "Deletes a file.",
        inputSchema: z.object({ path: z.string() }),
        needsApproval: true,
        execute: async ({ path }) => {
          ran.push(path);
          return `deleted ${path}`;
        },
      }),
    };
    const { result, messages, outcomes } = await generateWithApprovals(
      (messages: ModelMessage[]) => streamText({ model, tools, messages }),
      start,
      client,
      { onPending: (a) => click(a.token, callId, "approve") },
    );
    assert.equal(await result.text, "all done");
    assert.deepEqual(ran, ["/srv/stream"]);
    assert.deepEqual(outcomes.map((o) => [o.callId, o.approved, o.ran]), [[callId, true, true]]);
    assert.ok(outcomes[0].receipt, "the approved call's receipt");
    assert.equal((messages as Message[]).at(-1)?.role, "assistant");
    assert.equal(model.doStreamCalls.length, 2);
  });

  // Stop the world: whoever resumes reports what became of the calls.
  test("stop the world: resumeAnswer and reportOutcomes tell slackbot the approved call ran", async () => {
    const callId = uniqueId("call_ai_saved");
    const tools = {
      delete_file: tool({
        description: "Deletes a file.",
        inputSchema: z.object({ path: z.string() }),
        needsApproval: true,
        execute: async ({ path }) => `deleted ${path}`,
      }),
    };
    const model = callingModel("delete_file", { path: "/srv/saved" }, callId);
    const generate = (messages: ModelMessage[]) => generateText({ model, tools, messages });
    const saved = JSON.parse(JSON.stringify(await suspend(client, await generate(start), start)));
    assert.equal(await resumeAnswer(client, saved), undefined, "nobody decided yet");
    await click(saved.token, callId, "approve");
    const answered = await resumeAnswer(client, saved, { wait: true });
    assert.ok(answered);
    const next = await generate(answered.messages as ModelMessage[]);
    assert.equal(next.text, `${callId}: deleted /srv/saved`);
    const outcomes = await reportOutcomes(client, answered, next);
    assert.deepEqual(outcomes.map((o) => [o.callId, o.ran, o.reportError]), [[callId, true, undefined]]);
    const call = (await client.get(saved.token)).calls.find((c) => c.tool_call_id === callId);
    assert.deepEqual(call?.outcome, { status: "ran" });
    // The report stands: the same again changes nothing, another is a conflict.
    assert.deepEqual((await client.reportOutcome(saved.token, { tool_call_id: callId, ran: true })).calls[0].outcome, { status: "ran" });
    await assert.rejects(
      client.reportOutcome(saved.token, { tool_call_id: callId, ran: false, error: "changed my mind" }),
      (err: Error) => err instanceof SlackbotError && err.status === 409 && err.code === "conflict" && /reported already/.test(err.message),
    );
  });
});
