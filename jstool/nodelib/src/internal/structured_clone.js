"use strict";
// structuredClone, and the serialization MessagePort.postMessage uses: the
// HTML structured clone algorithm as Node 20 runs it (V8's serializer), for
// the types the engine has. Primitives, plain objects (own enumerable string
// keys, getters read), arrays (holes and extra keys kept), Date, RegExp
// (lastIndex not kept), boxed primitives, Map, Set, ArrayBuffer (resizable
// kept), typed arrays and DataView (sharing their cloned buffer), and errors
// (the prototype of a standard error name, message, stack and cause, nothing
// else) clone; cycles and shared references are preserved. Class instances
// clone as plain objects, as in Node. Functions, symbols and the objects V8
// refuses (promises, weak collections, generators, iterators, arguments)
// throw a DataCloneError DOMException whose message is V8's.
//
// A transfer list moves ArrayBuffers (the original is detached once the
// clone succeeded) and whatever a module registered with defineTransferable
// (MessagePort). What Node checks, and its errors, are kept.

const ERRORS = { EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };

const objectToString = Object.prototype.toString;
const getOwn = Object.getOwnPropertyDescriptor;
const uncurry = (proto, key, kind) => {
  const d = getOwn(proto, key);
  return Function.prototype.call.bind(kind === "get" ? d.get : d.value);
};
// Brand checks: each throws a TypeError for anything but its own kind,
// whatever its prototype or Symbol.toStringTag say.
const brands = {
  date: uncurry(Date.prototype, "getTime"),
  regexpSource: uncurry(RegExp.prototype, "source", "get"),
  mapSize: uncurry(Map.prototype, "size", "get"),
  setSize: uncurry(Set.prototype, "size", "get"),
  abLength: uncurry(ArrayBuffer.prototype, "byteLength", "get"),
  number: uncurry(Number.prototype, "valueOf"),
  string: uncurry(String.prototype, "valueOf"),
  boolean: uncurry(Boolean.prototype, "valueOf"),
  bigint: uncurry(BigInt.prototype, "valueOf"),
};
const is = (check, v) => {
  try { check(v); return true; } catch (_) { return false; }
};
const regexpFlags = uncurry(RegExp.prototype, "flags", "get");
const abResizable = getOwn(ArrayBuffer.prototype, "resizable") ? uncurry(ArrayBuffer.prototype, "resizable", "get") : () => false;
const abMax = getOwn(ArrayBuffer.prototype, "maxByteLength") ? uncurry(ArrayBuffer.prototype, "maxByteLength", "get") : brands.abLength;
const abDetached = getOwn(ArrayBuffer.prototype, "detached") ? uncurry(ArrayBuffer.prototype, "detached", "get") : () => false;
const abTransfer = ArrayBuffer.prototype.transfer;
const typedArrayProto = Object.getPrototypeOf(Uint8Array.prototype);
const taBuffer = uncurry(typedArrayProto, "buffer", "get");
const taOffset = uncurry(typedArrayProto, "byteOffset", "get");
const taLength = uncurry(typedArrayProto, "length", "get");
const taTag = uncurry(typedArrayProto, Symbol.toStringTag, "get");
const dvBuffer = uncurry(DataView.prototype, "buffer", "get");
const dvOffset = uncurry(DataView.prototype, "byteOffset", "get");
const dvLength = uncurry(DataView.prototype, "byteLength", "get");

// The objects V8's serializer refuses, by the tag of their kind (what
// Object.prototype.toString gives when nothing overrides it).
const REFUSED = new Set(["Promise", "WeakMap", "WeakSet", "WeakRef", "FinalizationRegistry", "Arguments",
  "Generator", "AsyncGenerator", "Map Iterator", "Set Iterator", "Array Iterator", "String Iterator",
  "RegExp String Iterator", "Iterator Helper", "Symbol", "Module"]);

function dataCloneError(message) {
  return new DOMException(message, "DataCloneError");
}
function nodeError(Ctor, code, message) {
  const e = new Ctor(message);
  e.code = code;
  return e;
}

// describe is how V8 names a value it cannot clone (its side-effect free
// ToString): a function's source, a symbol's description, "#<Ctor>" for an
// object whose toString is Object.prototype's, else "[object Tag]".
function describe(v) {
  if (typeof v === "function") {
    try { return Function.prototype.toString.call(v); } catch (_) { return "function"; }
  }
  if (typeof v === "symbol") return String(v);
  // The first data property of that name; accessors are passed over, so
  // that an iterator, whose Iterator.prototype.constructor is one here but
  // not in node 20 (it has no Iterator), is named as there.
  const data = (key) => {
    for (let o = v; o !== null; o = Object.getPrototypeOf(o)) {
      const d = getOwn(o, key);
      if (d !== undefined && "value" in d) return d.value;
    }
    return undefined;
  };
  if (data("toString") === objectToString) {
    const ctor = data("constructor");
    if (typeof ctor === "function") {
      const name = getOwn(ctor, "name");
      if (name !== undefined && typeof name.value === "string" && name.value !== "") return "#<" + name.value + ">";
    }
  }
  const tag = data(Symbol.toStringTag);
  return "[object " + (typeof tag === "string" ? tag : kindTag(v)) + "]";
}
// kindTag is the tag of v's kind, Symbol.toStringTag aside.
function kindTag(v) {
  return objectToString.call(v).slice(8, -1);
}

