import { z } from "zod/v3";
import { zodToJsonSchema } from "zod-to-json-schema";

// zod-to-json-schema converts zod 3 schemas; zod 4 ships zod 3 as "zod/v3".
const Weather = z.object({
  city: z.string().min(1).describe("City name"),
  unit: z.enum(["c", "f"]).default("c"),
  days: z.number().int().min(1).max(14).optional(),
  when: z.string().datetime().nullable(),
  coords: z.tuple([z.number(), z.number()]).optional(),
  extra: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
});

export function execute() {
  return {
    default: zodToJsonSchema(Weather, "weather"),
    openAi: zodToJsonSchema(Weather, { target: "openAi" }),
    openApi: zodToJsonSchema(Weather, { target: "openApi3", $refStrategy: "none" }),
  };
}
