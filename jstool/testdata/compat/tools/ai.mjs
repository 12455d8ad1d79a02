import { generateText, tool, stepCountIs, jsonSchema } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

// A tool-calling loop with the AI SDK's own mock model: the model asks for
// a tool call, the SDK runs the tool, the model answers with its result.
const usage = { inputTokens: { total: 10, noCache: 10 }, outputTokens: { total: 5, text: 5 } };

export async function execute() {
  let step = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      step++;
      if (step === 1) {
        return { finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [], content: [{ type: "tool-call", toolCallId: "call-1", toolName: "convert", input: JSON.stringify({ celsius: 21.5 }) }] };
      }
      const result = prompt.at(-1).content[0].output.value;
      return { finishReason: { unified: "stop", raw: undefined }, usage, warnings: [], content: [{ type: "text", text: `It is ${result.fahrenheit}°F.` }] };
    },
  });
  const convert = tool({
    description: "Celsius to Fahrenheit",
    inputSchema: z.object({ celsius: z.number() }),
    execute: async ({ celsius }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
  });
  const res = await generateText({ model, prompt: "How warm is 21.5°C?", tools: { convert }, stopWhen: stepCountIs(3) });
  return {
    text: res.text,
    steps: res.steps.length,
    toolCalls: res.steps[0].toolCalls.map((c) => ({ name: c.toolName, input: c.input })),
    toolResults: res.steps[0].toolResults.map((r) => r.output),
    usage: res.totalUsage,
    schema: await jsonSchema({ type: "object", properties: { q: { type: "string" } } }).jsonSchema,
  };
}
