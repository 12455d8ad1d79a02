// structuredClone of every type it supports, and its errors, as node 20
// clones: each case gives a JSON description of the clone, or of the error.
const tag = (v) => Object.prototype.toString.call(v);
const props = (o) => Object.getOwnPropertyNames(o);

const cases = {
  primitives: () => [1, "s", true, null, Object.is(structuredClone(-0), -0), typeof structuredClone(10n), String(structuredClone(10n)), structuredClone(undefined) === undefined].map((v) => structuredClone(v)),
  object: () => {
    const c = structuredClone({ b: 1, a: { nested: [1, "x"] }, 1: "one", get g() { return "got"; } });
    return [Object.keys(c), c, Object.getOwnPropertyDescriptor(c, "g")];
  },
  skipped: () => {
    const o = { keep: 1, [Symbol("k")]: 2 };
    Object.defineProperty(o, "hidden", { value: 3, enumerable: false });
    const c = structuredClone(o);
    return [props(c), Object.getOwnPropertySymbols(c).length];
  },
  classInstance: () => {
    class Point { constructor() { this.x = 1; } get y() { return 2; } }
    const c = structuredClone(new Point());
    return [c.constructor.name, c.x, c.y === undefined, Object.getPrototypeOf(c) === Object.prototype];
  },
  nullPrototype: () => {
    const c = structuredClone(Object.assign(Object.create(null), { a: 1 }));
    return [Object.getPrototypeOf(c) === Object.prototype, c.a];
  },
  array: () => {
    const a = [1, , 3];
    a.extra = "x";
    class List extends Array {}
    const c = structuredClone(a);
    return [c.length, 1 in c, Object.keys(c), structuredClone(List.from([1, 2])).constructor.name];
  },
  date: () => [structuredClone(new Date(86400000)).toISOString(), Number.isNaN(structuredClone(new Date(NaN)).getTime()), tag(structuredClone(new Date(0)))],
  regexp: () => {
    const r = /a+(b)/gimsuy;
    r.lastIndex = 3;
    const c = structuredClone(r);
    return [String(c), c.lastIndex, c !== r, String(structuredClone(/x/d))];
  },
  boxed: () => structuredClone([new Number(3), new String("s"), new Boolean(false), Object(5n)]).map((x) => [typeof x, tag(x), String(x.valueOf())]),
  map: () => {
    const key = { k: 1 };
    const m = new Map([[key, new Set([1, "two"])], ["self", null]]);
    m.set("self", m);
    const c = structuredClone(m);
    const [k] = c.keys();
    return [c.size, k, k !== key, [...c.get(k)], c.get("self") === c];
  },
  set: () => {
    const s = new Set([1, { a: 1 }]);
    s.add(s);
    const c = structuredClone(s);
    return [c.size, [...c].filter((x) => x === c).length, [...c][1]];
  },
  arrayBuffer: () => {
    const b = new ArrayBuffer(4);
    new Uint8Array(b).set([1, 2, 3, 4]);
    const c = structuredClone(b);
    const r = new ArrayBuffer(2, { maxByteLength: 8 });
    const rc = structuredClone(r);
    return [c.byteLength, Array.from(new Uint8Array(c)), c !== b, rc.resizable, rc.maxByteLength];
  },
  views: () => {
    const b = new ArrayBuffer(8);
    const u = new Uint8Array(b, 2, 4);
    u[0] = 9;
    const d = new DataView(b, 1, 3);
    const c = structuredClone({ u, d, b, f: new Float64Array([1.5, -0]), i: new BigInt64Array([-1n]), u16: new Uint16Array([65535]) });
    return [c.u.constructor.name, c.u.byteOffset, c.u.length, c.u[0], c.u.buffer === c.b, c.d.buffer === c.b, c.d.byteOffset, c.d.byteLength,
      c.b.byteLength, Array.from(c.f), c.i.constructor.name, String(c.i[0]), c.u16[0]];
  },
  buffer: () => {
    const c = structuredClone(Buffer.from("hi"));
    return [c.constructor.name, Buffer.from(c.buffer, c.byteOffset, c.length).toString()];
  },
  errors: () => {
    const e = new RangeError("r", { cause: { n: 5 } });
    e.extra = 1;
    const c = structuredClone(e);
    const named = new Error("x");
    named.name = "TypeError";
    const custom = new Error("y");
    custom.name = "MyError";
    class MyError extends SyntaxError {}
    const getter = new Error("z");
    Object.defineProperty(getter, "message", { get() { return "g"; } });
    return [
      [c.constructor.name, c.name, c.message, c.cause, c.extra === undefined, c.stack === e.stack, c instanceof RangeError],
      Object.getOwnPropertyDescriptor(c, "message"),
      structuredClone(named).constructor.name,
      [structuredClone(custom).constructor.name, structuredClone(custom).name],
      structuredClone(new MyError("q")).constructor.name,
      structuredClone(new AggregateError([1], "ag")).constructor.name,
      structuredClone(getter).message,
      structuredClone(new Error("m", { cause: undefined })).hasOwnProperty("cause"),
      [EvalError, ReferenceError, URIError].map((C) => structuredClone(new C("m")).constructor.name),
    ];
  },
  cycles: () => {
    const o = { list: [] };
    o.list.push(o);
    o.self = o;
    const shared = { s: 1 };
    const c = structuredClone(o);
    const pair = structuredClone([shared, shared]);
    return [c.list[0] === c, c.self === c, c !== o, pair[0] === pair[1]];
  },
  transfer: () => {
    const b = new ArrayBuffer(4);
    new Uint8Array(b)[0] = 7;
    const c = structuredClone({ b, view: new Uint8Array(b) }, { transfer: [b] });
    const kept = new ArrayBuffer(2);
    try { structuredClone({ kept, f: () => 1 }, { transfer: [kept] }); } catch (_) { /* the clone failed: nothing moved */ }
    const viaSet = new ArrayBuffer(3);
    structuredClone(viaSet, { transfer: new Set([viaSet]) });
    return [b.byteLength, c.b.byteLength, new Uint8Array(c.b)[0], c.view.buffer === c.b, kept.byteLength, viaSet.byteLength,
      structuredClone(1, { transfer: undefined }), structuredClone(2, null)];
  },
  untransferable: () => {
    const b = new ArrayBuffer(2);
    globalThis.__markAsUntransferable(b);
    const c = structuredClone(b, { transfer: [b] });
    return [b.byteLength, c.byteLength];
  },
};

