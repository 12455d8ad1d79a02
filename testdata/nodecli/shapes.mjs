// An ES module importing a relative module; bad input is exit status 3
// with a message on stderr.
import { area } from "./lib/shape.mjs";
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", () => {
  const shapes = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  try {
    const areas = shapes.map(area);
    process.stdout.write(JSON.stringify({ areas, total: areas.reduce((a, b) => a + b, 0) }) + "\n");
  } catch (e) {
    process.stderr.write("shapes: " + e.message + "\n");
    process.exit(3);
  }
});
