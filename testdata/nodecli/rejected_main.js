// The common shape of a CLI: an async main() called without a .catch. Its
// rejection is unhandled, so the program ends as with an uncaught
// exception (exit status 1), after what it wrote.
async function main() {
  let raw = "";
  for await (const chunk of process.stdin) raw += chunk;
  const { path } = JSON.parse(raw);
  process.stdout.write("checking " + path + "\n");
  await null;
  throw new RangeError("no such path: " + path);
}
main();
