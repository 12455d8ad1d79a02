export function execute() {
  return new Promise(() => {});
}
