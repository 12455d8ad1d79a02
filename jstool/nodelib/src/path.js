"use strict";
// node:path: POSIX paths (path-browserify); the working directory is "/".
module.exports = require("wasmgate:lib/path");
