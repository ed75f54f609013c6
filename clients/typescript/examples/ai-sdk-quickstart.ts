import { asSchema, generateText, tool, type ModelMessage } from "ai";
import { z } from "zod";
import { SlackbotClient, fetchJwks, verifyReceipt } from "@slackbot/client";
import { argsSchemasOf, generateWithApprovals, receiptFor } from "@slackbot/client/ai-sdk";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const jwks = await fetchJwks("https://slackbot.example.com"); // the keys slackbot signs receipts with

const tools = {
  delete_file: tool({
    description: "Deletes a file.",
    inputSchema: z.object({ path: z.string(), recursive: z.boolean().default(false) }),
    needsApproval: true,
    execute: async (input, { toolCallId, messages }) => {
      // The receipt binds this call, this tool and exactly these arguments (an approver's edit, if any).
      await verifyReceipt(receiptFor({ toolCallId, messages }), jwks, { callId: toolCallId, tool: "delete_file", args: input });
      return `deleted ${input.path}`;
    },
  }),
};

// Each time the model stops on approval requests: one slackbot request, a card per call. Approved
// calls run, denied ones reach the model with the reason; whether each approved call ran is
// reported back to slackbot, which shows it on the card.
const { result, outcomes } = await generateWithApprovals(
  (messages: ModelMessage[]) => generateText({ model: "openai/gpt-5.2", tools, messages }), // or streamText(…)
  [{ role: "user", content: "clean /srv/old" }],
  slackbot,
  { requester: "janitor", argsSchemas: await argsSchemasOf(tools, asSchema) }, // argsSchemas: Edit on the cards
);
console.log(result.text);
for (const o of outcomes) console.log(o.callId, o.approved ? (o.ran ? "ran" : `did not run: ${o.error}`) : `denied: ${o.message}`);
