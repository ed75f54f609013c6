import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createAgent, humanInTheLoopMiddleware, tool } from "langchain";
import { z } from "zod";
import { SlackbotClient } from "@slackbot/client";
import { invokeWithApprovals } from "@slackbot/client/langgraph";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const deleteFile = tool(async ({ path }) => `deleted ${path}`, {
  name: "delete_file", description: "Deletes a file.", schema: z.object({ path: z.string() }),
});
const agent = createAgent({
  model: "openai:gpt-5.2",
  tools: [deleteFile],
  middleware: [humanInTheLoopMiddleware({ interruptOn: {
    // The card offers Edit only where "edit" is allowed and argsSchema says what an edit may be.
    delete_file: { allowedDecisions: ["approve", "edit", "reject"], argsSchema: toJsonSchema(deleteFile.schema) },
  } })],
  checkpointer: new MemorySaver(), // any checkpointer: the thread waits there while people decide
});

// Each time the agent stops on the middleware's HITLRequest: one slackbot request, one card per
// call; the thread resumes with the HITLResponse (approve, edit, or reject with the reason).
const result = await invokeWithApprovals(agent, { messages: [{ role: "user", content: "Clean /srv/old." }] },
  { configurable: { thread_id: "t1" } }, slackbot, Command, { requester: "janitor" });
console.log(result.messages.at(-1)?.content);
