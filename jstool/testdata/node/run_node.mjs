// Runs a tool in node as wasmgate does: JSON params on stdin, the result's
// JSON on stdout.
const [file] = process.argv.slice(2);
let raw = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) raw += chunk;
const mod = await import(new URL(file, "file://" + process.cwd() + "/").href);
const tool = typeof mod.execute === "function" ? mod : mod.default;
process.stdout.write(JSON.stringify(await tool.execute(JSON.parse(raw || "{}"))));
