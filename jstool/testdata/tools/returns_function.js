export function execute() {
  return () => 1;
}
