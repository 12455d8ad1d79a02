// bigout: returns 11,000,000 characters. Its sidecar manifest raises the
// executor's own limits, so only the runner's maxOutputBytes stops it.
export function execute() {
  return { text: "x".repeat(11000000) };
}
