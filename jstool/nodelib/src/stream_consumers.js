"use strict";
// node:stream/consumers: read a stream (or any async iterable) to the end.
const { Buffer } = require("node:buffer");
async function chunks(stream) {
  const out = [];
  for await (const c of stream) out.push(typeof c === "string" ? Buffer.from(c) : Buffer.from(c.buffer ? new Uint8Array(c.buffer, c.byteOffset, c.byteLength) : c));
  return out;
}
async function buffer(stream) { return Buffer.concat(await chunks(stream)); }
async function arrayBuffer(stream) {
  const b = await buffer(stream);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
}
async function text(stream) { return new TextDecoder().decode(await buffer(stream)); }
async function json(stream) { return JSON.parse(await text(stream)); }
async function blob() { throw require("wasmgate:internal/errors").unavailable("stream/consumers.blob()"); }
module.exports = { arrayBuffer, blob, buffer, json, text };
