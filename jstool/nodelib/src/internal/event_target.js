"use strict";
// EventTarget, Event and NodeEventTarget as Node 20 has them (its own
// implementation of the DOM standard, lib/internal/event_target.js): the
// engine has none. Listeners run in the order they were added, a listener
// (function or handleEvent object) is added once per capture flag, options
// once, passive, capture and signal work, and what a listener throws
// becomes an uncaught exception on the next tick, as in Node. MessagePort
// adds Node's EventEmitter-like methods (on, once, off, emit, …) with
// NodeEventTarget.
//
// A dispatch is "hybrid" as Node's MessagePort makes it: Node-style
// listeners (added with on/once) receive the plain value (a message's
// data), the others an Event, made only when one of them exists.

const { describe } = require("wasmgate:internal/errors");

const bridge = globalThis[Symbol.for("wasmgate.node")];

const kNewListener = Symbol("kNewListener");
const kRemoveListener = Symbol("kRemoveListener");
const kIsNodeStyleListener = Symbol("kIsNodeStyleListener");

function nodeError(Ctor, code, message) {
  const e = new Ctor(message);
  e.code = code;
  return e;
}
function missingArgs(...names) {
  const list = names.map((n) => "\"" + n + "\"").join(" and ");
  return nodeError(TypeError, "ERR_MISSING_ARGS", "The " + list + " argument" + (names.length > 1 ? "s" : "") + " must be specified");
}

