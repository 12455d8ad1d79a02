// The I/O modules load; every call is refused with ERR_ACCESS_DENIED.
import fs, { readFileSync } from "node:fs";
import { readFile } from "fs/promises";
import { execSync } from "child_process";
import http from "http";
import { isMainThread } from "worker_threads";

const refused = (f) => { try { f(); return "ran"; } catch (e) { return e.code + ": " + e.message; } };

export async function execute() {
  return {
    sync: refused(() => readFileSync("/etc/passwd")),
    exec: refused(() => execSync("id")),
    server: refused(() => http.createServer()),
    promise: await readFile("/etc/passwd").then(() => "ran", (e) => e.code + ": " + e.message),
    callback: await new Promise((resolve) => fs.readFile("/etc/passwd", (err) => resolve(err.code + ": " + err.message))),
    fetch: await fetch("https://example.com/").then(() => "ran", (e) => e.code + ": " + e.message),
    constants: fs.constants.R_OK,
    status: http.STATUS_CODES[404],
    isMainThread,
  };
}
