import stringify from "fast-json-stable-stringify";

export function execute() {
  const obj = { c: 8, b: [{ z: 6, y: 5, x: 4 }, 7], a: 3, u: undefined, f: () => 1, d: new Date(Date.UTC(2024, 0, 1)), n: null };
  return {
    sorted: stringify(obj),
    reversed: stringify(obj, (a, b) => (a.key < b.key ? 1 : -1)),
    cycles: stringify((() => { const o = { a: 1 }; o.self = o; return o; })(), { cycles: true }),
  };
}