class Event {
  #type; #bubbles; #cancelable; #composed; #timeStamp;
  #defaultPrevented = false; #target = null; #currentTarget = null; #phase = 0;
  #stop = false; #stopImmediate = false; #dispatching = false; #passive = false;
  constructor(type, options = undefined) {
    if (arguments.length === 0) throw missingArgs("type");
    if (options !== undefined && options !== null && typeof options !== "object" && typeof options !== "function") {
      throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The \"options\" argument must be of type object. Received " + describe(options));
    }
    this.#type = `${type}`;
    this.#bubbles = !!(options && options.bubbles);
    this.#cancelable = !!(options && options.cancelable);
    this.#composed = !!(options && options.composed);
    this.#timeStamp = globalThis.performance.now();
  }
  get type() { return this.#type; }
  get bubbles() { return this.#bubbles; }
  get cancelable() { return this.#cancelable; }
  get composed() { return this.#composed; }
  get timeStamp() { return this.#timeStamp; }
  // Node marks only the events it makes itself trusted (an AbortSignal's
  // abort); none of this module's are.
  get isTrusted() { return false; }
  get defaultPrevented() { return this.#cancelable && this.#defaultPrevented; }
  get target() { return this.#target; }
  get currentTarget() { return this.#currentTarget; }
  get srcElement() { return this.#target; }
  get eventPhase() { return this.#phase; }
  get cancelBubble() { return this.#stop; }
  set cancelBubble(v) { if (v) this.#stop = true; }
  get returnValue() { return !this.defaultPrevented; }
  set returnValue(v) { if (!v) this.preventDefault(); }
  composedPath() { return this.#dispatching ? [this.#currentTarget] : []; }
  preventDefault() { if (!this.#passive) this.#defaultPrevented = true; }
  stopPropagation() { this.#stop = true; }
  stopImmediatePropagation() { this.#stop = true; this.#stopImmediate = true; }
  initEvent(type, bubbles = false, cancelable = false) {
    if (arguments.length === 0) throw missingArgs("type");
    if (this.#dispatching) return;
    this.#type = `${type}`;
    this.#bubbles = !!bubbles;
    this.#cancelable = !!cancelable;
  }
  get [Symbol.toStringTag]() { return "Event"; }

  // The dispatch's view of the event (EventTarget's alone).
  static _begin(e, target) {
    if (e.#dispatching) {
      throw nodeError(Error, "ERR_EVENT_RECURSION", "The event \"" + e.#type + "\" is already being dispatched");
    }
    e.#dispatching = true;
    e.#target = target;
    e.#currentTarget = target;
    e.#phase = 2;
  }
  static _end(e) {
    e.#dispatching = false;
    e.#currentTarget = null;
    e.#phase = 0;
    e.#passive = false;
  }
  static _passive(e, passive) { e.#passive = passive; }
  static _stoppedImmediately(e) { return e.#stopImmediate; }
  static _is(e) { return e !== null && typeof e === "object" && #type in e; }
}
for (const [name, value] of [["NONE", 0], ["CAPTURING_PHASE", 1], ["AT_TARGET", 2], ["BUBBLING_PHASE", 3]]) {
  Object.defineProperty(Event, name, { value, enumerable: true });
}
const eventInternals = { begin: Event._begin, end: Event._end, passive: Event._passive, stopped: Event._stoppedImmediately, is: Event._is };
for (const k of ["_begin", "_end", "_passive", "_stoppedImmediately", "_is"]) delete Event[k];

// A listener record: the listener as given, its flags, and removed once
// it no longer runs (a dispatch in progress skips it).
function flags(options) {
  if (typeof options === "boolean") return { capture: options };
  if (options === null || options === undefined) return {};
  return {
    once: !!options.once, capture: !!options.capture, passive: !!options.passive,
    signal: options.signal, nodeStyle: !!options[kIsNodeStyleListener],
  };
}

class EventTarget {
  #listeners = new Map(); // type → records in the order they were added
  addEventListener(type, listener, options = undefined) {
    if (arguments.length < 2) throw missingArgs("type", "listener");
    const { once = false, capture = false, passive = false, signal, nodeStyle = false } = flags(options);
    if (listener === null || listener === undefined) return; // the DOM ignores it (Node warns)
    if (typeof listener !== "function" && typeof listener !== "object") {
      throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE",
        "The \"listener\" argument must be an instance of EventListener. Received " + describe(listener));
    }
    if (signal !== undefined && signal !== null && signal.aborted) return;
    type = `${type}`;
    let list = this.#listeners.get(type);
    if (list === undefined) this.#listeners.set(type, list = []);
    if (list.some((r) => r.listener === listener && r.capture === capture)) return;
    const record = { listener, capture, once, passive, nodeStyle, removed: false };
    list.push(record);
    if (signal !== undefined && signal !== null && typeof signal.addEventListener === "function") {
      signal.addEventListener("abort", () => this.removeEventListener(type, listener, { capture }), { once: true });
    }
    if (typeof this[kNewListener] === "function") this[kNewListener](list.length, type, listener, once, capture, passive);
  }
  removeEventListener(type, listener, options = undefined) {
    if (arguments.length < 2) throw missingArgs("type", "listener");
    const { capture = false } = flags(options);
    type = `${type}`;
    const list = this.#listeners.get(type);
    if (list === undefined) return;
    const i = list.findIndex((r) => r.listener === listener && r.capture === capture);
    if (i < 0) return;
    this.#drop(type, list, i);
  }
  #drop(type, list, i) {
    list[i].removed = true;
    list.splice(i, 1);
    if (list.length === 0) this.#listeners.delete(type);
    if (typeof this[kRemoveListener] === "function") this[kRemoveListener](list.length, type);
  }
  dispatchEvent(event) {
    if (!eventInternals.is(event)) {
      throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The \"event\" argument must be an instance of Event. Received " + describe(event));
    }
    eventInternals.begin(event, this);
    try {
      this.#run(event.type, event, () => event);
    } finally {
      eventInternals.end(event);
    }
    return !event.defaultPrevented;
  }
  // #run calls the type's listeners: Node-style ones with value, the others
  // with the event (made by make when first needed).
  #run(type, value, make) {
    const list = this.#listeners.get(type);
    if (list === undefined) return;
    let event;
    for (const r of list.slice()) {
      if (r.removed) continue;
      if (r.once) this.#drop(type, list, list.indexOf(r));
      try {
        if (r.nodeStyle) {
          r.listener.call(this, value);
          continue;
        }
        if (event === undefined) {
          event = make();
          if (event !== value) eventInternals.begin(event, this);
        }
        eventInternals.passive(event, r.passive);
        if (typeof r.listener === "function") r.listener.call(this, event);
        else if (typeof r.listener.handleEvent === "function") r.listener.handleEvent(event);
      } catch (e) {
        // As Node: the dispatch goes on, the error is uncaught.
        bridge.nextTick(() => { throw e; }, []);
      }
      if (event !== undefined && eventInternals.stopped(event)) break;
    }
    if (event !== undefined && event !== value) eventInternals.end(event);
  }
  // hybridDispatch is Node's kHybridDispatch: value for Node-style
  // listeners, make() for the others.
  static hybridDispatch(target, type, value, make) { target.#run(type, value, make); }
  static listenerCount(target, type) {
    const list = target.#listeners.get(`${type}`);
    return list === undefined ? 0 : list.length;
  }
  static types(target) { return Array.from(target.#listeners.keys()); }
  static clear(target, type) {
    for (const t of type === undefined ? Array.from(target.#listeners.keys()) : [`${type}`]) {
      const list = target.#listeners.get(t);
      while (list !== undefined && list.length > 0) target.#drop(t, list, list.length - 1);
    }
  }
  get [Symbol.toStringTag]() { return "EventTarget"; }
}
const targetInternals = {
  hybridDispatch: EventTarget.hybridDispatch, listenerCount: EventTarget.listenerCount,
  types: EventTarget.types, clear: EventTarget.clear,
};
for (const k of ["hybridDispatch", "listenerCount", "types", "clear"]) delete EventTarget[k];

// NodeCustomEvent is what emit() dispatches: Node-style listeners get its
// detail.
class NodeCustomEvent extends Event {
  #detail;
  constructor(type, options) { super(type, options); this.#detail = options && options.detail; }
  get detail() { return this.#detail; }
}

// NodeEventTarget is EventTarget with Node's EventEmitter-like methods, the
// class between MessagePort and EventTarget.
const maxListeners = new WeakMap();
class NodeEventTarget extends EventTarget {
  setMaxListeners(n) { maxListeners.set(this, n); return this; }
  getMaxListeners() { const n = maxListeners.get(this); return n === undefined ? 10 : n; }
  eventNames() { return targetInternals.types(this); }
  listenerCount(type) { return targetInternals.listenerCount(this, type); }
  off(type, listener, options) { this.removeEventListener(type, listener, options); return this; }
  removeListener(type, listener, options) { this.removeEventListener(type, listener, options); return this; }
  on(type, listener) { this.addEventListener(type, listener, { [kIsNodeStyleListener]: true }); return this; }
  addListener(type, listener) { this.addEventListener(type, listener, { [kIsNodeStyleListener]: true }); return this; }
  emit(type, arg) {
    if (typeof type !== "string") {
      throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The \"type\" argument must be of type string. Received " + describe(type));
    }
    const had = targetInternals.listenerCount(this, type) > 0;
    targetInternals.hybridDispatch(this, type, arg, () => new NodeCustomEvent(type, { detail: arg }));
    return had;
  }
  once(type, listener) { this.addEventListener(type, listener, { once: true, [kIsNodeStyleListener]: true }); return this; }
  removeAllListeners(type) { targetInternals.clear(this, type); return this; }
}

// Class names are set by hand: a bundle may rename the bindings.
for (const [C, name] of [[Event, "Event"], [EventTarget, "EventTarget"], [NodeCustomEvent, "NodeCustomEvent"], [NodeEventTarget, "NodeEventTarget"]]) {
  Object.defineProperty(C, "name", { value: name });
}

// defineEventHandler gives proto an on<type> property, as Node's: setting
// a function (or object) adds it as a listener in place of the previous
// one; anything else removes it.
function defineEventHandler(proto, type) {
  const handlers = new WeakMap(); // target → { handler, listener }
  Object.defineProperty(proto, "on" + type, {
    get() { const h = handlers.get(this); return h === undefined ? null : h.handler; },
    set(value) {
      const old = handlers.get(this);
      if (old !== undefined) {
        this.removeEventListener(type, old.listener);
        handlers.delete(this);
      }
      if (typeof value === "function" || (typeof value === "object" && value !== null)) {
        const wrapped = { handler: value, listener: function (e) { return typeof value === "function" ? value.call(this, e) : undefined; } };
        handlers.set(this, wrapped);
        this.addEventListener(type, wrapped.listener);
      }
    },
    enumerable: true, configurable: true,
  });
}

module.exports = {
  Event, EventTarget, NodeCustomEvent, NodeEventTarget, defineEventHandler, targetInternals,
  kNewListener, kRemoveListener, nodeError, missingArgs,
};
