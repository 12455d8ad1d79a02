"use strict";
module.exports = require("node:stream").Writable;