// transferables are the host objects a transfer list may hold besides
// ArrayBuffers: { name, is(v), check(v, context), transfer(v) → the copy }.
const transferables = [];
function defineTransferable(t) { transferables.push(t); }
const transferableOf = (v) => transferables.find((t) => t.is(v));

// untransferable holds what worker_threads.markAsUntransferable marked:
// Node 20 leaves such an object out of a transfer list (it is cloned).
const untransferable = new WeakSet();
function markAsUntransferable(v) {
  if ((typeof v === "object" && v !== null) || typeof v === "function") untransferable.add(v);
}

// transferList validates a postMessage or structuredClone transfer list as
// Node does: any iterable object, each entry an ArrayBuffer or a registered
// transferable, none twice.
function transferList(list, context) {
  if (list === undefined || list === null) return [];
  if (typeof list !== "object" || typeof list[Symbol.iterator] !== "function") {
    throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "Optional transferList argument must be an iterable");
  }
  const out = [];
  for (const v of list) {
    if (untransferable.has(v)) continue;
    let t;
    if (v !== null && typeof v === "object" && is(brands.abLength, v)) t = null;
    else if ((t = transferableOf(v)) === undefined) throw nodeError(TypeError, "ERR_INVALID_TRANSFER_OBJECT", "Found invalid object in transferList");
    if (out.some((x) => x.value === v)) throw dataCloneError("Transfer list contains duplicate " + (t === null ? "ArrayBuffer" : t.name));
    if (t !== null && t.check !== undefined) t.check(v, context);
    out.push({ value: v, kind: t });
  }
  return out;
}

// copyBuffer is a new ArrayBuffer with b's bytes, resizable as b is.
function copyBuffer(b) {
  if (abDetached(b)) throw dataCloneError("An ArrayBuffer is detached and could not be cloned.");
  if (!abResizable(b)) return ArrayBuffer.prototype.slice.call(b, 0);
  const out = new ArrayBuffer(brands.abLength(b), { maxByteLength: abMax(b) });
  new Uint8Array(out).set(new Uint8Array(b));
  return out;
}

// serialize clones value with the transfer list (an iterable, already
// taken out of the options): { value, transferred } where transferred holds
// the copies of the registered transferables, in list order. context names
// the caller to the transferables' checks (the posting port).
function serialize(value, list, context) {
  const transfer = list === undefined || list === null ? NONE : transferList(list, context);
  // Primitives are themselves: nothing to walk.
  if (value === null || (typeof value !== "object" && typeof value !== "function" && typeof value !== "symbol")) {
    return { value, transferred: NONE };
  }
  const out = cloneValue(value, { seen: new Map(), transfer });
  if (transfer === NONE) return { value: out, transferred: NONE };
  // Only once the whole value cloned are the transferred buffers detached.
  const transferred = [];
  for (const t of transfer) {
    if (t.kind !== null) transferred.push(t.copy);
    else if (!abDetached(t.value) && typeof abTransfer === "function") abTransfer.call(t.value);
  }
  return { value: out, transferred };
}
const NONE = Object.freeze([]);

