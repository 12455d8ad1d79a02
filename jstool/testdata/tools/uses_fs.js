import { readFileSync } from "node:fs";

export function execute({ path }) {
  return { text: readFileSync(path, "utf8") };
}
