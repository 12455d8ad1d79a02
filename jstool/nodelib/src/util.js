"use strict";
// node:util: the util package, with inspect and format from
// node-inspect-extracted (Node's own code, so output matches Node's).
const lib = require("wasmgate:lib/util");
const insp = require("wasmgate:lib/inspect");
const { invalidArgType } = require("wasmgate:internal/errors");

function toUSVString(s) { return String(s).toWellFormed(); }
function stripVTControlCharacters(s) { return insp.stripVTControlCharacters(s); }
function styleText(format, text) {
  if (typeof text !== "string") throw invalidArgType("text", "of type string", text);
  return text; // no colors: output is never a terminal
}
function getSystemErrorName(code) { return "Unknown system error " + code; }
function isDeepStrictEqual(a, b) {
  try {
    require("node:assert").deepStrictEqual(a, b);
    return true;
  } catch (_) {
    return false;
  }
}
module.exports = Object.assign({}, lib, {
  inspect: insp.inspect,
  format: insp.format,
  formatWithOptions: insp.formatWithOptions,
  stripVTControlCharacters,
  toUSVString,
  styleText,
  getSystemErrorName,
  isDeepStrictEqual,
  TextEncoder: globalThis.TextEncoder,
  TextDecoder: globalThis.TextDecoder,
  types: Object.freeze(Object.assign({}, lib.types, {
    // The util package makes these three throw "not supported in userland"
    // (and leaves them out of what Object.assign copies).
    isExternal: function isExternal(v) { return false; }, // no native add-ons, so no externals
    isModuleNamespaceObject: function isModuleNamespaceObject(v) {
      return v !== null && typeof v === "object" && Object.getPrototypeOf(v) === null &&
        Object.prototype.toString.call(v) === "[object Module]";
    },
    // Proxies are known when internal/proxy_tracking, injected into any
    // bundle that names isProxy, made them.
    isProxy: function isProxy(v) {
      const known = globalThis[Symbol.for("wasmgate.isProxy")];
      return typeof known === "function" && known(v);
    },
    // Keys are known to node:crypto's key module, which registers itself
    // when a bundle holds it (without it no key can exist).
    isKeyObject: function isKeyObject(v) {
      const keys = globalThis[Symbol.for("wasmgate.crypto.keys")];
      return keys !== undefined && keys.isKeyObject(v);
    },
    isCryptoKey: function isCryptoKey(v) {
      const keys = globalThis[Symbol.for("wasmgate.crypto.keys")];
      return keys !== undefined && keys.isCryptoKey(v);
    },
  })),
});
