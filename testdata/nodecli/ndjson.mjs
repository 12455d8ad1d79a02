// An ES module: stdin JSON Lines → stdout NDJSON, by async iteration.
process.stdin.setEncoding("utf8");
let text = "";
for await (const chunk of process.stdin) text += chunk;
let n = 0;
for (const line of text.split("\n")) {
  if (line.trim() === "") continue;
  const rec = JSON.parse(line);
  n++;
  process.stdout.write(JSON.stringify({ type: "item", id: rec.id, name: String(rec.name).toUpperCase() }) + "\n");
}
process.stdout.write(JSON.stringify({ type: "done", count: n }) + "\n");
