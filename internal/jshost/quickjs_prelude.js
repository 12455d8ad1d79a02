// The wasmgate prelude: evaluated once in every QuickJS engine before the
// tool, captured in the snapshot with it. It sets the determinism profile
// (seeded Math.random, a bounded console, timers on a virtual clock), gives
// the Node built-ins their bridge to the host, and holds the protocol the
// host drives: init(nodeFunction), load(namespacePromise, exportName),
// run(request), take(), attach(logFunction), tick(), and for scripts
// (wasmgate script) script(call, write, seed) and main(namespace), and for
// programs (wasmgate node) program(write, exit, argv, stdin, seed).
//
// Its completion value is [load, run, take, script, main, attach, tick,
// init, program]; the host keeps those functions and nothing else from this
// file.
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

  // ---- TextEncoder / TextDecoder, which the engine lacks ------------------
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
  // The encodings Node's TextDecoder knows without ICU data, by their WHATWG
  // labels: utf-8, utf-16le and windows-1252 (what "latin1", "ascii" and
  // "iso-8859-1" name in the Encoding Standard), which Node decodes as
  // latin1, a byte a character.
  const ENCODINGS = {
    "utf-8": ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"],
    "utf-16le": ["utf-16le", "utf-16", "utf16le", "ucs-2", "unicode", "csunicode", "iso-10646-ucs-2", "unicodefeff"],
    "windows-1252": ["windows-1252", "latin1", "iso-8859-1", "ascii", "us-ascii", "l1", "cp1252", "cp819",
      "csisolatin1", "ibm819", "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "x-cp1252"],
  };
  const LABELS = new Map();
  for (const enc of Object.keys(ENCODINGS)) for (const l of ENCODINGS[enc]) LABELS.set(l, enc);
  const fromUnits = (units) => {
    let s = "";
    for (let i = 0; i < units.length; i += 8192) s += String.fromCharCode.apply(null, units.slice(i, i + 8192));
    return s;
  };
  class TextDecoder {
    constructor(label = "utf-8", options = {}) {
      const enc = LABELS.get(String(label).trim().toLowerCase());
      if (enc === undefined) {
        const e = new RangeError("The \"" + String(label) + "\" encoding is not supported");
        e.code = "ERR_ENCODING_NOT_SUPPORTED";
        throw e;
      }
      this._enc = enc;
      this.fatal = !!(options && options.fatal);
      this.ignoreBOM = !!(options && options.ignoreBOM);
      this._pending = null; // the bytes of a character a streaming decode cut
      this._first = true; // a BOM is looked for at the start of a stream only
    }
    get encoding() { return this._enc; }
    // decode, with {stream: true}, keeps the bytes of a character cut at the
    // end of input for the next call, as the Encoding Standard says.
    decode(input, options) {
      const stream = !!(options && options.stream);
      let b = input === undefined ? new Uint8Array(0) : input instanceof ArrayBuffer ? new Uint8Array(input)
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
      if (this._pending !== null) {
        const joined = new Uint8Array(this._pending.length + b.length);
        joined.set(this._pending);
        joined.set(b, this._pending.length);
        b = joined;
        this._pending = null;
      }
      if (stream) {
        const keep = this._cut(b);
        if (keep > 0) {
          this._pending = b.slice(b.length - keep);
          b = b.subarray(0, b.length - keep);
        }
      }
      const first = this._first;
      // The stream has started once a byte was decoded; a call that ends
      // it (no stream) makes the next call start another.
      this._first = !stream || (first && b.length === 0);
      return this._decode(b, first);
    }
    // _cut is how many bytes at the end of b begin a character they do not
    // finish.
    _cut(b) {
      const n = b.length;
      if (this._enc === "utf-16le") {
        let keep = n % 2;
        const u = n - keep >= 2 ? b[n - keep - 2] | (b[n - keep - 1] << 8) : 0;
        if (u >= 0xd800 && u <= 0xdbff) keep += 2;
        return keep;
      }
      if (this._enc !== "utf-8") return 0;
      for (let k = 1; k <= Math.min(3, n); k++) {
        const c = b[n - k];
        if ((c & 0xc0) === 0x80) continue;
        const need = c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : 0;
        return need >= k ? k : 0;
      }
      return 0;
    }
    _decode(b, first) {
      if (this._enc === "windows-1252") return fromUnits(Array.from(b)); // as Node: a byte is a character
      if (this._enc === "utf-16le") {
        let i = 0;
        if (first && !this.ignoreBOM && b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) i = 2;
        const units = [];
        for (; i + 1 < b.length; i += 2) units.push(b[i] | (b[i + 1] << 8));
        if (i < b.length) {
          if (this.fatal) throw new TypeError("The encoded data was not valid for encoding utf-16le");
          units.push(0xfffd);
        }
        for (let j = 0; j < units.length; j++) { // lone surrogates
          const u = units[j];
          if (u >= 0xd800 && u <= 0xdbff && j + 1 < units.length && units[j + 1] >= 0xdc00 && units[j + 1] <= 0xdfff) { j++; continue; }
          if (u >= 0xd800 && u <= 0xdfff) {
            if (this.fatal) throw new TypeError("The encoded data was not valid for encoding utf-16le");
            units[j] = 0xfffd;
          }
        }
        return fromUnits(units);
      }
      let s = "", i = 0;
      if (first && !this.ignoreBOM && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) i = 3;
      const bad = () => { if (this.fatal) throw new TypeError("The encoded data was not valid for encoding utf-8"); return 0xfffd; };
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

  // Atomics, which this build of the engine lacks (it has no threads): the
  // same operations on one thread. wait cannot block: it answers
  // "not-equal" or, the value being the expected one, "timed-out".
  if (typeof globalThis.Atomics === "undefined") {
    const at = (ta, i) => {
      if (!ArrayBuffer.isView(ta) || ta instanceof Float32Array || ta instanceof Float64Array || ta instanceof DataView) {
        throw new TypeError("Atomics: the array is not an integer typed array");
      }
      i = Number(i);
      if (!Number.isInteger(i) || i < 0 || i >= ta.length) throw new RangeError("Atomics: index out of range");
      return i;
    };
    const rmw = (f) => function (ta, i, v) { i = at(ta, i); const old = ta[i]; ta[i] = f(old, v); return old; };
    define("Atomics", Object.freeze({
      add: rmw((a, b) => a + b), sub: rmw((a, b) => a - b), and: rmw((a, b) => a & b),
      or: rmw((a, b) => a | b), xor: rmw((a, b) => a ^ b), exchange: rmw((a, b) => b),
      compareExchange(ta, i, expected, v) { i = at(ta, i); const old = ta[i]; if (old === ta.constructor.of(expected)[0]) ta[i] = v; return old; },
      load(ta, i) { return ta[at(ta, i)]; },
      store(ta, i, v) { ta[at(ta, i)] = v; return ta[i]; },
      isLockFree: (n) => n === 1 || n === 2 || n === 4 || n === 8,
      wait(ta, i, v) { return ta[at(ta, i)] !== v ? "not-equal" : "timed-out"; },
      waitAsync(ta, i, v) { return { async: false, value: ta[at(ta, i)] !== v ? "not-equal" : "timed-out" }; },
      notify(ta, i) { at(ta, i); return 0; },
      pause() {},
      [Symbol.toStringTag]: "Atomics",
    }));
  }

  // Web platform classes the engine lacks exist so that libraries which
  // extend or test against them at load time (class X extends
  // TransformStream, z.instanceof(URL)) still load; constructing one throws.
  for (const name of ["ReadableStream", "WritableStream", "TransformStream", "URL", "URLSearchParams",
    "Headers", "Request", "Response", "Blob", "File", "FormData"]) {
    define(name, { [name]: class {
      constructor() { throw new TypeError(name + " is not available in the wasmgate sandbox"); }
    } }[name]);
  }

  // ---- the host's Node function (init) ------------------------------------
  // init hands over the host function behind the Node built-ins
  // (wasmgate.node: hash, hmac, crypto.*, random, clock). Only the wrappers below
  // reach it; the clock operation is the timers' alone.
  let hostNode = null;
  function init(fn) { hostNode = fn; }
  function node(...args) {
    if (hostNode === null) throw new Error("wasmgate: the Node built-ins are not set up");
    return hostNode(...args);
  }

  // ---- timers on a virtual clock ------------------------------------------
  // The clock stands still while code runs. Whenever the job queue is empty
  // the host calls tick(), which fires what is due next: the pending
  // setImmediate callbacks, else the timer with the earliest deadline (ties
  // in the order they were set), after advancing the clock to that
  // deadline. So `await sleep(1000)` ends at once, with Date.now() 1000 ms
  // later, identically on every run. Timers only fire while something keeps
  // the loop alive, as in Node: an immediate, or a timer not unref()'d; a
  // tool's execution stops firing them once its result has settled.
  const TIMEOUT_MAX = 2147483647;
  let timerSeq = 0;
  const timers = []; // sorted by (at, seq)
  let refed = 0;
  let immediates = [];
  const timerError = (what, v) => {
    const e = new TypeError("The \"callback\" argument must be of type function. Received " + (v === null ? "null" : typeof v));
    e.code = "ERR_INVALID_ARG_TYPE";
    return e;
  };
  class Timeout {
    constructor(fn, ms, args, repeat) {
      ms = Number(ms);
      if (!(ms >= 1 && ms <= TIMEOUT_MAX)) ms = 1; // Node's rule: NaN, < 1 and > 2^31-1 are 1
      this._fn = fn; this._args = args; this._ms = ms; this._repeat = repeat;
      this._id = ++timerSeq; this._ref = true; this._live = false;
      this._schedule();
    }
    _schedule() {
      this._at = Date.now() + this._ms;
      this._seq = ++timerSeq;
      let lo = 0, hi = timers.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const t = timers[mid];
        if (t._at < this._at || (t._at === this._at && t._seq < this._seq)) lo = mid + 1; else hi = mid;
      }
      timers.splice(lo, 0, this);
      this._live = true;
      if (this._ref) refed++;
    }
    _cancel() {
      if (!this._live) return;
      const i = timers.indexOf(this);
      if (i >= 0) timers.splice(i, 1);
      this._live = false;
      if (this._ref) refed--;
    }
    ref() { if (!this._ref) { this._ref = true; if (this._live) refed++; } return this; }
    unref() { if (this._ref) { this._ref = false; if (this._live) refed--; } return this; }
    hasRef() { return this._ref; }
    refresh() { if (this._live) { this._cancel(); this._schedule(); } return this; }
    close() { this._cancel(); return this; }
    [Symbol.toPrimitive]() { return this._id; }
  }
  const byId = (t) => {
    if (t instanceof Timeout) return t;
    if (typeof t === "number" || typeof t === "string") return timers.find((x) => x._id === Number(t));
    return undefined;
  };
  function setTimeout(fn, ms, ...args) {
    if (typeof fn !== "function") throw timerError("callback", fn);
    return new Timeout(fn, ms, args, false);
  }
  function setInterval(fn, ms, ...args) {
    if (typeof fn !== "function") throw timerError("callback", fn);
    return new Timeout(fn, ms, args, true);
  }
  function clearTimeout(t) { const x = byId(t); if (x !== undefined) x._cancel(); }
  class Immediate {
    constructor(fn, args) { this._fn = fn; this._args = args; this._ref = true; this._live = true; }
    ref() { this._ref = true; return this; }
    unref() { this._ref = false; return this; }
    hasRef() { return this._ref; }
  }
  function setImmediate(fn, ...args) {
    if (typeof fn !== "function") throw timerError("callback", fn);
    const im = new Immediate(fn, args);
    immediates.push(im);
    return im;
  }
  function clearImmediate(im) { if (im instanceof Immediate) im._live = false; }
  define("setTimeout", setTimeout);
  define("setInterval", setInterval);
  define("clearTimeout", clearTimeout);
  define("clearInterval", clearTimeout);
  define("setImmediate", setImmediate);
  define("clearImmediate", clearImmediate);

  // uncaught receives what a timer callback throws: the tool's execution
  // fails with it (as an uncaught exception ends a Node process).
  let uncaught = (e) => { if (state.k === "pending") fail(e); };

  // tick is the event loop's step, which the host calls after each thing
  // it ran, saying whether promise jobs are pending. As in Node, the
  // process.nextTick queue runs first; then the host runs the promise jobs
  // (tick answers true without doing anything else while there are some);
  // only when both are empty does the loop go on, one callback a step,
  // with the ticks and then the jobs run after each (as in Node 11 and
  // later). An iteration has Node's phases: the timers due on the virtual
  // clock, the poll phase (the messages of MessagePorts, from the source
  // node:worker_threads sets), the check phase (the immediates set before
  // it began), the close phase (close events). When an iteration leaves
  // nothing to do, the clock moves to the next timer, which starts the next
  // one. It answers false when nothing is left that keeps the loop alive.
  let loopSource = null; // { poll(), close(), alive() }, see bridge.setLoopSource
  let stage = 0; // 0: timers, 1: poll, 2: check, 3: close
  let checking = []; // the check phase's immediates not yet run
  function callback(fn, args) {
    try { fn(...args); } catch (e) { uncaught(e); }
    runTicks();
  }
  function fire(t) {
    timers.splice(timers.indexOf(t), 1);
    if (t._ref) refed--;
    t._live = false;
    if (t._repeat) t._schedule();
    callback(t._fn, t._args);
  }
  function tick(jobsPending) {
    if (ticks.length > 0) { runTicks(); return true; }
    if (jobsPending) return true;
    if (unhandled !== null && unhandled.size > 0) {
      // As in Node, a rejection still unhandled once the jobs it could
      // have been handled in have run is an uncaught exception.
      const [reason] = unhandled.values();
      unhandled.clear();
      uncaughtRejection(reason);
      return true;
    }
    if (settledStops && state.k !== "pending") return false;
    if (stage === 0) {
      if (timers.length > 0 && timers[0]._at <= Date.now()) { fire(timers[0]); return true; }
      stage = 1;
    }
    if (stage === 1) {
      if (loopSource !== null && loopSource.poll()) { runTicks(); return true; }
      stage = 2;
      checking = immediates;
      immediates = [];
    }
    if (stage === 2) {
      while (checking.length > 0) {
        const im = checking.shift();
        if (!im._live) continue;
        im._live = false;
        callback(im._fn, im._args);
        return true;
      }
      stage = 3;
    }
    if (stage === 3) {
      if (loopSource !== null && loopSource.close()) { runTicks(); return true; }
      stage = 0;
    }
    // The iteration is over; another one when it has something to do.
    if (immediates.some((im) => im._live) || (loopSource !== null && loopSource.alive())) return true;
    if (refed === 0) return false;
    const t = timers[0];
    node("clock", String(t._at));
    fire(t);
    return true;
  }
  // A tool's execution ends when its result settles; a program's when
  // nothing is left to run.
  let settledStops = true;
  // unhandled holds the rejected promises no handler has taken yet (promise
  // → reason), for engines the host tracks rejections in (programs); null
  // elsewhere. uncaughtRejection reports one that stayed so.
  let unhandled = null;
  let uncaughtRejection = (reason) => uncaught(reason);
  function rejection(promise, reason, handled) {
    if (unhandled === null) return;
    if (handled) unhandled.delete(promise);
    else unhandled.set(promise, reason);
  }

  // ---- fetch exists and is refused, as Node's permission model refuses -----
  function accessDenied(what) {
    const e = new Error("Access to this API has been restricted: " + what + " (wasmgate runs code without network, file system or processes)");
    e.code = "ERR_ACCESS_DENIED";
    return e;
  }
  define("fetch", function fetch(input) {
    let url = "";
    try { url = typeof input === "string" ? input : String(input && input.url !== undefined ? input.url : input); } catch (_) { /* */ }
    return Promise.reject(accessDenied("fetch(" + JSON.stringify(url) + ")"));
  });
  // A fetch library (undici) reports each fetch's timing to Node's
  // performance.markResourceTiming, even one that failed; nothing is
  // fetched here, so there is no timing to keep.
  if (typeof globalThis.performance === "object" && typeof performance.markResourceTiming !== "function") {
    Object.defineProperty(performance, "markResourceTiming", {
      value: function markResourceTiming() {}, writable: true, configurable: true, enumerable: true,
    });
  }

  // ---- the bridge the Node built-ins stand on ------------------------------
  // process.env is the current call's env, frozen; crypto's hashes and
  // random bytes come from the host; process.nextTick runs before promise
  // reactions queued after it, as in Node.
  let callEnv = Object.freeze({});
  let argv = Object.freeze(["/usr/local/bin/node", "/tool.js"]);
  // exitCode is process.exitCode; exited, once process.exit was called,
  // keeps the execution's outcome from changing afterwards.
  let exitCode;
  let exited = false;
  // A tool's process.stdout and process.stderr write to its log, a line
  // per write; it has no stdin (its input is execute's params).
  const logWriter = (level) => {
    const w = writer(level);
    return {
      fd: level === "info" ? 1 : 2, isTTY: false, writable: true,
      write(chunk, encoding, cb) {
        if (typeof encoding === "function") cb = encoding;
        let text = typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
        if (text.endsWith("\n")) text = text.slice(0, -1);
        w(text);
        if (typeof cb === "function") bridge.nextTick(cb, []);
        return true;
      },
      end(chunk, encoding, cb) { if (chunk !== undefined && typeof chunk !== "function") this.write(chunk, encoding); },
      on() { return this; }, once() { return this; }, off() { return this; }, emit() { return false; },
      removeListener() { return this; }, cork() {}, uncork() {}, setDefaultEncoding() { return this; },
      getColorDepth: () => 1, hasColors: () => false,
    };
  };
  const noStdin = {
    fd: 0, isTTY: false, readable: false,
    on() { return this; }, once() { return this; }, off() { return this; }, removeListener() { return this; },
    setEncoding() { return this; }, resume() { return this; }, pause() { return this; },
    read() { throw accessDenied("process.stdin.read() (a tool's input is execute's params)"); },
    [Symbol.asyncIterator]() { throw accessDenied("process.stdin (a tool's input is execute's params)"); },
  };
  let stdio = null;
  const toolStdio = () => [noStdin, logWriter("info"), logWriter("error")];
  function toolExit(code) {
    if (!exited) {
      exited = true;
      fail(new Error("process.exit(" + (code === undefined ? "" : String(code)) + ") ended the tool before it returned a result"));
    }
    throw new Error("process.exit");
  }
  let exitImpl = toolExit;
  const ticks = [];
  function runTicks() {
    while (ticks.length > 0) {
      const [fn, args] = ticks.shift();
      try { fn(...args); } catch (e) { uncaught(e); }
    }
  }
  const toLatin1 = (u8) => {
    let s = "";
    for (let i = 0; i < u8.length; i += 8192) s += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
    return s;
  };
  const fromLatin1 = (s) => {
    const u8 = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u8[i] = s.charCodeAt(i);
    return u8;
  };
  const bridge = Object.freeze({
    env: () => callEnv,
    nextTick(fn, args) { ticks.push([fn, args]); },
    // hash, hmac and random take and give latin1 strings (a byte a character).
    hash: (alg, data) => node("hash", alg, data),
    hmac: (alg, key, data) => node("hmac", alg, key, data),
    // crypto runs one of the host's crypto operations (host/quickjs_crypto.go),
    // arguments and result strings, binary ones latin1.
    crypto: (op, ...args) => node("crypto." + op, ...args),
    intl: (op, ...args) => node("intl." + op, ...args),
    randomFill(u8) {
      for (let i = 0; i < u8.length; i += 65536) {
        const n = Math.min(65536, u8.length - i);
        const s = node("random", String(n));
        for (let j = 0; j < n; j++) u8[i + j] = s.charCodeAt(j);
      }
      return u8;
    },
    toLatin1, fromLatin1, accessDenied,
    argv: () => argv,
    exitCode: () => exitCode,
    setExitCode(v) {
      if (v !== undefined && v !== null && !Number.isInteger(typeof v === "string" && v.trim() !== "" ? Number(v) : v)) {
        const e = new TypeError("The \"code\" argument must be of type number. Received " + typeof v);
        e.code = "ERR_INVALID_ARG_TYPE";
        throw e;
      }
      exitCode = v === null ? undefined : v;
    },
    stdio(fd) { if (stdio === null) stdio = toolStdio(); return stdio[fd]; },
    stderr(text) { bridge.stdio(2).write(text); },
    exit(code) { return exitImpl(code === undefined ? exitCode : code); },
    // setLoopSource gives the event loop the messages of MessagePorts and
    // BroadcastChannels (see tick), once.
    setLoopSource(src) { if (loopSource === null) loopSource = src; },
    // program is null in a tool's engine; under wasmgate node it is
    // { stdin, write(fd, chunk), onExit(fn) } (see program below), from
    // which node:process makes its real streams.
    program: () => programIO,
  });
  Object.defineProperty(globalThis, Symbol.for("wasmgate.node"), {
    value: bridge, writable: false, configurable: false, enumerable: false,
  });

  // ---- the protocol -------------------------------------------------------
  let state = { k: "pending" };
  let tool = null, factory = null;

  function describe(e) {
    if (e instanceof Error) {
      let s = String(e.name) + ": " + String(e.message);
      if (typeof e.stack === "string") {
        // The tool's frames only: the prelude's are wasmgate's business,
        // and a stack shaped as V8's (a program's) repeats the message first.
        const frames = e.stack.split("\n").filter((l) => /^\s+at /.test(l) && !l.includes("wasmgate:prelude"));
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
    if (hasExecute(c)) {
      tool = c;
      // describeTool catches what the tool's code throws; this catches
      // the engine running out of memory in it.
      try { describeTool(c); } catch (_) { described = null; }
      return { k: "ok" };
    }
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

  // ---- what a tool says of itself ------------------------------------------
  // When load resolves a tool object, describeTool reads what it says of
  // itself, in the shape the ai package's tool() gives it: its title, its
  // description, its input schema (inputSchema; the ai package before v5
  // called it parameters) and its output schema (outputSchema), each schema
  // turned into JSON Schema here, in the sandbox, by the library that made
  // it (toSchema). A factory's tool exists only in an execution, so a
  // factory says nothing of itself. Nothing here fails the load: what
  // cannot be read or converted is left out, and a note says why. take()
  // hands the result over once, after loading.
  const MAX_SCHEMA = 262144; // bytes of a schema's JSON
  const MAX_TEXT = 65536; // characters of a title or description
  const MAX_DEPTH = 64; // nesting of a schema, in objects and arrays
  let described = null;

  function describeTool(t) {
    const info = { notes: [], waiting: new Set() };
    described = info;
    for (const key of ["title", "description"]) {
      try {
        const v = t[key];
        if (typeof v === "string" && v.length > MAX_TEXT) info.notes.push("the " + key + " is longer than " + MAX_TEXT + " characters");
        else if (typeof v === "string") info[key] = v;
      } catch (e) {
        info.notes.push("reading the tool's " + key + " threw " + brief(e));
      }
    }
    for (const [key, names] of [["input", ["inputSchema", "parameters"]], ["output", ["outputSchema"]]]) {
      let s, name;
      try {
        for (name of names) if ((s = t[name]) != null) break;
      } catch (e) {
        info.notes.push("reading the tool's " + name + " threw " + brief(e));
        continue;
      }
      if (s == null) continue;
      const what = "the " + key + " schema (" + name + ")";
      let r;
      try {
        r = toSchema(s, key);
        if (isThenable(r)) {
          info.waiting.add(what);
          Promise.resolve(r).then(
            (v) => { info.waiting.delete(what); keepSchema(info, key, what, v); },
            (e) => { info.waiting.delete(what); info.notes.push(what + ": its promise rejected with " + brief(e)); });
          continue;
        }
      } catch (e) {
        info.notes.push(what + (e instanceof NotSchema ? ": " + e.message : ": converting it to JSON Schema threw " + brief(e)));
        continue;
      }
      keepSchema(info, key, what, r);
    }
  }
  function isThenable(v) {
    return v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function";
  }

  // toSchema is schema s as JSON Schema (or a promise of it), for its input
  // or its output (io), converted by the first of these that applies:
  // the ai package's jsonSchema() (marked with the vercel.ai.schema symbol,
  // its JSON Schema in .jsonSchema, a promise in some versions); Standard
  // JSON Schema (~standard.jsonSchema, zod 4.2 and later, valibot and
  // arktype through their adapters); zod 4's toJSONSchema method; a zod 3
  // schema (zod3Schema); a plain object of JSON values, already a JSON
  // Schema.
  const AI_SCHEMA = Symbol.for("vercel.ai.schema");
  class NotSchema extends Error {}
  function toSchema(s, io) {
    if (typeof s === "boolean") return s;
    if (typeof s !== "object" && typeof s !== "function") throw new NotSchema("it is " + kind(s) + ", not a schema");
    if (s[AI_SCHEMA] === true) {
      const j = s.jsonSchema;
      return typeof j === "function" ? j() : j;
    }
    const std = s["~standard"];
    if (std != null && typeof std === "object" && std.jsonSchema != null && typeof std.jsonSchema[io] === "function") {
      const options = { target: "draft-2020-12" };
      // zod refuses what JSON Schema cannot say (dates, bigints) unless
      // told to let it be anything.
      if (std.vendor === "zod") options.libraryOptions = { unrepresentable: "any" };
      return std.jsonSchema[io](options);
    }
    if (typeof s.toJSONSchema === "function") return s.toJSONSchema({ target: "draft-2020-12", io, unrepresentable: "any" });
    if (s._def != null && typeof s._def === "object" && typeof s._def.typeName === "string") return zod3Schema(s, io);
    const why = notJSON(s, true);
    if (why !== "") {
      throw new NotSchema("it is not a JSON Schema (" + why + "), nor a schema wasmgate converts (zod 3 or 4, " +
        "Standard JSON Schema, the ai package's jsonSchema())");
    }
    return s;
  }

  // keepSchema keeps what a conversion gave as the info's JSON text, when it
  // is a JSON Schema (an object or a boolean) of at most MAX_SCHEMA bytes.
  // Values JSON has no form for (functions, undefined, NaN) are left out.
  function keepSchema(info, key, what, v) {
    if (typeof v !== "boolean" && (v === null || typeof v !== "object" || Array.isArray(v))) {
      info.notes.push(what + ": it converted to " + kind(v) + ", not a JSON Schema");
      return;
    }
    let json;
    try {
      const why = notJSON(v, false);
      if (why !== "") { info.notes.push(what + ": " + why); return; }
      json = JSON.stringify(v, (k, x) => typeof x === "function" || typeof x === "symbol" || typeof x === "bigint" ||
        (typeof x === "number" && !Number.isFinite(x)) ? undefined : x);
    } catch (e) { // a getter, a proxy, a toJSON that throws
      info.notes.push(what + ": its JSON Schema is not JSON: " + brief(e));
      return;
    }
    let n = json.length;
    for (let i = 0; i < json.length && n <= MAX_SCHEMA; i++) {
      const c = json.charCodeAt(i);
      if (c >= 0x80) n += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2; // UTF-8 bytes
    }
    if (n > MAX_SCHEMA) { info.notes.push(what + ": its JSON Schema is over " + MAX_SCHEMA + " bytes"); return; }
    info[key] = json;
  }

  // notJSON says why v cannot be a JSON Schema as it is ("" when it can):
  // it nests deeper than MAX_DEPTH (a cycle does), or, when strict, holds
  // something other than plain objects, arrays, strings, finite numbers,
  // booleans and null. It walks without recursion, so that no schema can
  // exhaust the engine's stack.
  function notJSON(v, strict) {
    const stack = [[v, 0]];
    let seen = 0;
    while (stack.length > 0) {
      const [x, depth] = stack.pop();
      if (++seen > 1000000) return "it has more than a million values";
      if (x === null || typeof x !== "object") {
        const t = typeof x;
        if (strict && t !== "string" && t !== "boolean" && !(x === null || (t === "number" && Number.isFinite(x)))) {
          return "it holds " + kind(x);
        }
        continue;
      }
      if (depth >= MAX_DEPTH) return "it nests deeper than " + MAX_DEPTH + " levels (or refers to itself)";
      if (strict && !Array.isArray(x)) {
        const proto = Object.getPrototypeOf(x);
        if (proto !== Object.prototype && proto !== null) return "it holds an object that is not a plain object";
      }
      for (const k of Object.keys(x)) stack.push([x[k], depth + 1]);
    }
    return "";
  }

  // zod3Schema converts a zod 3 schema (one with _def.typeName) as the ai
  // package's zod 3 converter does, for the common types; a type JSON
  // Schema cannot describe, or this does not know, accepts anything ({}).
  // A recursive schema (z.lazy) accepts anything where it recurs.
  function zod3Schema(root, io) {
    let parts = 0;
    const path = new Set();
    const conv = (s) => {
      const def = s != null && typeof s === "object" ? s._def : undefined;
      if (def == null || typeof def !== "object" || path.has(s) || path.size >= MAX_DEPTH) return {};
      if (++parts > 10000) throw new RangeError("the zod 3 schema has more than 10000 parts");
      path.add(s);
      try {
        const out = zod3Type(def, io, conv);
        const d = def.description;
        if (typeof d === "string" && out.description === undefined) out.description = d;
        return out;
      } finally {
        path.delete(s);
      }
    };
    return conv(root);
  }
  function zod3Type(def, io, conv) {
    switch (def.typeName) {
      case "ZodString": return zod3String(def.checks);
      case "ZodNumber": return zod3Number(def.checks);
      case "ZodBoolean": return { type: "boolean" };
      case "ZodNull": return { type: "null" };
      case "ZodNever": return { not: {} };
      case "ZodArray": {
        const o = { type: "array", items: conv(def.type) };
        if (def.exactLength != null) o.minItems = o.maxItems = def.exactLength.value;
        if (def.minLength != null) o.minItems = def.minLength.value;
        if (def.maxLength != null) o.maxItems = def.maxLength.value;
        return o;
      }
      case "ZodTuple": {
        const items = Array.from(def.items || [], conv);
        const o = { type: "array", prefixItems: items, minItems: items.length };
        if (def.rest != null) o.items = conv(def.rest);
        else o.maxItems = items.length;
        return o;
      }
      case "ZodObject": {
        const shape = typeof def.shape === "function" ? def.shape() : def.shape;
        const o = { type: "object", properties: {} };
        const required = [];
        for (const k of Object.keys(shape || {})) {
          o.properties[k] = conv(shape[k]);
          if (!zod3Optional(shape[k], io)) required.push(k);
        }
        if (required.length > 0) o.required = required;
        const rest = def.catchall;
        if (rest != null && rest._def != null && rest._def.typeName !== "ZodNever") o.additionalProperties = conv(rest);
        // zod strips unknown keys by default: they are accepted in the
        // input and absent from the output.
        else if (def.unknownKeys === "strict" || (io === "output" && def.unknownKeys !== "passthrough")) o.additionalProperties = false;
        return o;
      }
      case "ZodRecord": return { type: "object", additionalProperties: conv(def.valueType) };
      case "ZodEnum": return { type: "string", enum: Array.from(def.values) };
      case "ZodNativeEnum": {
        // A TypeScript numeric enum maps its names to numbers and back.
        const e = def.values;
        const values = Object.keys(e).filter((k) => typeof e[e[k]] !== "number").map((k) => e[k]);
        const types = [...new Set(values.map((v) => typeof v))];
        return { type: types.length === 1 ? types[0] : types, enum: values };
      }
      case "ZodLiteral": {
        const v = def.value, t = typeof v;
        if (v === null) return { type: "null" };
        if (t === "string" || t === "boolean" || (t === "number" && Number.isFinite(v))) return { type: t, const: v };
        return {};
      }
      case "ZodUnion":
      case "ZodDiscriminatedUnion":
        return { anyOf: Array.from(def.options instanceof Map ? def.options.values() : def.options, conv) };
      case "ZodIntersection": return { allOf: [conv(def.left), conv(def.right)] };
      case "ZodNullable": return { anyOf: [conv(def.innerType), { type: "null" }] };
      case "ZodOptional":
      case "ZodReadonly":
      case "ZodCatch":
        return conv(def.innerType);
      case "ZodDefault": {
        const o = conv(def.innerType);
        try {
          const v = typeof def.defaultValue === "function" ? def.defaultValue() : def.defaultValue;
          if (v !== undefined && notJSON(v, true) === "") o.default = v;
        } catch (_) { /* a default that throws is not shown */ }
        return o;
      }
      case "ZodEffects":
        // A transform's output is whatever it returns.
        return io === "output" && def.effect != null && def.effect.type === "transform" ? {} : conv(def.schema);
      case "ZodBranded": return conv(def.type);
      case "ZodPipeline": return conv(io === "output" ? def.out : def.in);
      case "ZodLazy": return conv(def.getter());
    }
    return {}; // ZodAny, ZodUnknown, and dates, bigints, maps, sets, functions…
  }
  const STRING_FORMATS = { email: "email", url: "uri", uuid: "uuid", datetime: "date-time", date: "date", time: "time", duration: "duration" };
  function zod3String(checks) {
    const o = { type: "string" };
    for (const c of checks || []) {
      switch (c.kind) {
        case "min": o.minLength = c.value; break;
        case "max": o.maxLength = c.value; break;
        case "length": o.minLength = o.maxLength = c.value; break;
        case "regex":
          if (!(c.regex instanceof RegExp)) break;
          if (o.pattern === undefined) o.pattern = c.regex.source;
          else (o.allOf || (o.allOf = [])).push({ pattern: c.regex.source });
          break;
        default:
          if (STRING_FORMATS[c.kind] !== undefined) o.format = STRING_FORMATS[c.kind];
      }
    }
    return o;
  }
  function zod3Number(checks) {
    const o = { type: "number" };
    for (const c of checks || []) {
      switch (c.kind) {
        case "int": o.type = "integer"; break;
        case "min": if (c.inclusive === false) o.exclusiveMinimum = c.value; else o.minimum = c.value; break;
        case "max": if (c.inclusive === false) o.exclusiveMaximum = c.value; else o.maximum = c.value; break;
        case "multipleOf": o.multipleOf = c.value; break;
      }
    }
    return o;
  }
  // zod3Optional says whether an object may lack the key of schema s: in
  // its input when s accepts undefined, in its output when s can give it.
  function zod3Optional(s, io) {
    for (let i = 0; i < MAX_DEPTH && s != null && s._def != null; i++) {
      const def = s._def;
      switch (def.typeName) {
        case "ZodOptional": case "ZodAny": case "ZodUnknown": case "ZodUndefined": case "ZodVoid":
          return true;
        case "ZodDefault": case "ZodCatch":
          return io === "input";
        case "ZodNullable": case "ZodReadonly": s = def.innerType; continue;
        case "ZodEffects": s = def.schema; continue;
        case "ZodBranded": s = def.type; continue;
        case "ZodPipeline": s = io === "output" ? def.out : def.in; continue;
        case "ZodUnion": {
          const opts = Array.isArray(def.options) ? def.options : [];
          return opts.some((o) => o !== s && zod3Optional(o, io));
        }
      }
      return false;
    }
    return false;
  }

  // take hands over what describeTool found, once.
  function handOver() {
    const i = described;
    described = null;
    if (i === null) return undefined;
    for (const what of i.waiting) i.notes.push(what + ": its promise did not settle while the tool loaded");
    return { title: i.title, description: i.description, input: i.input, output: i.output,
      notes: i.notes.length > 0 ? i.notes : undefined };
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
    if (exited) return;
    if (v === undefined) { state = { k: "none" }; return; }
    const r = toJSON(v, "the result");
    state = r.bad === undefined ? { k: "ok", output: r.json } : { k: "notjson", message: r.bad };
  }
  // fail records an exception: its description (name, message and the
  // tool's stack frames) and, for an Error, what the tool protocol's error
  // events carry: its name and message apart, its code when that is a
  // string, and its recoverable flag when that is a boolean.
  function fail(e) {
    if (exited && state.k !== "pending") return;
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
      const env = JSON.parse(arg.slice(i + 1, j));
      callEnv = Object.freeze(Object.assign({}, env));
      r = invoke(JSON.parse(arg.slice(j + 1)), env);
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
      name: state.name, text: state.text, code: state.code, recoverable: state.recoverable, info: handOver() });
  }

  // ---- scripts -------------------------------------------------------------
  // A script runs once, in a fresh engine, and reaches the host through two
  // host functions: call(action, paramsJSON) → the call's result envelope
  // (JSON), and write(stream, text) for its console, written as it happens.

  // script binds the host functions before the script is evaluated: the
  // console writes through write, and the toolscript module (generated at
  // bundle time) finds callTool under a registered symbol.
  function script(call, write, seedHex, contextJSON) {
    seed(seedHex);
    // The toolscript text's execution context, as Deno gives it: the
    // variables the host chose (TOOLSCRIPT_GATEWAY_URL) and the directory
    // the script was run from. Read-only; nothing else of the host's.
    const context = JSON.parse(contextJSON);
    const vars = Object.freeze(Object.assign(Object.create(null), context.env || {}));
    const env = Object.freeze({
      get: (name) => (Object.prototype.hasOwnProperty.call(vars, String(name)) ? vars[String(name)] : undefined),
      has: (name) => Object.prototype.hasOwnProperty.call(vars, String(name)),
      toObject: () => Object.assign({}, vars),
    });
    // Node's process.env, for a script that reads it the Node way, holds
    // the same variables.
    callEnv = Object.freeze(Object.assign({}, context.env || {}));
    const cwd = String(context.cwd || "/");
    Object.defineProperty(globalThis, "Deno", {
      value: Object.freeze({ env, cwd: () => cwd }), writable: false, configurable: false, enumerable: false,
    });
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
    // A rejection no handler takes fails the script as an uncaught
    // exception would, even once its result has settled: the host tracks
    // rejections through the function returned here.
    unhandled = new Map();
    uncaughtRejection = (reason) => fail(reason instanceof Error ? reason :
      new Error("unhandled promise rejection: the promise rejected with " + show(reason)));
    return rejection;
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

  // ---- programs --------------------------------------------------------------
  // A program (wasmgate node) runs once, in a fresh engine, as node runs a
  // file: what it writes to process.stdout and process.stderr (and the
  // console) reaches the host as it is written, through the host function
  // write(fd, kind, data) (kind "s": data is the text; "b": data is bytes, a
  // byte a character); process.stdin holds the bytes the host read before
  // the start; and the run ends when nothing is left to run (no job, no
  // immediate, no ref'd timer) or at process.exit. exit(code) is a host
  // function that stops the engine: nothing of the program runs after it,
  // whatever it catches.
  let programIO = null;
  function program(write, hostExit, argvJSON, stdinBytes, seedHex) {
    seed(seedHex);
    settledStops = false;
    argv = Object.freeze(JSON.parse(argvJSON));
    const put = (fd, chunk) => {
      if (typeof chunk === "string") { write(fd, "s", chunk); return; }
      const u8 = chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      write(fd, "b", toLatin1(u8));
    };
    let exitHook = null, exiting = false;
    programIO = Object.freeze({
      stdin: stdinBytes,
      write: put,
      onExit(fn) { exitHook = fn; },
    });
    const writeTo = (fd) => function (...args) { put(fd, args.map(show).join(" ") + "\n"); };
    console.log = console.info = console.debug = writeTo("1");
    console.warn = console.error = console.trace = writeTo("2");
    const rawWriter = (fd) => ({ write(text) { put(fd, text); return true; } });
    stdio = [noStdin, rawWriter("1"), rawWriter("2")];
    // As Node's process.exit: the code becomes process.exitCode, the
    // "exit" listeners run once (and may change it), then the process ends.
    exitImpl = (code) => {
      if (code !== undefined) bridge.setExitCode(code);
      if (!exiting) {
        exiting = true;
        if (exitHook !== null) {
          try { exitHook(exitCode === undefined ? 0 : Number(exitCode)); } catch (e) { uncaught(e); }
        }
      }
      hostExit(String(exitCode === undefined ? 0 : Number(exitCode) & 255));
      throw new Error("process.exit"); // not reached: the host stopped the engine
    };
    // An uncaught exception prints as Node prints it (the stack, which
    // starts with "Name: message") and ends the program with status 1.
    let failing = false;
    uncaught = (e) => {
      if (failing) { hostExit("7"); return; } // Node's status when handling an exception fails
      failing = true;
      put("2", "\n" + (e instanceof Error ? describe(e) : show(e)) + "\n");
      exitCode = 1;
      if (!exiting && exitHook !== null) {
        exiting = true;
        try { exitHook(1); } catch (_) { /* the status stays 1 */ }
      }
      hostExit("1");
    };
    // A rejection no handler takes is uncaught, as in Node since 15: an
    // Error prints as an uncaught exception does; any other reason as
    // Node's ERR_UNHANDLED_REJECTION.
    unhandled = new Map();
    uncaughtRejection = (reason) => uncaught(reason instanceof Error ? reason :
      "UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch " +
      "block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"" +
      show(reason) + "\".\n{\n  code: 'ERR_UNHANDLED_REJECTION'\n}");
    // start settles the module: what it throws, or its top-level await
    // rejects with, is uncaught. finish ends a program that ran out of work.
    // A module whose top-level await never settled ends as node 20 ends
    // it: status 13, unless the program set process.exitCode.
    let settled = false;
    function start(namespace) { namespace.then(() => { settled = true; }, (e) => { settled = true; uncaught(e); }); }
    function finish() { exitImpl(!settled && exitCode === undefined ? 13 : undefined); }
    return [start, finish, rejection];
  }

  return [load, run, take, script, main, attach, tick, init, program];
})();
