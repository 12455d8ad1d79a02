// A tool whose input schema is made with the ai package's jsonSchema()
// helper, and whose output schema is a zod 4 schema.
import { jsonSchema, tool } from "ai";
import { z } from "zod";

export const forecast = tool({
  title: "Forecast",
  description: "The forecast for a city, a day at a time",
  inputSchema: jsonSchema<{ city: string; days?: number }>({
    type: "object",
    properties: {
      city: { type: "string", minLength: 1 },
      days: { type: "integer", minimum: 1, maximum: 7, default: 3 },
    },
    required: ["city"],
    additionalProperties: false,
  }),
  outputSchema: z.object({
    city: z.string(),
    days: z.array(z.object({ day: z.number().int(), high: z.number() })),
  }),
  execute: async ({ city, days = 3 }) => ({
    city,
    days: Array.from({ length: days }, (_, i) => ({ day: i + 1, high: 20 + i })),
  }),
});
