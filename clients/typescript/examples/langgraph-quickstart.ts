import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt } from "@langchain/langgraph";
import { SlackbotClient } from "@slackbot/client";
import { invokeWithApprovals, pendingToolCalls, type Decisions, type PendingToolCall } from "@slackbot/client/langgraph";

const slackbot = new SlackbotClient("https://slackbot.example.com", process.env.SLACKBOT_API_KEY!);
const State = Annotation.Root({
  toolCalls: Annotation<PendingToolCall[]>(),
  results: Annotation<string[]>(),
});
async function runTool(name: string, args: Record<string, unknown>): Promise<string> {
  return `${name} ran with ${JSON.stringify(args)}`; // your tools
}
// In your graph (compiled with a checkpointer), the node that gates the tool calls:
const review = async (state: typeof State.State) => {
  const decisions = interrupt(pendingToolCalls(state.toolCalls)) as Decisions; // nothing runs before this
  return { results: await Promise.all(state.toolCalls.map((c) => {
    const d = decisions[c.id];
    return d.type === "approve" ? runTool(c.name, d.args) : `denied: ${d.message}`; // d.args: edited or not
  })) };
};
const graph = new StateGraph(State).addNode("review", review).addEdge(START, "review").addEdge("review", END)
  .compile({ checkpointer: new MemorySaver() });
const input = { toolCalls: [{ id: "call_1", name: "delete_file", args: { path: "/srv/old" } }] };
const out = await invokeWithApprovals(graph, input, { configurable: { thread_id: "t1" } }, slackbot, Command);
console.log(out.results);
