export function execute() {
  for (;;) {}
}
