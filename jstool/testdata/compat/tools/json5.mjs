import JSON5 from "json5";

const src = `{
  // comments
  unquoted: 'and you can quote me on that',
  singleQuotes: 'I can use "double quotes" here',
  lineBreaks: "Look, Mom! \\
No \\\\n's!",
  hexadecimal: 0xdecaf,
  leadingDecimalPoint: .8675309, andTrailing: 8675309.,
  positiveSign: +1,
  trailingComma: 'in objects', andIn: ['arrays',],
  "backwardsCompatible": "with JSON",
}`;

export function execute() {
  let error = null;
  try {
    JSON5.parse("{a: }");
  } catch (e) {
    error = e.message;
  }
  const obj = JSON5.parse(src);
  return { obj, out: JSON5.stringify({ a: 1, "b-c": [1, "x"], d: { e: null } }, null, 2), error };
}
