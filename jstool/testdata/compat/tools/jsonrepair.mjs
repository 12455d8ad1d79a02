import { jsonrepair } from "jsonrepair";

export function execute() {
  const broken = [
    "{name: 'John', age: 30, tags: ['a' 'b'],}",
    '{"a": 1, "b": [1, 2, // comment\n 3], "c": True, "d": None}',
    '```json\n{"truncated": [1, 2, "thr',
    "callback({\"x\": NaN, 'y': \"it\\u0027s\"})",
    '{"s": "line\nbreak", "q": “curly”}',
  ];
  return { repaired: broken.map((s) => jsonrepair(s)) };
}
