import clone from "clone";

export function execute() {
  const original = { a: [1, { b: 2 }], when: new Date(Date.UTC(2024, 1, 2)), re: /ab+c/gi, map: new Map([["k", { v: 1 }]]), set: new Set([1, 2]) };
  original.self = original;
  const copy = clone(original);
  copy.a[1].b = 99;
  return {
    originalB: original.a[1].b,
    copyB: copy.a[1].b,
    cycle: copy.self === copy,
    date: copy.when.toISOString(),
    regex: [copy.re.source, copy.re.flags, copy.re !== original.re],
    map: [...copy.map.entries()],
    set: [...copy.set],
    shallowDepth: clone({ x: { y: 1 } }, false, 1).x === undefined,
  };
}
