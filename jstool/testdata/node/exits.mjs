// process.exit in a tool ends its execution without a result.
export function execute() {
  try {
    process.exit(3);
  } catch (e) {
    // Catching it changes nothing.
  }
  return { unreachable: true };
}
