// console.log and util.inspect of values whose form is tricky, as node 20
// prints them: nesting past depth 2, long arrays and strings, line breaking
// at 80 columns, classes, null prototypes, symbols, getters, cycles, typed
// arrays, Buffers, Dates, boxed values, errors (with Error.stackTraceLimit
// 0, so that no frame, which differs by engine, is printed), and format's
// placeholders; then the console's other methods.
const util = require("util");
Error.stackTraceLimit = 0;

class Point { constructor(x, y) { this.x = x; this.y = y; } }
class Temperature { constructor(c) { this.celsius = c; } get fahrenheit() { return this.celsius * 9 / 5 + 32; } }
class Registry extends Map { constructor() { super([["k", 1]]); this.extra = true; } }
class ValidationError extends Error {
  constructor(message, field) { super(message); this.name = "ValidationError"; this.field = field; }
}
const circular = { name: "root", children: [] };
circular.children.push({ parent: circular, name: "child" });
circular.self = circular;
const shared = { s: 1 };
const nullProto = Object.assign(Object.create(null), { a: 1, b: "two" });
const tag = Symbol("tag");
const sparse = [1, , 3];
sparse.label = "x";
const named = function named() {};
named.version = 2;

const table = [
  ["primitives", [0, -0, 1.5, NaN, -Infinity, 1e21, 2 ** 53, 10n, -(2n ** 70n), true, null, undefined]],
  ["strings", ["plain", "it's", '"dq"', `both ' and "`, "tab\t\u0001\u007f", "ünï ✓ 😀", "line\nbreak"]],
  ["long string", "lorem ipsum ".repeat(12)],
  ["multiline in an object", { text: "first line\nsecond line\nthird line, long enough to make the string break across lines" }],
  ["depth", { a: { b: { c: { d: { e: 1 } } } }, arr: [[[[1, 2]]]], m: new Map([[1, { deep: { deeper: {} } }]]) }],
  ["map and set", [new Map([["a", 1], [{ k: 1 }, [1, 2]]]), new Set([1, "two", [3], { four: 4 }]), new Map(), new Set()]],
  ["classes", [new Point(1, 2), new Temperature(21), new Registry(), new (class {})(), new (class Empty {})()]],
  ["null prototype", [nullProto, Object.create(null)]],
  ["symbols", [tag, Symbol(), Symbol.for("registered"), Symbol.iterator, { [tag]: "v", plain: 1, [Symbol()]: 2 }]],
  ["getters and setters", { get g() { return 1; }, set s(v) {}, get gs() { return 2; }, set gs(v) {} }],
  ["circular", circular],
  ["shared, not circular", { a: shared, b: shared }],
  ["sparse array", sparse],
  ["101 numbers", Array.from({ length: 101 }, (_, i) => i * 7)],
  ["30 strings", Array.from({ length: 30 }, (_, i) => "item" + i)],
  ["mixed array", [1, "a", null, undefined, true, 2n, { x: 1 }, [2]]],
  ["typed arrays", [new Uint8Array([1, 2, 3]), new Float64Array([1.5, -0]), new BigInt64Array([1n]), new Int16Array(0)]],
  ["array buffer and view", [new Uint8Array([1, 2, 250]).buffer, new DataView(new ArrayBuffer(2))]],
  ["buffers", [Buffer.from("hello world"), Buffer.alloc(60, 7), Buffer.alloc(0)]],
  ["dates", [new Date(0), new Date(Date.UTC(2024, 1, 29, 12, 30)), new Date(NaN)]],
  ["regexps", [/a+b/gi, new RegExp("x/y"), /[\u{1F600}-\u{1F64F}]/u]],
  ["functions", [function () {}, () => {}, async function af() {}, function* gen() {}, class K {}, class extends Point {}, named, Math.max]],
  ["boxed", [new Number(3), new String("str"), new Boolean(false), Object(Symbol("boxed")), Object(5n)]],
  ["errors", [new Error("plain"), new TypeError("typed"), new ValidationError("bad value", "age"),
    Object.assign(new RangeError("with code"), { code: "E_RANGE" }), new Error("outer", { cause: new Error("inner") }),
    new AggregateError([new Error("one"), new Error("two")], "several")]],
  ["wide object", { alpha: "aaaaaaaaaaaa", beta: "bbbbbbbbbbbbbbb", gamma: "ccccccccccccccccc", delta: "ddddddddddd", epsilon: 5 }],
  ["keys that need quotes", { "a-b": 1, "with space": 2, 3: 3, valid_id: 4, "": 5, "ünï": 6 }],
  ["many keys", Object.fromEntries(Array.from({ length: 28 }, (_, i) => ["key" + i, i]))],
  ["records", [{ id: 1, tags: ["a", "b"], meta: { created: new Date(0), by: { name: "x", roles: ["admin"] } } }, { id: 2, tags: [], meta: null }]],
  ["arguments", (function () { return arguments; })(1, "two")],
  ["weak collections", [new WeakMap(), new WeakSet()]],
];

for (const [name, value] of table) {
  console.log(`-- ${name}`);
  console.log(value);
  console.log(util.inspect(value, { depth: 0, breakLength: 40 }));
  console.log(util.inspect(value, { compact: false, sorted: true, depth: 1 }));
}

console.log("-- format");
console.log("%s is %d years and %i days, %f%%", "Bob", 42.5, 3.9, "1.25");
console.log("%j %o %O", { a: [1] }, [1, { b: 2 }], { c: { d: { e: {} } } });
console.log("%s %s %s %s", 10n, Symbol("q"), { a: { b: { c: 1 } } }, [1, [2, [3]]]);
console.log("%d %i %d", "42abc", -0, 10n, "extra", { arg: true });
console.log("%c styled", "color: red", "%% and %x stay");
console.log(null, undefined, "text", 1, { a: 1 });
console.log();
console.log(util.format("%s", new Error("in format").message), util.format(1, 2), util.format("%s:%s", "a"));

console.log("-- console");
console.info("info goes to stdout");
console.error("error goes to stderr:", { code: 1 });
console.warn("warn too");
console.debug("debug", [1, 2]);
console.dir({ a: { b: { c: { d: 1 } } } }, { depth: 0 });
console.dir({ custom: { [util.inspect.custom]: () => "CUSTOM" } });
console.log({ custom: { [util.inspect.custom]: () => "CUSTOM" } });
console.group("Group A");
console.log("inside A\nsecond line");
console.group();
console.warn("nested, on stderr");
console.groupEnd();
console.groupEnd();
console.log("outside");
console.count();
console.count("apples");
console.count("apples");
console.countReset("apples");
console.count("apples");
console.assert(1 === 1, "not printed");
console.assert(false, "printed with %s", "format");
console.assert(false);
console.table([{ a: 1, b: "x" }, { a: 2, c: true }]);
console.table({ first: { n: 1 }, second: { n: 22, m: [1, 2, 3, 4] } });
console.table([1, "two", { three: 3 }]);
console.table([[1, 2], [3, 4, 5]]);
console.table(new Map([["k1", { v: 1 }], ["k2", 2]]));
console.table([{ name: "ünï", width: "日本語" }], ["name"]);
console.table("not tabular");
