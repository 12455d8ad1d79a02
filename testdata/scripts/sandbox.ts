// No network, file system or environment.
import * as fs from "node:fs";

function attempt(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e: any) {
    return `${e.name}: ${e.message}`;
  }
}

export default {
  fetch: typeof (globalThis as any).fetch,
  process: typeof (globalThis as any).process,
  setTimeout: typeof (globalThis as any).setTimeout,
  readFile: attempt(() => fs.readFileSync("/etc/passwd")),
  now: new Date().toISOString(),
};
