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
  const f = kind === "get" ? d.get : d.value;
  return (v, ...args) => f.call(v, ...args);
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
  const transfer = transferList(list, context);
  const seen = new Map();
  const moved = new Set();
  for (const t of transfer) {
    if (t.kind === null) moved.add(t.value);
  }
  const clone = (v) => {
    if (typeof v === "function" || typeof v === "symbol") throw dataCloneError(describe(v) + " could not be cloned.");
    if (v === null || typeof v !== "object") return v;
    const known = seen.get(v);
    if (known !== undefined) return known;
    let out;
    const keep = (o) => { seen.set(v, o); return o; };
    const t = transferableOf(v);
    if (t !== undefined) {
      const entry = transfer.find((x) => x.value === v);
      if (entry === undefined) {
        throw nodeError(TypeError, "ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST",
          "Object that needs transfer was found in message but not listed in transferList");
      }
      return keep(entry.copy !== undefined ? entry.copy : (entry.copy = t.transfer(v)));
    }
    if (Array.isArray(v)) {
      out = keep(new Array(v.length));
      for (const k of Object.keys(v)) out[k] = clone(v[k]);
      return out;
    }
    if (is(brands.date, v)) return keep(new Date(brands.date(v)));
    if (is(brands.regexpSource, v)) return keep(new RegExp(brands.regexpSource(v), regexpFlags(v)));
    if (is(brands.mapSize, v)) {
      out = keep(new Map());
      // Keys and values are read first, as V8 does, so that a getter that
      // changes the map sees the one it started with.
      const entries = Array.from(Map.prototype.entries.call(v));
      for (const [k, x] of entries) out.set(clone(k), clone(x));
      return out;
    }
    if (is(brands.setSize, v)) {
      out = keep(new Set());
      for (const x of Array.from(Set.prototype.values.call(v))) out.add(clone(x));
      return out;
    }
    if (is(brands.abLength, v)) return keep(copyBuffer(v));
    if (ArrayBuffer.isView(v)) {
      const tag = taTagOf(v);
      if (tag === undefined) {
        const buf = clone(dvBuffer(v));
        return keep(new DataView(buf, dvOffset(v), dvLength(v)));
      }
      const buf = clone(taBuffer(v));
      return keep(new globalThis[tag](buf, taOffset(v), taLength(v)));
    }
    for (const [check, box] of [[brands.number, Number], [brands.string, String], [brands.boolean, Boolean], [brands.bigint, BigInt]]) {
      if (is(check, v)) return keep(Object(box(check(v))));
    }
    const tag = kindTag(v);
    if (tag === "Error") return cloneError(v, keep, clone);
    if (REFUSED.has(tag)) throw dataCloneError(describe(v) + " could not be cloned.");
    out = keep({});
    for (const k of Object.keys(v)) out[k] = clone(v[k]);
    return out;
  };
  const out = clone(value);
  // Only once the whole value cloned are the transferred buffers detached.
  for (const b of moved) {
    if (!abDetached(b) && typeof abTransfer === "function") abTransfer.call(b);
  }
  return { value: out, transferred: transfer.filter((t) => t.kind !== null).map((t) => t.copy) };
}
function taTagOf(v) {
  try { return taTag(v); } catch (_) { return undefined; }
}

// cloneError clones an error as V8 does: the prototype of its name when
// that is a standard error's, else Error's; its message when it is an own
// data property; its stack; its cause, cloned. Nothing else is kept.
function cloneError(v, keep, clone) {
  let name;
  try { name = v.name; } catch (_) { name = undefined; }
  const Ctor = Object.prototype.hasOwnProperty.call(ERRORS, name) ? ERRORS[name] : Error;
  const out = keep(Object.create(Ctor.prototype));
  const define = (key, value) => Object.defineProperty(out, key, { value, writable: true, enumerable: false, configurable: true });
  const stack = v.stack;
  define("stack", typeof stack === "string" ? stack : undefined);
  const message = getOwn(v, "message");
  if (message !== undefined && "value" in message) define("message", String(message.value));
  const cause = getOwn(v, "cause");
  if (cause !== undefined && "value" in cause) define("cause", clone(cause.value));
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
