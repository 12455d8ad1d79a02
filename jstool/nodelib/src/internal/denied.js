"use strict";
// A module that loads but refuses: every function of it throws an Error
// whose code is ERR_ACCESS_DENIED (the I/O modules, as Node's permission
// model refuses) or ERR_FEATURE_UNAVAILABLE_ON_PLATFORM, naming the call. A
// function called with a callback last calls it back with the error
// instead, and the functions of a promises API reject with it. Values a
// library reads at load (fs.constants, worker_threads.isMainThread) are
// given as Node has them. overrides are the functions that do work in some
// cases (fs reading a program's stdin): each is made from the refusing
// function of its name, to call in the other cases.
const bridge = globalThis[Symbol.for("wasmgate.node")];

module.exports = function denied(name, options = {}) {
  const { values = {}, promises = false, code = "ERR_ACCESS_DENIED", overrides = {} } = options;
  const refuse = (what) => {
    if (code === "ERR_ACCESS_DENIED") return bridge.accessDenied(what);
    const e = new Error(what + " is not available in the wasmgate sandbox");
    e.code = code;
    return e;
  };
  const fns = new Map();
  const fn = (key) => {
    let f = fns.get(key);
    if (f !== undefined) return f;
    if (Object.prototype.hasOwnProperty.call(overrides, key)) {
      f = overrides[key](refusing(key));
      fns.set(key, f);
      return f;
    }
    f = refusing(key);
    fns.set(key, f);
    return f;
  };
  const refusing = (key) => {
    const what = name + "." + key;
    return { [key]: function (...args) {
      if (new.target) throw refuse("new " + what + "()");
      const err = refuse(what + "()");
      if (promises) return Promise.reject(err);
      const cb = args[args.length - 1];
      if (typeof cb === "function") { bridge.nextTick(cb, [err]); return undefined; }
      throw err;
    } }[key];
  };
  const get = (target, key) => {
    if (typeof key === "symbol" || key === "__esModule" || key === "then") return undefined;
    if (Object.prototype.hasOwnProperty.call(values, key)) {
      const v = values[key];
      return typeof v === "function" && v.lazy === true ? v() : v;
    }
    if (key === "default") return mod;
    return fn(key);
  };
  // ES module interop reads names through an object whose prototype is the
  // module's: that prototype answers like the module.
  const lookup = new Proxy({}, { get });
  const mod = new Proxy({}, {
    get,
    has: (target, key) => typeof key === "string",
    ownKeys: () => Object.keys(values),
    getOwnPropertyDescriptor(target, key) {
      if (!Object.prototype.hasOwnProperty.call(values, key)) return undefined;
      return { value: get(target, key), writable: false, enumerable: true, configurable: true };
    },
    getPrototypeOf: () => lookup,
    set: () => true,
    defineProperty: () => true,
    deleteProperty: () => true,
  });
  return mod;
};
// lazy marks a value computed when first read (a sibling module).
module.exports.lazy = (f) => Object.assign(f, { lazy: true });
