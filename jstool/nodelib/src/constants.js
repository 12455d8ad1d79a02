"use strict";
const os = require("node:os");
module.exports = Object.assign({}, os.constants.signals, os.constants.errno, os.constants.priority);
