import { fetchJwks, verifyReceipt } from "@slackbot/client";

async function refundOrder(orderId: string, amount: number, approvedBy: string[]): Promise<string> {
  return `refunded ${amount} on ${orderId}, approved by ${approvedBy.join(", ")}`; // your service
}

const jwks = await fetchJwks("https://slackbot.example.com"); // again when err.kind === "unknown_key"
// receipt = approval.results.metadata[callId].slackbot_receipt (or an adapter Outcome's .receipt)
export async function issueRefund(callId: string, rawArgs: string, receipt: string | undefined) {
  const claims = await verifyReceipt(receipt, jwks, { callId, tool: "issue_refund", args: rawArgs }); // throws ReceiptError
  const { order_id, amount } = JSON.parse(rawArgs) as { order_id: string; amount: number };
  return refundOrder(order_id, amount, claims.by);
}
