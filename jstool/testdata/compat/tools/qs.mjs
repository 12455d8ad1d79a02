import qs from "qs";

export function execute() {
  return {
    parsed: qs.parse("a[b][c]=d&list[]=1&list[]=2&x=%20y&obj[k]=v&n=1&n=2"),
    dotted: qs.parse("a.b=c&a.d=e", { allowDots: true }),
    stringified: qs.stringify({ a: { b: [1, 2], c: "d e" }, f: "g&h" }),
    brackets: qs.stringify({ a: ["b", "c"] }, { arrayFormat: "brackets", encode: false }),
    comma: qs.stringify({ a: ["b", "c"] }, { arrayFormat: "comma" }),
  };
}
