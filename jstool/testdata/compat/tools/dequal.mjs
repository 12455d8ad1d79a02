import { dequal } from "dequal";
import { dequal as lite } from "dequal/lite";

export function execute() {
  const pairs = [
    [{ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }],
    [new Map([["x", 1]]), new Map([["x", 1]])],
    [new Set([1, 2]), new Set([2, 1])],
    [new Date(0), new Date(0)],
    [/a/g, /a/i],
    [new Uint8Array([1, 2]), new Uint8Array([1, 2])],
    [NaN, NaN],
    [{ a: undefined }, {}],
    [[1, 2], [2, 1]],
  ];
  return { full: pairs.map(([a, b]) => dequal(a, b)), lite: pairs.map(([a, b]) => lite(a, b)) };
}
