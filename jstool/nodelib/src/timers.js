"use strict";
// node:timers: the prelude's timers, on the virtual clock.
module.exports = {
  setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval, clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate, clearImmediate: globalThis.clearImmediate,
  get promises() { return require("node:timers/promises"); },
};
