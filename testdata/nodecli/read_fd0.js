// The most common way a CLI reads its input: fs.readFileSync(0), all of
// stdin at once (a second read finds it used up, as on a pipe).
const fs = require("fs");
const text = fs.readFileSync(0, "utf8");
const rows = text.split("\n").filter(Boolean).map((l) => l.split(","));
const [head, ...body] = rows;
const records = body.map((r) => Object.fromEntries(head.map((h, i) => [h, isNaN(r[i]) ? r[i] : Number(r[i])])));
process.stdout.write(JSON.stringify(records) + "\n");
console.log("again:", JSON.stringify(fs.readFileSync(0, { encoding: "utf8" })), fs.readFileSync(0).length);
