// readline in a tool: lines of any stream are computed, but a tool's
// process.stdin is refused (a tool's input is its params).
import readline from "node:readline";
import { Readable } from "node:stream";

export async function execute() {
  const lines = [];
  for await (const line of readline.createInterface({ input: Readable.from(["one\r\ntw", "o\nthree"]) })) lines.push(line);
  let stdin;
  try {
    readline.createInterface({ input: process.stdin });
    stdin = "read";
  } catch (e) {
    stdin = e.code + ": " + e.message;
  }
  return { lines, stdin };
}
