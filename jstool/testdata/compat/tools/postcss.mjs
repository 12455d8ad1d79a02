import postcss from "postcss";

// A plugin that rewrites px to rem, as a style tool would.
const pxToRem = {
  postcssPlugin: "px-to-rem",
  Declaration(decl) {
    decl.value = decl.value.replace(/(\d+(?:\.\d+)?)px/g, (_, n) => `${Number(n) / 16}rem`);
  },
};

export async function execute() {
  const css = "a { color: red; margin: 16px 8px }\n@media (min-width: 640px) { .b { padding: 24px } }\n/* note */";
  const result = await postcss([pxToRem]).process(css, { from: undefined });
  const root = postcss.parse(".x{top:0}");
  const rules = [];
  result.root.walkRules((r) => rules.push(r.selector));
  let error = null;
  try {
    postcss.parse("a { color: red");
  } catch (e) {
    error = { name: e.name, reason: e.reason, line: e.line, column: e.column };
  }
  return { css: result.css, rules, json: root.first.toJSON().nodes.map((n) => [n.prop, n.value]), error };
}
