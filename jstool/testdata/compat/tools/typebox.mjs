import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { TypeCompiler } from "@sinclair/typebox/compiler";

const Order = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  sku: Type.String({ pattern: "^[A-Z]{3}-\\d+$" }),
  qty: Type.Number({ exclusiveMinimum: 0 }),
  tags: Type.Optional(Type.Array(Type.String(), { maxItems: 3 })),
  kind: Type.Union([Type.Literal("retail"), Type.Literal("bulk")]),
});

export function execute() {
  const good = { id: 1, sku: "ABC-12", qty: 2, kind: "bulk" };
  const bad = { id: 0, sku: "abc", qty: 0, tags: ["a", "b", "c", "d"], kind: "x" };
  const checker = TypeCompiler.Compile(Order);
  return {
    schema: Order,
    good: Value.Check(Order, good),
    errors: [...Value.Errors(Order, bad)].map((e) => ({ path: e.path, message: e.message, type: e.type })),
    compiled: [checker.Check(good), checker.Check(bad)],
    converted: Value.Convert(Order, { id: "7", sku: "XYZ-1", qty: "1.5", kind: "retail" }),
  };
}
