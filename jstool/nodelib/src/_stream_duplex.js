"use strict";
module.exports = require("node:stream").Duplex;
