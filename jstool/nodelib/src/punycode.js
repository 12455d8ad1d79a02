"use strict";
module.exports = require("wasmgate:lib/punycode");
