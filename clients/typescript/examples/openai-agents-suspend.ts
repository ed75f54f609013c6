import { Agent, RunState, run, tool } from "@openai/agents";
import { z } from "zod";
import { SlackbotClient } from "@slackbot/client";
import { type Suspended, resume, suspend } from "@slackbot/client/openai-agents";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const deleteFile = tool({
  name: "delete_file",
  description: "Deletes a file.",
  parameters: z.object({ path: z.string() }),
  needsApproval: true,
  execute: async ({ path }) => `deleted ${path}`,
});
const agent = new Agent({ name: "janitor", instructions: "Clean up.", tools: [deleteFile] });

// Stop the world: post the cards, keep {token, state} anywhere (plain JSON), and exit.
const stopped = await run(agent, "clean /srv/old");
const stored = JSON.stringify(await suspend(slackbot, stopped));

// Later, in any process: undefined while people decide, else the state with their decisions.
const state = await resume(slackbot, RunState, agent, JSON.parse(stored) as Suspended);
if (state) console.log((await run(agent, state)).finalOutput);
