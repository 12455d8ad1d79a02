// A tool in the shape the ai package gives tools: tool({description,
// inputSchema, execute}), here with a zod schema.
import { tool } from "ai";
import { z } from "zod";

export const weather = tool({
  description: "Get the weather in a location",
  inputSchema: z.object({ location: z.string().describe("The location") }),
  execute: async ({ location }) => ({ location, temperature: 60 + location.length }),
});
