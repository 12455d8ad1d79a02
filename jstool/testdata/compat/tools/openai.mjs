import OpenAI from "openai";
import { zodResponseFormat, zodFunction } from "openai/helpers/zod";
import { z } from "zod";

// What a tool does with the SDK before it reaches the network: build the
// client and the structured-output formats from zod schemas.
const Event = z.object({ name: z.string(), date: z.string(), participants: z.array(z.string()) });

export function execute() {
  const client = new OpenAI({ apiKey: "sk-test", baseURL: "https://api.example.com/v1", maxRetries: 0 });
  const format = zodResponseFormat(Event, "event");
  const fn = zodFunction({ name: "lookup", parameters: z.object({ id: z.number().int() }) });
  return {
    baseURL: client.baseURL,
    format: { type: format.type, json_schema: format.json_schema },
    parsed: format.$parseRaw('{"name":"x","date":"2024-01-01","participants":["a"]}'),
    fn: fn.function,
    errors: [new OpenAI.APIError(404, { message: "nope" }, "Not found", new Headers()).message, OpenAI.NotFoundError.name],
  };
}
