// The wasmgate prelude: evaluated once in every QuickJS engine before the
// tool, captured in the snapshot with it. It sets the determinism profile
// (seeded Math.random, a bounded console) and holds the protocol the host
// drives: load(namespacePromise, exportName), run(request), take().
//
// Its completion value is [load, run, take]; the host keeps those three
// functions and nothing else from this file.
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

  // ---- console: captured into a bounded log, never audited --------------
  const LOG_LIMIT = 65536;
  let log = "", logFull = false;
  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof Error) return String(v.name) + ": " + String(v.message);
    if (typeof v === "object" && v !== null) {
      try { return JSON.stringify(v); } catch (e) { /* cycles and BigInts */ }
    }
    try { return String(v); } catch (e) { return Object.prototype.toString.call(v); }
  }
  function writer(prefix) {
    return function (...args) {
      if (logFull) return;
      const line = prefix + args.map(show).join(" ") + "\n";
      if (log.length + line.length > LOG_LIMIT) {
        log += line.slice(0, Math.max(0, LOG_LIMIT - log.length)) + "\n[log truncated at 64 KiB]\n";
        logFull = true;
        return;
      }
      log += line;
    };
  }
  const console = {
    log: writer(""), info: writer(""), debug: writer(""), trace: writer(""),
    warn: writer("warn: "), error: writer("error: "),
  };
  Object.defineProperty(globalThis, "console", {
    value: console, writable: true, configurable: true, enumerable: false,
  });

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

  // Which value is the tool, by the HTTP executor protocol's rules:
  // pkg[name], then pkg.default?.[name], then pkg.default. Without a name the
  // module itself is the tool when it exports execute, else its default.
  function resolve(ns, name) {
    let c, where;
    if (name !== "") {
      c = ns[name]; where = "export " + JSON.stringify(name);
      if (c === undefined && ns.default != null) c = ns.default[name];
      if (c === undefined) { c = ns.default; where = "the default export"; }
      if (c === undefined) return { k: "notfound", message: "the tool exports no " + JSON.stringify(name) + " (nor a default export)" };
    } else if (typeof ns.execute === "function") {
      c = ns; where = "the module";
    } else {
      c = ns.default; where = "the default export";
      if (c === undefined) return { k: "notfound", message: "the tool exports neither execute nor a default export" };
    }
    if (hasExecute(c)) { tool = c; return { k: "ok" }; }
    if (typeof c === "function") { factory = c; return { k: "ok" }; }
    return { k: "invalid", message: where + " has no execute function and is not a factory" };
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
    return Promise.resolve(factory()).then((t) => hasExecute(t) ? t : factory(env)).then((t) => {
      if (!hasExecute(t)) {
        const e = new Error("the factory returned no object with an execute function");
        e.invalidTool = true;
        throw e;
      }
      return t.execute(params, OPTIONS);
    });
  }

  function done(v) {
    if (v === undefined) { state = { k: "none" }; return; }
    let bad = "";
    const replacer = function (key, val) {
      const t = typeof val;
      const at = key === "" ? "the result" : "key " + JSON.stringify(key);
      if (t === "function" || t === "symbol" || t === "bigint") bad = "a " + t + " at " + at;
      else if (t === "number" && !Number.isFinite(val)) bad = String(val) + " at " + at;
      if (bad !== "") throw new TypeError(bad);
      return val;
    };
    try {
      state = { k: "ok", output: JSON.stringify(v, replacer) };
    } catch (e) {
      state = { k: "notjson", message: bad !== "" ? bad : (e instanceof Error ? String(e.message) : show(e)) };
    }
  }
  function fail(e) {
    if (e instanceof Error && e.invalidTool === true) state = { k: "invalid", message: e.message };
    else state = { k: "error", message: describe(e) };
  }

  // run's argument is "seed\nenv\ninput": the digest-derived seed in hex,
  // the request's env as JSON, and the canonical input.
  function run(arg) {
    const i = arg.indexOf("\n"), j = arg.indexOf("\n", i + 1);
    seed(arg.slice(0, i));
    log = ""; logFull = false;
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
    return JSON.stringify({ k: state.k, output: state.output, message: state.message, log });
  }

  return [load, run, take];
})();
