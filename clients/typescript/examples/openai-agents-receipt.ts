import { tool } from "@openai/agents";
import { z } from "zod";
import { fetchJwks, verifyReceipt } from "@slackbot/client";
import { receiptOf } from "@slackbot/client/openai-agents";

declare function refundOrder(input: { order_id: string; amount: number }): Promise<string>;

const jwks = await fetchJwks("https://slackbot.example.com"); // its /.well-known/jwks.json
export const refund = tool({
  name: "issue_refund",
  description: "Refunds an order.",
  needsApproval: true,
  parameters: z.object({ order_id: z.string(), amount: z.number() }),
  async execute(input, ctx, details) {
    const { callId, name, arguments: args } = details!.toolCall!; // args: the raw JSON text that runs
    await verifyReceipt(receiptOf(ctx, callId), jwks, { callId, tool: name, args }); // throws ReceiptError
    return refundOrder(input);
  },
});
