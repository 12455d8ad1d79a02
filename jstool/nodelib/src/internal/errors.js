"use strict";
// Node's error shapes, for the built-ins wasmgate writes itself.
function describe(v) {
  if (v === null) return "null";
  if (v === undefined) return "undefined";
  if (typeof v === "function") return "function " + (v.name || "<anonymous>");
  if (typeof v === "object") {
    if (v.constructor && v.constructor.name) return "an instance of " + v.constructor.name;
    return "an instance of Object";
  }
  let s = typeof v === "string" ? "'" + v + "'" : String(v);
  if (s.length > 28) s = s.slice(0, 25) + "...";
  return "type " + typeof v + " (" + s + ")";
}
function invalidArgType(name, expected, actual) {
  const e = new TypeError("The \"" + name + "\" argument must be " + expected + ". Received " + describe(actual));
  e.code = "ERR_INVALID_ARG_TYPE";
  return e;
}
function outOfRange(name, range, actual) {
  const e = new RangeError("The value of \"" + name + "\" is out of range. It must be " + range + ". Received " + String(actual));
  e.code = "ERR_OUT_OF_RANGE";
  return e;
}
function unavailable(what) {
  const e = new Error(what + " is not available in the wasmgate sandbox");
  e.code = "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM";
  return e;
}
module.exports = { invalidArgType, outOfRange, unavailable, describe };
