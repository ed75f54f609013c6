import { Agent, run, tool, RunState } from "@openai/agents";
import { z } from "zod";
import { SlackbotClient } from "@slackbot/client";
import { runWithApprovals, suspend, resume } from "@slackbot/client/openai-agents";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const deleteFile = tool({
  name: "delete_file", description: "Deletes a file.", parameters: z.object({ path: z.string() }),
  needsApproval: true, execute: async ({ path }) => `deleted ${path}`,
});
const agent = new Agent({ name: "janitor", instructions: "Clean up.", tools: [deleteFile] });

// Inline: each time the run stops on interruptions, one slackbot request; approved calls run
// (with edited arguments when edited), denied ones reach the model with the reason.
const result = await runWithApprovals(run, agent, "clean /srv/old", slackbot, { requester: "janitor" });
