// Flags from process.argv shape the output.
const args = process.argv.slice(2);
const upper = args.includes("--upper");
const sep = args.includes("--sep") ? args[args.indexOf("--sep") + 1] : ",";
let data = "";
process.stdin.on("data", (c) => { data += c; });
process.stdin.on("end", () => {
  let words = JSON.parse(data).words;
  if (upper) words = words.map((w) => w.toUpperCase());
  process.stdout.write(words.join(sep) + "\n");
  if (words.length === 0) { process.stderr.write("args: no words\n"); process.exitCode = 1; }
});
