// Approvers' edits against what the AI SDK ("ai" 6) re-validates before it
// runs an approved call (validateApprovedToolApprovals in ai's
// dist/index.mjs): the approved input is parsed again with the tool's
// schema and must equal the tool call's input, and needsApproval is asked
// again with it. The real generateText, MockLanguageModelV3 and a live
// slackbot whose approvers edit in Slack.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asSchema, generateText, tool, type ModelMessage, type ToolSet } from "ai";
import type { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { argsSchemasOf, generateWithApprovals, holdApprovals, type Message } from "../src/ai-sdk.js";
import { callingModel } from "./support/ai-sdk-model.js";
import { FormRefused, assertReceipt, click, client, editInSlack, uniqueId } from "./support/live.js";

function generator(model: MockLanguageModelV3, tools: ToolSet) {
  return (messages: Message[]) => generateText({ model, tools, messages: messages as ModelMessage[] });
}

const start: Message[] = [{ role: "user", content: "clean up" }];

/** withDefault is delete_file with a schema whose recursive has a default, and the inputs it ran with. */
function withDefault() {
  const ran: unknown[] = [];
  const tools = {
    delete_file: tool({
      description: "Deletes a file.",
      inputSchema: z.object({ path: z.string(), recursive: z.boolean().default(false) }),
      needsApproval: true,
      execute: async (input) => {
        ran.push(input);
        return `deleted ${input.path}`;
      },
    }),
  };
  return { ran, tools };
}

/** withThreshold is delete_rows, which needs approval past 100 rows, and the inputs it ran with. */
function withThreshold() {
  const ran: unknown[] = [];
  const tools = {
      delete_rows: tool({
        description: "Deletes rows of a table.",
        inputSchema: z.object({ table: z.string(), rows: z.number() }),
        needsApproval: async ({ rows }) => rows > 100,
        execute: async (input) => {
          ran.push(input);
          return `deleted ${input.rows} rows`;
        },
      }),
  };
  return { ran, tools };
}

describe("Vercel AI SDK: edits that hold", () => {
  // The model leaves out recursive; the schema's default fills it in, so
  // the SDK's tool call holds {path, recursive: false} and its approval
  // request the model's own input, which the SDK parses again.
  test("an edit on a tool whose schema has a default runs with exactly the edited arguments", async () => {
    const callId = uniqueId("call_ai_default");
    const { ran, tools } = withDefault();
    const model = callingModel("delete_file", { path: "/srv/data" }, callId);
    let token = "";
    const { result, outcomes } = await generateWithApprovals(generator(model, tools), start, client, {
      argsSchemas: await argsSchemasOf(tools, asSchema),
      onPending: async (a) => {
        token = a.token;
        const call = a.calls.find((c) => c.tool_call_id === callId);
        assert.ok(call, "the call is on the request");
        await editInSlack(a.token, callId, { path: "/srv/data/tmp", recursive: true });
      },
    });
    assert.deepEqual(ran, [{ path: "/srv/data/tmp", recursive: true }]);
    assert.equal(result.text, `${callId}: deleted /srv/data/tmp`);
    assert.deepEqual(outcomes.map((o) => [o.callId, o.approved, o.ran]), [[callId, true, true]]);
    await assertReceipt(token, callId, { path: "/srv/data/tmp", recursive: true });
  });

  // Without the default filled in, the edit would not be what runs (the
  // schema adds it): the schema sent for Edit requires every member that
  // has a default, so the form refuses such an edit before anything runs.
  test("an edit that leaves out a defaulted member is refused in the form", async () => {
    const callId = uniqueId("call_ai_default_missing");
    const { ran, tools } = withDefault();
    const model = callingModel("delete_file", { path: "/srv/data" }, callId);
    await generateWithApprovals(generator(model, tools), start, client, {
      argsSchemas: await argsSchemasOf(tools, asSchema),
      onPending: async (a) => {
        await assert.rejects(editInSlack(a.token, callId, { path: "/srv/data/tmp" }), (err: Error) => err instanceof FormRefused && /recursive/.test(err.message));
        await editInSlack(a.token, callId, { path: "/srv/data/tmp", recursive: false });
      },
    });
    assert.deepEqual(ran, [{ path: "/srv/data/tmp", recursive: false }]);
  });

  // needsApproval is asked again with the edited input: below the
  // threshold the SDK turns the approval into a denial ("does not require
  // approval"). Such a tool gets no Edit unless holdApprovals wraps it.
  test("a conditional needsApproval: no Edit on the card unless the tools are held", async () => {
    const callId = uniqueId("call_ai_threshold");
    const { ran, tools } = withThreshold();
    assert.deepEqual(Object.keys(await argsSchemasOf(tools, asSchema)), [], "a conditional tool was offered for Edit");
    const model = callingModel("delete_rows", { table: "orders", rows: 500 }, callId);
    await generateWithApprovals(generator(model, tools), start, client, {
      argsSchemas: await argsSchemasOf(tools, asSchema),
      onPending: async (a) => {
        await assert.rejects(editInSlack(a.token, callId, { table: "orders", rows: 50 }), /no "edit" button/);
        await click(a.token, callId, "approve");
      },
    });
    assert.deepEqual(ran, [{ table: "orders", rows: 500 }]);
  });

  test("a conditional needsApproval held: an edit below the threshold runs as edited", async () => {
    const callId = uniqueId("call_ai_held");
    const threshold = withThreshold();
    const ran = threshold.ran;
    const tools = holdApprovals(threshold.tools);
    const model = callingModel("delete_rows", { table: "orders", rows: 500 }, callId);
    let token = "";
    const { result } = await generateWithApprovals(generator(model, tools), start, client, {
      argsSchemas: await argsSchemasOf(tools, asSchema),
      onPending: async (a) => {
        token = a.token;
        await editInSlack(a.token, callId, { table: "orders", rows: 50 });
      },
    });
    assert.deepEqual(ran, [{ table: "orders", rows: 50 }]);
    assert.equal(result.text, `${callId}: deleted 50 rows`);
    const md = (await client.get(token)).results?.metadata?.[callId];
    assert.ok(md?.slackbot_receipt, "the edited call has a receipt");
  });
});
