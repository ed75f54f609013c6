import { asSchema, generateText, tool, type ModelMessage } from "ai";
import { z } from "zod";
import { SlackbotClient } from "@slackbot/client";
import { argsSchemasOf, generateWithApprovals } from "@slackbot/client/ai-sdk";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const tools = {
  delete_file: tool({ description: "Deletes a file.", inputSchema: z.object({ path: z.string() }),
    needsApproval: true, execute: async ({ path }) => `deleted ${path}` }),
};
const { result, messages } = await generateWithApprovals(
  // The model: any AI SDK model, or a gateway model id as here.
  (messages) => generateText({ model: "openai/gpt-5.2", tools, messages: messages as ModelMessage[] }),
  [{ role: "user", content: "clean /srv/old" }],
  slackbot, { requester: "janitor", argsSchemas: await argsSchemasOf(tools, asSchema) }); // argsSchemas: Edit on the cards
console.log(result.text, messages.length);
