// stdin JSON → stdout JSON, through the 'data' and 'end' events.
let data = "";
process.stdin.on("data", (chunk) => { data += chunk; });
process.stdin.on("end", () => {
  const input = JSON.parse(data);
  const out = { doubled: input.numbers.map((n) => n * 2), count: input.numbers.length };
  process.stdout.write(JSON.stringify(out) + "\n");
});
