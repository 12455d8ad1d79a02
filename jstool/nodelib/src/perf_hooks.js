"use strict";
// node:perf_hooks: performance on the virtual clock; observers are not available.
const { unavailable } = require("wasmgate:internal/errors");
function PerformanceObserver() { throw unavailable("new perf_hooks.PerformanceObserver()"); }
module.exports = {
  performance: globalThis.performance,
  PerformanceObserver,
  monitorEventLoopDelay() { throw unavailable("perf_hooks.monitorEventLoopDelay()"); },
  createHistogram() { throw unavailable("perf_hooks.createHistogram()"); },
  constants: Object.freeze({}),
};
