"use strict";
module.exports = require("node:path").posix;
