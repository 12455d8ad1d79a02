"use strict";
// node:tty: no stream is ever a terminal.
const bridge = globalThis[Symbol.for("wasmgate.node")];
function ReadStream() { throw bridge.accessDenied("new tty.ReadStream()"); }
function WriteStream() { throw bridge.accessDenied("new tty.WriteStream()"); }
module.exports = { isatty: () => false, ReadStream, WriteStream };
