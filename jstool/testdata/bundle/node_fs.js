import { readFileSync } from "node:fs";

export default () => readFileSync("/etc/passwd", "utf8");
