// A scripted model for the AI SDK tests: MockLanguageModelV3 from ai/test
// that asks for one tool call, then says what the tool results were.

import { MockLanguageModelV3 } from "ai/test";

export const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

type Output = { type: string; value?: unknown; reason?: string };

/** said is how a tool result reads to the model. */
export function said(o: Output): string {
  if (o.type === "execution-denied") return `denied: ${o.reason ?? ""}`;
  if (o.type === "error-text" || o.type === "error-json") return `error: ${typeof o.value === "string" ? o.value : JSON.stringify(o.value)}`;
  return typeof o.value === "string" ? o.value : JSON.stringify(o.value);
}

/** callingModel asks for toolName with input once, as call callId, then says what the tool results were. */
export function callingModel(toolName: string, input: Record<string, unknown>, callId: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const results = options.prompt
        .filter((m) => m.role === "tool")
        .flatMap((m) => m.content)
        .filter((p) => p.type === "tool-result");
      if (results.length === 0) {
        return {
          content: [{ type: "tool-call", toolCallId: callId, toolName, input: JSON.stringify(input) }],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: [],
        };
      }
      const text = results.map((r) => `${r.toolCallId}: ${said(r.output as Output)}`).join("\n");
      return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
}
