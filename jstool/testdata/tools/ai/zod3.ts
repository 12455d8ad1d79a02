// A tool in the ai package's v4 shape ({description, parameters, execute})
// with a zod 3 schema (zod 3.25 installed as zod3), which has no JSON
// Schema conversion of its own: the prelude converts it.
import { z } from "zod3";

enum Unit { Celsius = "C", Fahrenheit = "F" }
enum Level { Low, High }

export const report = {
  description: "A weather report",
  parameters: z.object({
    city: z.string().min(1).max(80).describe("The city"),
    code: z.string().regex(/^[A-Z]{3}$/).optional(),
    email: z.string().email().optional(),
    days: z.number().int().min(1).max(7).default(3),
    ratio: z.number().gt(0).lt(1).nullable(),
    unit: z.nativeEnum(Unit),
    level: z.nativeEnum(Level).optional(),
    kind: z.enum(["daily", "hourly"]),
    exact: z.literal(true),
    tags: z.array(z.string()).min(1).max(5),
    pair: z.tuple([z.string(), z.number()]),
    extra: z.record(z.boolean()),
    either: z.union([z.string(), z.number()]),
    trimmed: z.string().transform((s) => s.trim()),
    when: z.date().optional(),
    anything: z.any(),
  }).strict(),
  outputSchema: z.object({ city: z.string(), days: z.number().default(3), size: z.string().transform((s) => s.length) }),
  execute: ({ city }: { city: string }) => ({ city, days: 3, size: "x" }),
};
