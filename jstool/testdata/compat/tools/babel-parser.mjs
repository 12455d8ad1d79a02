import { parse } from "@babel/parser";

// Positions and the AST's shape are what a code tool reads.
const source = `
import x from "y";
export const f = async (a, { b = 2 } = {}) => a?.b ?? b;
class K<T> { #p = 1; get p(): number { return this.#p; } }
`;

function summarize(node, depth = 0) {
  if (!node || typeof node !== "object" || depth > 6) return undefined;
  if (Array.isArray(node)) return node.map((n) => summarize(n, depth + 1));
  const out = { type: node.type, start: node.start, end: node.end };
  for (const key of ["body", "declarations", "init", "params", "expression", "key"]) {
    if (node[key] !== undefined) out[key] = summarize(node[key], depth + 1);
  }
  return out;
}

export function execute() {
  const ast = parse(source, { sourceType: "module", plugins: ["typescript"] });
  let error = null;
  try {
    parse("let = ;", { sourceType: "module" });
  } catch (e) {
    error = { message: e.message, loc: e.loc, code: e.code, reasonCode: e.reasonCode };
  }
  return { program: summarize(ast.program), comments: ast.comments.length, error };
}