const refused = {
  symbol: () => structuredClone(Symbol("s")),
  symbolInObject: () => structuredClone({ s: Symbol.for("t") }),
  promise: () => structuredClone(Promise.resolve()),
  weakMap: () => structuredClone(new WeakMap()),
  weakSet: () => structuredClone({ w: new WeakSet() }),
  weakRef: () => structuredClone(new WeakRef({})),
  finalizationRegistry: () => structuredClone(new FinalizationRegistry(() => {})),
  generator: () => structuredClone((function* gen() {})()),
  mapIterator: () => structuredClone(new Map().keys()),
  boxedSymbol: () => structuredClone(Object(Symbol("q"))),
  arguments: () => (function () { return structuredClone(arguments); })(1),
  causeFunction: () => structuredClone(new Error("x", { cause: Symbol("c") })),
  noArguments: () => structuredClone(),
  options: () => structuredClone(1, 5),
  transferNotIterable: () => structuredClone(1, { transfer: 5 }),
  transferString: () => structuredClone(1, { transfer: "ab" }),
  transferView: () => structuredClone(1, { transfer: [new Uint8Array(2)] }),
  transferTwice: () => { const b = new ArrayBuffer(1); structuredClone(b, { transfer: [b, b] }); },
  detached: () => { const b = new ArrayBuffer(1); structuredClone(b, { transfer: [b] }); structuredClone(b); },
  getterThrows: () => structuredClone({ get x() { throw new TypeError("from a getter"); } }),
  function: () => structuredClone({ f: Math.max }),
};

export async function execute() {
  const { markAsUntransferable } = await import("node:worker_threads");
  globalThis.__markAsUntransferable = markAsUntransferable;
  const out = {};
  for (const [name, f] of Object.entries(cases)) out[name] = f();
  for (const [name, f] of Object.entries(refused)) {
    try {
      out[name] = ["no error", f()];
    } catch (e) {
      // A function's source text starts V8's message: only the rest is compared.
      const message = name === "function" ? e.message.slice(e.message.indexOf("}") + 1) : e.message;
      out[name] = [e.constructor === DOMException ? "DOMException" : e.constructor.name, e.name, e.code === undefined ? null : e.code, message];
    }
  }
  return out;
}
