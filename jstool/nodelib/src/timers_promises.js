"use strict";
// node:timers/promises, on the virtual clock: setTimeout(1000) resolves at
// once, with the clock 1000 ms later.
const { invalidArgType } = require("wasmgate:internal/errors");

function abortError(signal) {
  const e = new Error("The operation was aborted", { cause: signal && signal.reason });
  e.name = "AbortError";
  e.code = "ABORT_ERR";
  return e;
}
function checkOptions(options) {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object") throw invalidArgType("options", "of type object", options);
  return options;
}
function schedule(set, clear, args, options) {
  const { signal, ref } = checkOptions(options);
  if (signal && signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    let onAbort;
    const t = set((v) => {
      if (signal && onAbort) signal.removeEventListener("abort", onAbort);
      resolve(v);
    }, ...args);
    if (ref === false && t && typeof t.unref === "function") t.unref();
    if (signal) {
      onAbort = () => { clear(t); reject(abortError(signal)); };
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
}
function setTimeout(delay, value, options) {
  return schedule(globalThis.setTimeout, globalThis.clearTimeout, [delay, value], options);
}
function setImmediate(value, options) {
  return schedule(globalThis.setImmediate, globalThis.clearImmediate, [value], options);
}
async function* setInterval(delay, value, options) {
  const { signal, ref } = checkOptions(options);
  if (signal && signal.aborted) throw abortError(signal);
  let pending = 0, wake = null;
  const t = globalThis.setInterval(() => { pending++; if (wake) { const w = wake; wake = null; w(); } }, delay);
  if (ref === false) t.unref();
  let aborted = false;
  const onAbort = () => { aborted = true; if (wake) { const w = wake; wake = null; w(); } };
  if (signal) signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      if (aborted) throw abortError(signal);
      if (pending === 0) await new Promise((r) => { wake = r; });
      if (aborted) throw abortError(signal);
      pending--;
      yield value;
    }
  } finally {
    globalThis.clearInterval(t);
    if (signal) signal.removeEventListener("abort", onAbort);
  }
}
const scheduler = {
  wait: (delay, options) => setTimeout(delay, undefined, options),
  yield: () => setImmediate(),
};
module.exports = { setTimeout, setImmediate, setInterval, scheduler };
