export function execute({ reason }) {
  throw new Error("cannot do that: " + reason);
}
