import deepmerge from "deepmerge";

export function execute() {
  const x = { foo: { bar: 3 }, array: [{ does: "work", too: [1, 2, 3] }] };
  const y = { foo: { baz: 4 }, quux: 5, array: [{ does: "work", too: [4, 5, 6] }, { really: "yes" }] };
  const overwrite = (dest, src) => src;
  return {
    merged: deepmerge(x, y),
    overwritten: deepmerge(x, y, { arrayMerge: overwrite }),
    all: deepmerge.all([{ a: 1 }, { b: { c: 2 } }, { b: { d: 3 } }]),
  };
}
