export function execute() {
  const node = { name: "loop" };
  node.self = node;
  return node;
}
