import { tool } from "@openai/agents";
import { z } from "zod";
import { fetchJwks, verifyReceipt } from "@slackbot/client";

async function refundOrder(input: { order_id: string; amount: number }): Promise<string> {
  return `refunded ${input.amount} on ${input.order_id}`; // your service
}

const jwks = await fetchJwks("https://slackbot.example.com"); // its /.well-known/jwks.json
const receipts = new Map<string, string>(); // callId → receipt, from ask()'s outcomes
export const refund = tool({
  name: "issue_refund", description: "Refunds an order.", needsApproval: true,
  parameters: z.object({ order_id: z.string(), amount: z.number() }),
  async execute(input, _ctx, details) {
    const { callId, name, arguments: args } = details!.toolCall!; // args: the raw JSON text that runs
    await verifyReceipt(receipts.get(callId), jwks, { callId, tool: name, args }); // throws ReceiptError
    return refundOrder(input);
  },
});
