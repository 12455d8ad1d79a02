"use strict";
// node:util: the util package, with inspect and format from
// node-inspect-extracted (Node's own code, so output matches Node's).
const lib = require("wasmgate:lib/util");
const insp = require("wasmgate:lib/inspect");
const { invalidArgType, unavailable, describe } = require("wasmgate:internal/errors");

// parseArgs is @pkgjs/parseargs, the code Node's util.parseArgs came from,
// with its errors in node 20's shapes: TypeErrors whose messages are
// node's (the library's argument checks word theirs differently).
// allowNegative came to node 20 after the library's last release: false is
// accepted, true refused by name, never silently ignored.
function parseArgs(config) {
  const own = (o, k) => (o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);
  const negative = own(config, "allowNegative");
  if (negative !== undefined && typeof negative !== "boolean") throw invalidArgType("allowNegative", "of type boolean", negative);
  if (negative) throw unavailable("util.parseArgs's allowNegative option");
  try {
    return require("wasmgate:lib/parseargs").parseArgs(config);
  } catch (e) {
    throw nodeParseArgsError(e, config, own);
  }
}

// parseArgsTypes are node's words for the types the library names.
const parseArgsTypes = { Object: "of type object", Array: "an instance of Array", String: "of type string", Boolean: "of type boolean" };

// nodeParseArgsError is the library's error e as node throws it: the
// offending value is found again in config by the name the library gives.
function nodeParseArgsError(e, config, own) {
  if (e === null || typeof e !== "object" || typeof e.code !== "string") return e;
  let message = e.message;
  if (e.code === "ERR_INVALID_ARG_TYPE") {
    const m = /^(\S+) must be (.*) got [\s\S]*$/.exec(message);
    if (m === null) return e;
    const value = m[1].split(".").reduce((o, k) => own(o, k), config);
    const noun = m[1].includes(".") ? "property" : "argument";
    message = "The \"" + m[1] + "\" " + noun + " must be " + (parseArgsTypes[m[2]] || m[2]) + ". Received " + describe(value);
  } else if (e.code === "ERR_INVALID_ARG_VALUE") {
    message = message.replace(/^The property (\S+) /, "The property '$1' ");
  } else if (!e.code.startsWith("ERR_PARSE_ARGS_")) {
    return e;
  }
  const err = new TypeError(message);
  err.code = e.code;
  return err;
}

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
  parseArgs,
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