// cloneValue clones v; ctx holds what the clone has seen (original →
// copy, so that cycles and shared references stay so) and the transfer
// list.
function cloneValue(v, ctx) {
  if (typeof v === "function" || typeof v === "symbol") throw dataCloneError(describe(v) + " could not be cloned.");
  if (v === null || typeof v !== "object") return v;
  const seen = ctx.seen;
  const known = seen.get(v);
  if (known !== undefined) return known;
  let out;
  if (transferables.length > 0) {
    const t = transferableOf(v);
    if (t !== undefined) {
      const entry = ctx.transfer.find((x) => x.value === v);
      if (entry === undefined) {
        throw nodeError(TypeError, "ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST",
          "Object that needs transfer was found in message but not listed in transferList");
      }
      out = entry.copy !== undefined ? entry.copy : (entry.copy = t.transfer(v));
      seen.set(v, out);
      return out;
    }
  }
  if (Array.isArray(v)) {
    out = new Array(v.length);
    seen.set(v, out);
    for (const k of Object.keys(v)) out[k] = cloneValue(v[k], ctx);
    return out;
  }
  if (ArrayBuffer.isView(v)) {
    const tag = taTagOf(v);
    if (tag === undefined) out = new DataView(cloneValue(dvBuffer(v), ctx), dvOffset(v), dvLength(v));
    else out = new globalThis[tag](cloneValue(taBuffer(v), ctx), taOffset(v), taLength(v));
    seen.set(v, out);
    return out;
  }
  // The kind comes from Object.prototype.toString's tag, confirmed by a
  // brand check; only an object whose own Symbol.toStringTag may hide its
  // kind is tried against every brand (a brand check that fails throws,
  // which costs the engine a stack trace: plain objects must not pay it).
  const tag = kindTag(v);
  const custom = v[Symbol.toStringTag];
  if (tag !== "Object" || custom !== undefined) {
    const kind = KINDS.get(tag);
    if (kind !== undefined && is(brands[kind], v)) return cloneKind(kind, v, ctx);
    if (custom !== undefined && !REFUSED.has(tag)) {
      for (const k of KINDS.values()) {
        if (is(brands[k], v)) return cloneKind(k, v, ctx);
      }
    }
    if (tag === "Error") return cloneError(v, ctx);
    if (REFUSED.has(tag)) throw dataCloneError(describe(v) + " could not be cloned.");
  }
  out = {};
  seen.set(v, out);
  for (const k of Object.keys(v)) out[k] = cloneValue(v[k], ctx);
  return out;
}
function taTagOf(v) {
  try { return taTag(v); } catch (_) { return undefined; }
}

// KINDS maps the tag of each kind that clones by its internal slots to
// its brand check.
const KINDS = new Map([["Date", "date"], ["RegExp", "regexpSource"], ["Map", "mapSize"], ["Set", "setSize"],
  ["ArrayBuffer", "abLength"], ["Number", "number"], ["String", "string"], ["Boolean", "boolean"], ["BigInt", "bigint"]]);

// cloneKind clones v, of a kind of KINDS, and registers the copy (before
// a Map's or a Set's entries are cloned, so that they may refer to it).
function cloneKind(kind, v, ctx) {
  let out;
  switch (kind) {
    case "date": out = new Date(brands.date(v)); break;
    case "regexpSource": out = new RegExp(brands.regexpSource(v), regexpFlags(v)); break;
    case "abLength": out = copyBuffer(v); break;
    case "mapSize": {
      out = new Map();
      ctx.seen.set(v, out);
      // Keys and values are read first, as V8 does, so that a getter that
      // changes the map sees the one it started with.
      for (const [k, x] of Array.from(Map.prototype.entries.call(v))) out.set(cloneValue(k, ctx), cloneValue(x, ctx));
      return out;
    }
    case "setSize": {
      out = new Set();
      ctx.seen.set(v, out);
      for (const x of Array.from(Set.prototype.values.call(v))) out.add(cloneValue(x, ctx));
      return out;
    }
    default: {
      const box = { number: Number, string: String, boolean: Boolean, bigint: BigInt }[kind];
      out = Object(box(brands[kind](v)));
    }
  }
  ctx.seen.set(v, out);
  return out;
}

// cloneError clones an error as V8 does: the prototype of its name when
// that is a standard error's, else Error's; its message when it is an own
// data property; its stack; its cause, cloned. Nothing else is kept.
function cloneError(v, ctx) {
  let name;
  try { name = v.name; } catch (_) { name = undefined; }
  const Ctor = Object.prototype.hasOwnProperty.call(ERRORS, name) ? ERRORS[name] : Error;
  const out = Object.create(Ctor.prototype);
  ctx.seen.set(v, out);
  const define = (key, value) => Object.defineProperty(out, key, { value, writable: true, enumerable: false, configurable: true });
  const stack = v.stack;
  define("stack", typeof stack === "string" ? stack : undefined);
  const message = getOwn(v, "message");
  if (message !== undefined && "value" in message) define("message", String(message.value));
  const cause = getOwn(v, "cause");
  if (cause !== undefined && "value" in cause) define("cause", cloneValue(cause.value, ctx));
  return out;
}

function structuredClone(value, options) {
  if (arguments.length === 0) throw nodeError(TypeError, "ERR_MISSING_ARGS", "The value argument must be specified");
  if (options !== undefined && options !== null && typeof options !== "object") {
    throw nodeError(TypeError, "ERR_INVALID_ARG_TYPE", "The options argument must be either an object or undefined");
  }
  return serialize(value, options == null ? undefined : options.transfer).value;
}

module.exports = { structuredClone, serialize, defineTransferable, markAsUntransferable, dataCloneError };
