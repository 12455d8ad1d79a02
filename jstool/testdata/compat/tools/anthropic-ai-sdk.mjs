import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { z } from "zod";

// What a tool does with the SDK before it reaches the network: build the
// client and a structured-output format from a zod schema.
export function execute() {
  const client = new Anthropic({ apiKey: "sk-ant-test", baseURL: "https://api.example.com", maxRetries: 0 });
  const format = zodOutputFormat(z.object({ answer: z.string(), confidence: z.number().min(0).max(1) }));
  return {
    baseURL: client.baseURL,
    format: { type: format.type, schema: format.schema },
    parsed: format.parse('{"answer":"42","confidence":0.9}'),
    errors: [Anthropic.APIError.name, Anthropic.RateLimitError.name, Anthropic.HUMAN_PROMPT ?? null],
  };
}
