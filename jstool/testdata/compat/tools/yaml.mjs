import YAML from "yaml";

const src = `
# config
name: wasmgate
version: 1.2
list: [a, b, {c: d}]
anchors:
  base: &base {x: 1, y: 2}
  derived:
    <<: *base
    y: 3
multi: |
  line one
  line two
date: 2024-01-02
`;

export function execute() {
  const doc = YAML.parse(src, { merge: true });
  return {
    doc,
    out: YAML.stringify({ a: [1, { b: "two words" }], s: "multi\nline", n: null, t: true }),
    errors: YAML.parseDocument("a: [1,").errors.map((e) => e.code),
  };
}
