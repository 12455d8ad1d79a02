// readline over stdin with 'line' and 'close' events: "\n", "\r\n" and a
// lone "\r" end lines; a last line without an end is still a line.
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
const counts = new Map();
let lines = 0;
rl.on("line", (line) => {
  lines++;
  for (const w of line.toLowerCase().split(/\W+/).filter(Boolean)) counts.set(w, (counts.get(w) || 0) + 1);
  console.log(String(lines).padStart(3), JSON.stringify(line));
});
rl.on("close", () => {
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3);
  console.log("lines:", lines, "top:", top);
});
