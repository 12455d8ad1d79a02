"use strict";
// structuredClone: the HTML structured clone algorithm for the types the
// engine has (primitives, plain objects, arrays, Date, RegExp, Map, Set,
// ArrayBuffer and views, errors, boxed primitives), cycles and shared
// references preserved; functions, symbols and other platform objects
// throw a DataCloneError.
function dataCloneError(what) {
  const e = new Error(what + " could not be cloned.");
  e.name = "DataCloneError";
  e.code = 25;
  return e;
}
const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
function structuredClone(value, options) {
  if (arguments.length === 0) {
    const e = new TypeError("The \"value\" argument must be specified");
    e.code = "ERR_MISSING_ARGS";
    throw e;
  }
  const seen = new Map();
  const clone = (v) => {
    if (typeof v === "function") throw dataCloneError(String(v).slice(0, 40));
    if (typeof v === "symbol") throw dataCloneError(String(v));
    if (v === null || typeof v !== "object") return v;
    if (seen.has(v)) return seen.get(v);
    const tag = Object.prototype.toString.call(v);
    let out;
    switch (tag) {
      case "[object Date]": out = new Date(v.getTime()); seen.set(v, out); return out;
      case "[object RegExp]": out = new RegExp(v.source, v.flags); seen.set(v, out); return out;
      case "[object Boolean]": case "[object Number]": case "[object String]": case "[object BigInt]":
        out = Object(v.valueOf()); seen.set(v, out); return out;
      case "[object ArrayBuffer]": out = v.slice(0); seen.set(v, out); return out;
      case "[object Map]":
        out = new Map(); seen.set(v, out);
        for (const [k, x] of v) out.set(clone(k), clone(x));
        return out;
      case "[object Set]":
        out = new Set(); seen.set(v, out);
        for (const x of v) out.add(clone(x));
        return out;
      case "[object Array]":
        out = new Array(v.length); seen.set(v, out);
        for (const k of Object.keys(v)) out[k] = clone(v[k]);
        return out;
      case "[object Error]": {
        const C = ERRORS[v.name] || Error;
        out = Object.create(C.prototype); seen.set(v, out);
        Object.defineProperty(out, "message", { value: String(v.message), writable: true, configurable: true });
        if (v.stack !== undefined) Object.defineProperty(out, "stack", { value: String(v.stack), writable: true, configurable: true });
        if ("cause" in v) Object.defineProperty(out, "cause", { value: clone(v.cause), writable: true, configurable: true });
        return out;
      }
    }
    if (ArrayBuffer.isView(v)) {
      const buf = clone(v.buffer);
      out = v instanceof DataView ? new DataView(buf, v.byteOffset, v.byteLength)
        : new v.constructor(buf, v.byteOffset, v.length);
      seen.set(v, out);
      return out;
    }
    if (tag !== "[object Object]" || (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null &&
      typeof v.constructor === "function" && v.constructor !== Object && isPlatform(v))) {
      throw dataCloneError(tag === "[object Object]" ? "#<" + v.constructor.name + ">" : tag);
    }
    out = {}; seen.set(v, out);
    for (const k of Object.keys(v)) out[k] = clone(v[k]);
    return out;
  };
  return clone(value);
}
// Promises, WeakMaps and the like are not cloneable; instances of user
// classes clone as plain objects, as in Node.
function isPlatform(v) {
  return v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet ||
    (typeof WeakRef !== "undefined" && v instanceof WeakRef);
}
module.exports = { structuredClone };
