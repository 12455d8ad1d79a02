"use strict";
module.exports = require("wasmgate:lib/string_decoder");
