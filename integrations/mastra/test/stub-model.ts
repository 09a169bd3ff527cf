import { MastraLanguageModelV2Mock } from "@mastra/core/test-utils/llm-mock";

/** One message of the prompt a language model receives (the parts tests look at). */
export interface PromptMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | Array<{ type: string; text?: string; toolName?: string; output?: { type: string; value: unknown } }>;
}

/** What the stub answers on one model call: plain text, or one tool call. */
export type Step = { text: string } | { tool: string; input: Record<string, unknown> };

const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/**
 * A language model that answers from a script instead of a provider, recording every prompt it
 * receives. Each model call consumes the next step; a call past the end of the script fails.
 */
export function stubModel(script: Step[]) {
  const prompts: PromptMessage[][] = [];
  let toolCalls = 0;
  function next(prompt: unknown) {
    prompts.push(prompt as PromptMessage[]);
    const step = script.shift();
    if (step === undefined) throw new Error("stub model: no scripted step left");
    if ("text" in step) return { part: { type: "text" as const, text: step.text }, finishReason: "stop" as const };
    toolCalls += 1;
    const call = { type: "tool-call" as const, toolCallId: `call-${toolCalls}`, toolName: step.tool, input: JSON.stringify(step.input) };
    return { part: call, finishReason: "tool-calls" as const };
  }
  const model = new MastraLanguageModelV2Mock({
    doGenerate: async (options) => {
      const { part, finishReason } = next(options.prompt);
      return { content: [part], finishReason, usage, warnings: [] };
    },
    doStream: async (options) => {
      const { part, finishReason } = next(options.prompt);
      const parts =
        part.type === "text"
          ? [
              { type: "text-start" as const, id: "text-1" },
              { type: "text-delta" as const, id: "text-1", delta: part.text },
              { type: "text-end" as const, id: "text-1" },
            ]
          : [part];
      const stream = new ReadableStream({
        start(controller) {
          for (const chunk of [{ type: "stream-start" as const, warnings: [] }, ...parts, { type: "finish" as const, finishReason, usage }]) {
            controller.enqueue(chunk);
          }
          controller.close();
        },
      });
      return { stream };
    },
  });
  return { model, prompts };
}

/** The system messages of a prompt, in order. */
export function systemTexts(prompt: PromptMessage[]): string[] {
  return prompt.filter((message) => message.role === "system").map((message) => message.content as string);
}

/** The outputs of the tool results in a prompt, in order. */
export function toolOutputs(prompt: PromptMessage[]): unknown[] {
  return prompt
    .filter((message) => message.role === "tool")
    .flatMap((message) => (message.content as Array<{ output?: { value: unknown } }>).map((part) => part.output?.value));
}
