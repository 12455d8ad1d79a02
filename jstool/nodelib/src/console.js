"use strict";
module.exports = globalThis.console;
