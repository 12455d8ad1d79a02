import inspect from "object-inspect";

export function execute() {
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  class Point {
    constructor() {
      this.x = 1;
    }
  }
  return {
    out: [
      inspect({ a: [1, "two", null, undefined], b: { c: { d: { e: 1 } } } }, { depth: 2 }),
      inspect(cyclic),
      inspect(new Map([["k", new Set([1, 2])]])),
      inspect([1, , 3]),
      inspect("quote'd", { quoteStyle: "double" }),
      inspect(Symbol("s")),
      inspect(-0),
      inspect(10n),
      inspect(new Point()),
      inspect(function named() {}),
      inspect(new Error("boom")),
      inspect(/re/g),
      inspect(Buffer.from("hi")),
      inspect({ long: "x".repeat(30) }, { maxStringLength: 10 }),
    ],
  };
}
