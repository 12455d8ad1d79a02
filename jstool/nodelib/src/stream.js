"use strict";
// node:stream: readable-stream (Node's streams, as a library).
module.exports = require("wasmgate:lib/stream");
