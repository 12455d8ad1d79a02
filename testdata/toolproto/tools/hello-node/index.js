#!/usr/bin/env node
// hello-node: a tool of the NDJSON tool protocol written for Node, the way
// the protocol's own tools are (a process that reads its request on stdin
// and writes events on stdout). wasmgate runs it in the sandbox, as
// `wasmgate node` runs a program.
"use strict";

const toolId = "hello-node";
const emit = (type, payload) =>
  process.stdout.write(JSON.stringify({ type, ts: new Date().toISOString(), toolId, payload }) + "\n");

emit("started", { meta: {} });
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", () => {
  let request;
  try {
    request = JSON.parse(Buffer.concat(chunks).toString("utf-8"));
  } catch (err) {
    emit("error", { message: "the request is not JSON: " + err.message, code: "INVALID_REQUEST", recoverable: false });
    process.exit(1);
  }
  const name = (request.input && request.input.name) || "World";
  emit("log", { level: "info", message: "greeting " + name });
  emit("result", { message: "Hello, " + name + "!" });
  process.exit(0);
});
