import { safeParseJSON, parseJSON, tool, jsonSchema, asSchema, convertBase64ToUint8Array, convertUint8ArrayToBase64, zodSchema } from "@ai-sdk/provider-utils";
import { z } from "zod";

export async function execute() {
  const weather = tool({
    description: "Weather in a city",
    inputSchema: zodSchema(z.object({ city: z.string(), unit: z.enum(["c", "f"]).optional() })),
    execute: async ({ city }) => ({ city, temperature: 21 }),
  });
  const ok = await safeParseJSON({ text: '{"city":"Paris"}', schema: weather.inputSchema });
  const bad = await safeParseJSON({ text: '{"city":1}', schema: weather.inputSchema });
  const broken = await safeParseJSON({ text: "{oops" });
  return {
    description: weather.description,
    schema: await asSchema(weather.inputSchema).jsonSchema,
    ok: ok.success ? ok.value : null,
    bad: bad.success ? null : bad.error.name,
    broken: broken.success ? null : broken.error.name,
    parsed: await parseJSON({ text: "[1,2,3]" }),
    result: await weather.execute({ city: "Oslo" }, { toolCallId: "t1", messages: [] }),
    plain: await asSchema(jsonSchema({ type: "object", properties: { q: { type: "string" } } })).jsonSchema,
    base64: [convertUint8ArrayToBase64(new Uint8Array([104, 105, 255])), Array.from(convertBase64ToUint8Array("aGn_"))],
  };
}
