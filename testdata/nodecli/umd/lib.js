// A UMD build, as acorn ships one: CommonJS when module and exports exist.
(function (global, factory) {
  typeof exports === "object" && typeof module !== "undefined" ? factory(exports) :
  typeof define === "function" && define.amd ? define(["exports"], factory) :
  (global = typeof globalThis !== "undefined" ? globalThis : global || self, factory(global.umdLib = {}));
})(this, (function (exports) {
  "use strict";
  exports.twice = function twice(x) { return 2 * x; };
}));
