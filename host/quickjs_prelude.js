// The wasmgate prelude: evaluated once in every QuickJS engine before the
// tool, captured in the snapshot with it. It sets the determinism profile
// (seeded Math.random, a bounded console) and holds the protocol the host
// drives: load(namespacePromise, exportName), run(request), take(),
// attach(logFunction), and for scripts (wasmgate script) script(call, write,
// seed) and main(namespace).
//
// Its completion value is [load, run, take, script, main, attach]; the host
// keeps those functions and nothing else from this file.
(() => {
  "use strict";

  // ---- Math.random, seeded per execution from the input digest ----------
  // xoshiro128**: small, fast, and exact in 32-bit integer arithmetic.
  let s0 = 1, s1 = 2, s2 = 3, s3 = 4;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  function seed(hex) {
    s0 = parseInt(hex.slice(0, 8), 16) | 0;
    s1 = parseInt(hex.slice(8, 16), 16) | 0;
    s2 = parseInt(hex.slice(16, 24), 16) | 0;
    s3 = parseInt(hex.slice(24, 32), 16) | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  }
  function next() {
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9);
    const t = s1 << 9;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 11);
    return r >>> 0;
  }
  Object.defineProperty(Math, "random", {
    value: function random() {
      // 53 random bits, as doubles in [0, 1) have.
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    },
    writable: true, configurable: true, enumerable: false,
  });

  // ---- console: streamed to the host as it is called, never audited ------
  // Each call is one entry (level, message, data) handed to the host's log
  // function, which the host binds after the tool has loaded (attach) and
  // which bounds the log: it answers "full" once 64 KiB are logged, and the
  // console falls silent until the next execution. Before attach (the tool's
  // top-level code) the console writes nothing.
  let sink = null, logFull = false;
  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof Error) return String(v.name) + ": " + String(v.message);
    if (typeof v === "object" && v !== null) {
      try { return JSON.stringify(v); } catch (e) { /* cycles and BigInts */ }
    }
    try { return String(v); } catch (e) { return Object.prototype.toString.call(v); }
  }
  // console.log("message", {context}) is the protocol's log entry with
  // data: the message and the object as JSON. Any other call is a message
  // alone: its arguments shown and joined by spaces.
  function entry(args) {
    if (args.length === 2 && typeof args[0] === "string" && typeof args[1] === "object" &&
      args[1] !== null && !(args[1] instanceof Error)) {
      const d = toJSON(args[1], "the data");
      if (d.bad === undefined) return [args[0], d.json];
    }
    return [args.map(show).join(" "), ""];
  }
  const LOG_LIMIT = 65536;
  function writer(level) {
    return function (...args) {
      if (logFull || sink === null) return;
      let [message, data] = entry(args);
      // What cannot fit in the log is not handed over (the host cuts the
      // last entry at the limit's byte).
      if (message.length + data.length >= LOG_LIMIT) {
        message = (data === "" ? message : message + " " + data).slice(0, LOG_LIMIT);
        data = "";
      }
      if (sink(level, message, data) === "full") logFull = true;
    };
  }
  const console = {
    log: writer("info"), info: writer("info"), debug: writer("debug"), trace: writer("debug"),
    warn: writer("warn"), error: writer("error"),
  };
  Object.defineProperty(globalThis, "console", {
    value: console, writable: true, configurable: true, enumerable: false,
  });
  // attach binds the host's log function (once, after loading).
  function attach(fn) { sink = fn; }

  // ---- TextEncoder / TextDecoder (UTF-8 only), which the engine lacks -----
  function define(name, value) {
    if (!(name in globalThis)) {
      Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
    }
  }
  function utf8Encode(str) {
    const out = [];
    for (let i = 0; i < str.length; i++) {
      let c = str.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
        const d = str.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // a lone surrogate
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  }
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") { return utf8Encode(String(input)); }
    encodeInto(input, dest) {
      let read = 0, written = 0;
      for (const ch of String(input)) { // code point by code point
        const b = utf8Encode(ch);
        if (written + b.length > dest.length) break;
        dest.set(b, written);
        written += b.length;
        read += ch.length;
      }
      return { read, written };
    }
  }
  class TextDecoder {
    constructor(label = "utf-8", options = {}) {
      const l = String(label).trim().toLowerCase();
      if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8") throw new RangeError("TextDecoder: only utf-8 is supported, not " + JSON.stringify(label));
      this.fatal = !!options.fatal;
      this.ignoreBOM = !!options.ignoreBOM;
    }
    get encoding() { return "utf-8"; }
    decode(input, _options) {
      if (input === undefined) return "";
      const b = input instanceof ArrayBuffer ? new Uint8Array(input)
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
      let s = "", i = 0;
      if (!this.ignoreBOM && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) i = 3;
      const bad = () => { if (this.fatal) throw new TypeError("TextDecoder: the input is not valid UTF-8"); return 0xfffd; };
      const units = [];
      while (i < b.length) {
        const c = b[i];
        let cp, n = 0, min = 0;
        if (c < 0x80) { cp = c; }
        else if (c >= 0xc2 && c < 0xe0) { cp = c & 31; n = 1; min = 0x80; }
        else if (c >= 0xe0 && c < 0xf0) { cp = c & 15; n = 2; min = 0x800; }
        else if (c >= 0xf0 && c < 0xf5) { cp = c & 7; n = 3; min = 0x10000; }
        else { units.push(bad()); i++; continue; }
        let j = 1;
        for (; j <= n; j++) {
          const d = b[i + j];
          if (d === undefined || (d & 0xc0) !== 0x80) break;
          cp = (cp << 6) | (d & 63);
        }
        if (j <= n) { units.push(bad()); i += j; continue; } // truncated: skip what was read
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) { units.push(bad()); i++; continue; }
        i += n + 1;
        if (cp >= 0x10000) { cp -= 0x10000; units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff)); }
        else units.push(cp);
        if (units.length >= 8192) { s += String.fromCharCode.apply(null, units); units.length = 0; }
      }
      return s + String.fromCharCode.apply(null, units);
    }
  }
  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);

  // Web platform classes the engine lacks exist so that libraries which
  // extend or test against them at load time (class X extends
  // TransformStream, z.instanceof(URL)) still load; constructing one throws.
  for (const name of ["ReadableStream", "WritableStream", "TransformStream", "URL", "URLSearchParams",
    "Headers", "Request", "Response", "Blob", "File", "FormData"]) {
    define(name, { [name]: class {
      constructor() { throw new TypeError(name + " is not available in the wasmgate sandbox"); }
    } }[name]);
  }

  // ---- the protocol -------------------------------------------------------
  let state = { k: "pending" };
  let tool = null, factory = null;

  function describe(e) {
    if (e instanceof Error) {
      let s = String(e.name) + ": " + String(e.message);
      if (typeof e.stack === "string") {
        // The tool's frames only: the prelude's are wasmgate's business.
        const frames = e.stack.split("\n").filter((l) => l !== "" && !l.includes("wasmgate:prelude"));
        if (frames.length > 0) s += "\n" + frames.join("\n");
      }
      return s;
    }
    return "uncaught " + show(e);
  }
  const hasExecute = (v) => v != null && typeof v.execute === "function";

  // Which value is the tool, as the HTTP executor protocol's reference
  // executors find it: pkg[name] || pkg.default?.[name] || pkg.default.
  // Without a name the module itself is the tool when it exports execute,
  // else its default. A value with execute is the tool; a plain function is
  // a factory (called per execution, see instantiate); a class, or anything
  // else, is not a tool.
  function resolve(ns, name) {
    let c, where;
    if (name !== "") {
      // Own properties only: "constructor" or "__proto__" name no export.
      const own = (o) => o != null && (typeof o === "object" || typeof o === "function") &&
        Object.prototype.hasOwnProperty.call(o, name) ? o[name] : undefined;
      const def = ns.default;
      if (own(ns)) { c = ns[name]; where = "export " + JSON.stringify(name); }
      else if (own(def)) { c = def[name]; where = "the default export's " + JSON.stringify(name); }
      else { c = def; where = "the default export"; }
      if (!c) return { k: "notfound", message: "the tool exports no " + JSON.stringify(name) + " (nor a default export)" };
    } else if (typeof ns.execute === "function") {
      c = ns; where = "the module";
    } else {
      c = ns.default; where = "the default export";
      if (!c) return { k: "notfound", message: "the tool exports neither execute nor a default export" };
    }
    if (hasExecute(c)) { tool = c; return { k: "ok" }; }
    if (typeof c === "function") {
      if (isClass(c)) return { k: "invalid", message: where + " is a class, not a tool: a tool is an object with an execute function, or a function that returns one" };
      factory = c;
      return { k: "ok" };
    }
    return { k: "invalid", message: where + " is " + kind(c) + " with no execute function, not a tool" };
  }
  function isClass(f) {
    try { return /^class[\s{]/.test(Function.prototype.toString.call(f)); } catch (e) { return false; }
  }
  function kind(v) {
    if (v === null || v === undefined) return String(v);
    if (Array.isArray(v)) return "an array";
    const t = typeof v;
    return (t === "object" ? "an " : "a ") + t;
  }

  function load(namespace, name) {
    state = { k: "pending" };
    namespace.then(
      (ns) => { try { state = resolve(ns, name); } catch (e) { state = { k: "error", message: describe(e) }; } },
      (e) => { state = { k: "error", message: describe(e) }; });
  }

  const OPTIONS = Object.freeze({ toolCallId: "wasmgate", messages: Object.freeze([]) });

  function invoke(params, env) {
    if (tool !== null) return tool.execute(params, OPTIONS);
    return instantiate(env).then((t) => t.execute(params, OPTIONS));
  }

  // instantiate turns the factory into a tool as the reference executors
  // do: call it with no argument; if that throws or gives no tool, call it
  // with the request's env. Only when both fail is the export not a tool
  // (TOOL_INVALID, both reasons named); what execute then throws is the
  // tool's own error.
  function instantiate(env) {
    const attempt = (args) => {
      let r;
      try { r = factory(...args); } catch (e) { return Promise.resolve({ why: "threw " + brief(e) }); }
      return Promise.resolve(r).then(
        (t) => hasExecute(t) ? { tool: t } : { why: "returned " + kind(t) + " with no execute function" },
        (e) => ({ why: "rejected with " + brief(e) }));
    };
    return attempt([]).then((a) => a.tool !== undefined ? a.tool : attempt([env]).then((b) => {
      if (b.tool !== undefined) return b.tool;
      const e = new Error("the factory gave no tool: called with no argument it " + a.why +
        "; called with the env it " + b.why);
      e.invalidTool = true;
      throw e;
    }));
  }
  function brief(e) {
    return e instanceof Error ? String(e.name) + ": " + String(e.message) : show(e);
  }

  // toJSON is JSON.stringify that refuses what has no JSON form instead of
  // dropping it or turning it into null: { json } or { bad: why }.
  function toJSON(v, what) {
    let bad = "";
    const replacer = function (key, val) {
      const t = typeof val;
      const at = key === "" ? what : "key " + JSON.stringify(key);
      if (t === "function" || t === "symbol" || t === "bigint") bad = "a " + t + " at " + at;
      else if (t === "number" && !Number.isFinite(val)) bad = String(val) + " at " + at;
      if (bad !== "") throw new TypeError(bad);
      return val;
    };
    try {
      return { json: JSON.stringify(v, replacer) };
    } catch (e) {
      return { bad: bad !== "" ? bad : (e instanceof Error ? String(e.message) : show(e)) };
    }
  }

  function done(v) {
    if (v === undefined) { state = { k: "none" }; return; }
    const r = toJSON(v, "the result");
    state = r.bad === undefined ? { k: "ok", output: r.json } : { k: "notjson", message: r.bad };
  }
  // fail records an exception: its description (name, message and the
  // tool's stack frames) and, for an Error, what the tool protocol's error
  // events carry: its name and message apart, its code when that is a
  // string, and its recoverable flag when that is a boolean.
  function fail(e) {
    if (e instanceof Error && e.invalidTool === true) { state = { k: "invalid", message: e.message }; return; }
    state = { k: "error", message: describe(e) };
    if (!(e instanceof Error)) return;
    try {
      state.name = String(e.name);
      state.text = String(e.message);
      if (typeof e.code === "string") state.code = e.code;
      if (typeof e.recoverable === "boolean") state.recoverable = e.recoverable;
    } catch (_) { /* a throwing getter: the description is what is left */ }
  }

  // run's argument is "seed\nenv\ninput": the digest-derived seed in hex,
  // the request's env as JSON, and the canonical input.
  function run(arg) {
    const i = arg.indexOf("\n"), j = arg.indexOf("\n", i + 1);
    seed(arg.slice(0, i));
    logFull = false;
    state = { k: "pending" };
    let r;
    try {
      r = invoke(JSON.parse(arg.slice(j + 1)), JSON.parse(arg.slice(i + 1, j)));
    } catch (e) {
      fail(e);
      return;
    }
    try {
      if (r !== null && (typeof r === "object" || typeof r === "function") && typeof r.then === "function") {
        Promise.resolve(r).then(done, fail);
        return;
      }
    } catch (e) {
      fail(e); // a throwing "then" getter
      return;
    }
    done(r);
  }

  function take() {
    return JSON.stringify({ k: state.k, output: state.output, message: state.message,
      name: state.name, text: state.text, code: state.code, recoverable: state.recoverable });
  }

  // ---- scripts -------------------------------------------------------------
  // A script runs once, in a fresh engine, and reaches the host through two
  // host functions: call(action, paramsJSON) → the call's result envelope
  // (JSON), and write(stream, text) for its console, written as it happens.

  // script binds the host functions before the script is evaluated: the
  // console writes through write, and the toolscript module (generated at
  // bundle time) finds callTool under a registered symbol.
  function script(call, write, seedHex) {
    seed(seedHex);
    const writeTo = (stream) => function (...args) { write(stream, args.map(show).join(" ") + "\n"); };
    console.log = console.info = console.debug = console.trace = writeTo("out");
    console.warn = console.error = writeTo("err");
    async function callTool(label, action, params) {
      const p = params === undefined ? { json: "{}" } : toJSON(params, "the params");
      if (p.bad !== undefined) throw new TypeError(label + ": the params are not JSON: " + p.bad);
      const r = JSON.parse(call(action, p.json));
      if (r.status === "SUCCESS") return r.output;
      const codes = r.reason_codes.join(", ");
      const e = new Error(label + " failed: " + r.status + " [" + codes + "]" + (r.message ? ": " + r.message : ""));
      e.name = "ToolCallError";
      e.action = action;
      e.status = r.status;
      e.reasonCodes = r.reason_codes;
      e.traceId = r.trace_id;
      throw e;
    }
    Object.defineProperty(globalThis, Symbol.for("wasmgate.toolscript"), {
      value: Object.freeze(callTool), writable: false, configurable: false, enumerable: false,
    });
  }

  // main settles the script's result: its default export, awaited, and
  // when that is a function, what calling it with no arguments gives,
  // awaited too.
  function main(namespace) {
    state = { k: "pending" };
    namespace.then((ns) => {
      const v = ns.default;
      return typeof v === "function" ? v() : v;
    }).then(done, fail);
  }

  return [load, run, take, script, main, attach];
})();
