// What became of the calls people approved, read from the result the AI
// SDK returns once it has the answers: before it calls the model again it
// runs each approved call and puts one tool message in
// response.messages, whose tool-result parts say, per call, the tool's
// output, its error ("error-text"/"error-json": the tool threw, or the SDK
// refused the approved input: "Invalid input for tool …"), or
// "execution-denied" (the SDK turned the approval into a denial: "does not
// require approval"). Each is reported to slackbot, so the card of a call
// that never ran does not stay "approved".

import type { SlackbotClient } from "./client.js";
import type { Outcome, RunOutcome } from "./decisions.js";
import type { Answer, Message, StepResult } from "./ai-sdk.js";

export type { RunOutcome } from "./decisions.js";

/** maxError is how much of an error slackbot takes (its /outcomes endpoint's bound). */
const maxError = 1000;

interface ToolResultPart {
  type: "tool-result";
  toolCallId: string;
  output?: { type?: string; value?: unknown; reason?: string };
}

/** sdkRefusal starts what the SDK says when it refuses an approved call's input (InvalidToolInputError). */
const sdkRefusal = "Invalid input for tool ";

/**
 * ranOutcomes returns the answer's outcomes with what result (the next
 * generateText or settled streamText result, generated from the answer's
 * messages) says became of each approved call.
 */
export function ranOutcomes(answered: Pick<Answer, "outcomes">, result: StepResult): RunOutcome[] {
  const results = new Map<string, ToolResultPart>();
  for (const m of result.response.messages as readonly Message[]) {
    if (m.role !== "tool" || !Array.isArray(m.content)) continue;
    for (const p of m.content as ToolResultPart[]) if (p?.type === "tool-result" && !results.has(p.toolCallId)) results.set(p.toolCallId, p);
  }
  return answered.outcomes.map((o) => {
    const r = o.approved ? results.get(o.callId) : undefined;
    if (!r) return { ...o };
    const out = r.output ?? {};
    if (out.type === "execution-denied") return { ...o, ran: false, error: clip(out.reason || "The AI SDK denied the approved call.") };
    if (out.type === "error-text" || out.type === "error-json") {
      const text = typeof out.value === "string" ? out.value : JSON.stringify(out.value);
      return { ...o, ran: !text.startsWith(sdkRefusal), error: clip(text) };
    }
    return { ...o, ran: true };
  });
}

/**
 * reportOutcomes reads what became of the answer's approved calls from
 * result (ranOutcomes) and reports each to slackbot
 * (SlackbotClient.reportOutcome), which shows it on the call's card: a
 * call the SDK refused to run says it did not run, and why. A report
 * slackbot refuses or cannot take is not thrown (the run went on) but
 * kept in the outcome's reportError.
 */
export async function reportOutcomes(
  client: SlackbotClient,
  answered: Pick<Answer, "outcomes"> & { approval: { token: string } },
  result: StepResult,
): Promise<RunOutcome[]> {
  const outcomes = ranOutcomes(answered, result);
  await Promise.all(
    outcomes.map(async (o) => {
      if (o.ran === undefined) return;
      try {
        await client.reportOutcome(answered.approval.token, { tool_call_id: o.callId, ran: o.ran, ...(o.error ? { error: o.error } : {}) });
      } catch (err) {
        o.reportError = err instanceof Error ? err.message : String(err);
      }
    }),
  );
  return outcomes;
}

function clip(s: string): string {
  return s.length <= maxError ? s : s.slice(0, maxError - 1) + "…";
}
