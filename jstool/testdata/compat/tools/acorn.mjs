import * as acorn from "acorn";

export function execute() {
  const code = "const total = items.reduce((s, x) => s + x.price * x.qty, 0); // sum\nexport default total;";
  const comments = [];
  const ast = acorn.parse(code, { ecmaVersion: "latest", sourceType: "module", locations: true, onComment: comments });
  const tokens = [...acorn.tokenizer("a => a ** 2n", { ecmaVersion: "latest" })].map((t) => [t.type.label, typeof t.value === "bigint" ? `${t.value}n` : t.value ?? null]);
  let error = null;
  try {
    acorn.parse("function (", { ecmaVersion: 2020 });
  } catch (e) {
    error = { message: e.message, pos: e.pos, loc: e.loc };
  }
  const body = ast.body.map((n) => ({ type: n.type, start: n.start, end: n.end, loc: n.loc, kind: n.kind ?? null }));
  const init = ast.body[0].declarations[0].init;
  return { body, init: { type: init.type, callee: init.callee.property.name, args: init.arguments.map((a) => [a.type, a.start, a.end]) }, comments, tokens, error, version: acorn.version };
}
