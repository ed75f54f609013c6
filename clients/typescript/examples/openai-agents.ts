import { Agent, run, tool } from "@openai/agents";
import { z } from "zod";
import { SlackbotClient, fetchJwks, verifyReceipt } from "@slackbot/client";
import { editable, receiptOf, runWithApprovals } from "@slackbot/client/openai-agents";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const jwks = await fetchJwks("https://slackbot.example.com"); // the keys slackbot signs receipts with

// editable(): approvers may edit the call's arguments in Slack (checked against its parameters),
// and the tool then runs with exactly the edit. Without it the card offers no Edit.
const deleteFile = editable(
  tool({
    name: "delete_file",
    description: "Deletes a file.",
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    execute: async ({ path }, ctx, details) => {
      const { callId, name, arguments: args } = details!.toolCall!;
      // Throws unless slackbot approved exactly this call with exactly these arguments.
      await verifyReceipt(receiptOf(ctx, callId), jwks, { callId, tool: name, args });
      return `deleted ${path}`;
    },
  }),
);
const agent = new Agent({ name: "janitor", instructions: "Clean up.", tools: [deleteFile] });

// Each time the run stops on interruptions: one slackbot request, its calls' cards in Slack;
// approved calls run, denied ones reach the model with the reason.
const { result, outcomes } = await runWithApprovals(run, agent, "clean /srv/old", slackbot, { requester: "janitor" });
console.log(result.finalOutput, outcomes); // outcomes: each call's decision, with its receipt when approved
