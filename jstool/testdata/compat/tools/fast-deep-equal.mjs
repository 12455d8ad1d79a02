import equal from "fast-deep-equal/es6/index.js";

export function execute() {
  return {
    results: [
      equal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }),
      equal({ a: 1 }, { a: 1, b: undefined }),
      equal(new Map([["a", 1]]), new Map([["a", 1]])),
      equal(new Set([1, 2]), new Set([2, 1])),
      equal(new Uint8Array([1, 2]), new Uint8Array([1, 2])),
      equal(new Date(0), new Date(0)),
      equal(/a/g, /a/i),
      equal(NaN, NaN),
      equal([1, 2], { 0: 1, 1: 2, length: 2 }),
    ],
  };
}
