// for await over a readline interface: NDJSON in, a summary out.
import { createInterface } from "node:readline";
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
let total = 0, bad = 0;
for await (const line of rl) {
  if (line.trim() === "") continue;
  try {
    total += JSON.parse(line).amount;
  } catch (e) {
    bad++;
    console.error(`bad line: ${JSON.stringify(line)}`);
  }
}
console.log({ total, bad });
