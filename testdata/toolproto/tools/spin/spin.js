// spin: never returns. Its sidecar manifest gives it fuel for hours, so
// only the timeout guardrail stops it.
export function execute() {
  for (;;) {}
}
