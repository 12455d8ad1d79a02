// Importing an I/O module without using it is fine.
import { writeFileSync } from "node:fs";
export const write = writeFileSync;
export function execute({ text }) {
  return { text: text.toUpperCase() };
}
