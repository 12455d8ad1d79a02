import { unified } from "unified";
import remarkParse from "remark-parse";

function strip(node) {
  const { position, children, ...rest } = node;
  const out = { ...rest, at: position ? [position.start.line, position.start.column, position.end.offset] : null };
  if (children) out.children = children.map(strip);
  return out;
}

export function execute() {
  const tree = unified().use(remarkParse).parse("# Hi *there*\n\nA [link](/x) and `code`.\n\n* one\n* two\n\n---\n\n> q\n");
  return strip(tree);
}
