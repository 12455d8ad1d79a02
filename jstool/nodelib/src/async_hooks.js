"use strict";
// node:async_hooks: AsyncLocalStorage keeps its store for the synchronous
// part of run() only (the engine tracks no async context); hooks do nothing.
class AsyncLocalStorage {
  constructor() { this._store = undefined; this._enabled = false; }
  getStore() { return this._enabled ? this._store : undefined; }
  run(store, fn, ...args) {
    const prev = this._store, was = this._enabled;
    this._store = store; this._enabled = true;
    try { return fn(...args); } finally { this._store = prev; this._enabled = was; }
  }
  exit(fn, ...args) {
    const was = this._enabled;
    this._enabled = false;
    try { return fn(...args); } finally { this._enabled = was; }
  }
  enterWith(store) { this._store = store; this._enabled = true; }
  disable() { this._enabled = false; this._store = undefined; }
  static bind(fn) { return fn; }
  static snapshot() { return (fn, ...args) => fn(...args); }
}
class AsyncResource {
  constructor(type) { this.type = type; }
  runInAsyncScope(fn, thisArg, ...args) { return fn.apply(thisArg, args); }
  bind(fn) { return fn.bind(this); }
  emitDestroy() { return this; }
  asyncId() { return 1; }
  triggerAsyncId() { return 0; }
  static bind(fn) { return fn; }
}
module.exports = {
  AsyncLocalStorage, AsyncResource,
  createHook: () => ({ enable() { return this; }, disable() { return this; } }),
  executionAsyncId: () => 1, triggerAsyncId: () => 0, executionAsyncResource: () => ({}),
};
