"use strict";
module.exports = require("node:util").types;
