"use strict";
// node:process and the process global: Node's process object for code that
// computes. env is the current call's env, frozen (read it when called: the
// snapshot is taken before any call); the clocks are the virtual ones;
// stdout and stderr write to the tool's log (or, under wasmgate node, to the
// real streams); exit ends the execution.
const bridge = globalThis[Symbol.for("wasmgate.node")];
const EventEmitter = require("node:events");
const { invalidArgType } = require("wasmgate:internal/errors");

const process = new EventEmitter();
const versions = Object.freeze({
  node: "20.0.0", v8: "0.0.0-wasmgate", uv: "0.0.0", zlib: "1.2.11", modules: "115",
  quickjs: "quickjs-ng", wasmgate: "1",
});

// hrtime reads the virtual monotonic clock, which only timers move.
function nowNs() {
  return BigInt(Math.round(performance.now() * 1e6)) + 946684800000000000n;
}
function hrtime(prev) {
  const t = nowNs();
  let s = t / 1000000000n, ns = t % 1000000000n;
  if (prev !== undefined) {
    if (!Array.isArray(prev) || prev.length !== 2) throw invalidArgType("time", "an Array of length 2", prev);
    s -= BigInt(prev[0]);
    ns -= BigInt(prev[1]);
    if (ns < 0n) { s -= 1n; ns += 1000000000n; }
  }
  return [Number(s), Number(ns)];
}
hrtime.bigint = nowNs;

function emitWarning(warning, type, code) {
  if (typeof type === "object" && type !== null) { code = type.code; type = type.type; }
  const name = warning instanceof Error ? warning.name : (type || "Warning");
  const msg = warning instanceof Error ? warning.message : String(warning);
  if (process.noDeprecation && name === "DeprecationWarning") return;
  const w = warning instanceof Error ? warning : Object.assign(new Error(msg), { name });
  if (code !== undefined) w.code = code;
  process.emit("warning", w);
  bridge.stderr("(node:" + process.pid + ") " + (code ? "[" + code + "] " : "") + name + ": " + msg + "\n");
}

function denied(what) {
  return function () { throw bridge.accessDenied("process." + what + "()"); };
}

// Under wasmgate node (bridge.program() is set) the streams are real:
// stdout and stderr write through to the host as they are written, stdin
// reads the bytes the host read before the start. In a tool they are the
// bridge's (its log, and no stdin).
const io = bridge.program();
const CHUNK = 65536; // what Node reads from a pipe at a time
// Through globalThis: naming Buffer would bring node:buffer into every
// bundle that names process (a program's bundle always has it).
const buffer = () => globalThis.Buffer;
const immediate = globalThis.setImmediate;
// The stdin's bytes and cursor, shared with fs.
const stdin = require("wasmgate:internal/stdin");

function toChunk(bytes, enc) {
  // bytes: a latin1 string (a character per byte).
  if (enc === null) return typeof buffer() === "function" ? buffer().from(bytes, "latin1") : bridge.fromLatin1(bytes);
  if (enc === "latin1" || enc === "binary") return bytes;
  if (enc === "utf8" || enc === "utf-8") return new TextDecoder().decode(bridge.fromLatin1(bytes));
  return buffer().from(bytes, "latin1").toString(enc);
}

class WriteStream extends EventEmitter {
  constructor(fd) {
    super();
    this.fd = fd;
    this.isTTY = false;
    this.writable = true;
    this.writableEnded = false;
    this.writableFinished = false;
    this.writableLength = 0;
    this.writableHighWaterMark = 16384;
    this.writableNeedDrain = false;
    this.writableObjectMode = false;
    this.writableCorked = 0;
    this.destroyed = false;
    this._encoding = "utf8";
  }
  write(chunk, encoding, cb) {
    if (typeof encoding === "function") { cb = encoding; encoding = undefined; }
    if (typeof chunk === "string") {
      const enc = encoding || this._encoding;
      if (enc !== "utf8" && enc !== "utf-8" && typeof buffer() === "function") chunk = buffer().from(chunk, enc);
    } else if (!(chunk instanceof Uint8Array)) {
      throw invalidArgType("chunk", "of type string or an instance of Buffer or Uint8Array", chunk);
    }
    if (this.writableEnded) {
      const e = new Error("write after end");
      e.code = "ERR_STREAM_WRITE_AFTER_END";
      bridge.nextTick((err) => { if (typeof cb === "function") cb(err); this.emit("error", err); }, [e]);
      return false;
    }
    io.write(String(this.fd), chunk);
    if (typeof cb === "function") bridge.nextTick(cb, [null]);
    return true;
  }
  end(chunk, encoding, cb) {
    if (typeof chunk === "function") { cb = chunk; chunk = undefined; }
    else if (typeof encoding === "function") { cb = encoding; encoding = undefined; }
    if (chunk !== undefined && chunk !== null) this.write(chunk, encoding);
    if (!this.writableEnded) {
      this.writableEnded = true;
      bridge.nextTick(() => { this.writableFinished = true; this.emit("finish"); }, []);
    }
    if (typeof cb === "function") bridge.nextTick(cb, []);
    return this;
  }
  cork() { this.writableCorked++; }
  uncork() { if (this.writableCorked > 0) this.writableCorked--; }
  setDefaultEncoding(enc) { this._encoding = enc; return this; }
  destroy() { this.destroyed = true; return this; }
  getColorDepth() { return 1; }
  hasColors() { return false; }
  getWindowSize() { return [80, 24]; }
}

// ReadStream is process.stdin under wasmgate node: the stdin the host read,
// handed out as a pipe hands it to node, a chunk of at most CHUNK bytes
// per turn of the event loop, the end in a turn of its own.
class ReadStream extends EventEmitter {
  constructor() {
    super();
    this.fd = 0;
    this.isTTY = false;
    this.readable = true;
    this.readableEnded = false;
    this.destroyed = false;
    this._enc = null;
    this._flowing = null;
    this._scheduled = false;
    this._ending = false;
  }
  get readableFlowing() { return this._flowing; }
  get readableEncoding() { return this._enc; }
  get readableLength() { return stdin.left(); }
  setEncoding(enc) {
    enc = String(enc).toLowerCase();
    this._enc = enc === "utf-8" ? "utf8" : enc;
    return this;
  }
  // _next takes the next chunk (at most CHUNK bytes, never half a UTF-8
  // character when decoding it), null at the end.
  _next(max) {
    const src = stdin;
    const left = src.left();
    if (left === 0) return null;
    let n = Math.min(left, max === undefined ? CHUNK : max);
    if (this._enc === "utf8") {
      while (n < left && n > 0 && (src.byteAt(n) & 0xc0) === 0x80) n--;
      if (n === 0) n = Math.min(left, max === undefined ? CHUNK : max);
    }
    return toChunk(src.take(n), this._enc);
  }
  _end() {
    if (this._ending) return;
    this._ending = true;
    bridge.nextTick(() => {
      this.readableEnded = true;
      this.readable = false;
      this.emit("end");
      this.emit("close");
    }, []);
  }
  _schedule() {
    if (this._scheduled) return;
    this._scheduled = true;
    immediate(() => {
      this._scheduled = false;
      this._flow();
    });
  }
  _flow() {
    if (this.listenerCount("readable") > 0 && this._flowing !== true) {
      this.emit("readable");
      if (stdin.left() > 0) this._schedule();
      else this._end();
      return;
    }
    if (this._flowing !== true) return;
    const c = this._next();
    if (c === null) { this._end(); return; }
    this.emit("data", c);
    // The next chunk, or the end, comes in a later turn, after the
    // promise jobs this one started.
    this._schedule();
  }
  on(event, fn) {
    super.on(event, fn);
    if (event === "data" && this._flowing !== false) this.resume();
    else if (event === "readable") { this._flowing = false; this._schedule(); }
    return this;
  }
  addListener(event, fn) { return this.on(event, fn); }
  once(event, fn) {
    const w = (...args) => { this.removeListener(event, w); fn.apply(this, args); };
    w.listener = fn;
    return this.on(event, w);
  }
  resume() { this._flowing = true; this._schedule(); return this; }
  pause() { this._flowing = false; return this; }
  isPaused() { return this._flowing === false; }
  read(n) {
    if (stdin.left() === 0) { this._end(); return null; }
    if (n === undefined) n = stdin.left();
    return this._next(n);
  }
  pipe(dest, opts) {
    this.on("data", (c) => dest.write(c));
    if (!(opts && opts.end === false) && dest !== process.stdout && dest !== process.stderr) this.on("end", () => dest.end());
    if (typeof dest.emit === "function") dest.emit("pipe", this);
    return dest;
  }
  unpipe() { return this; }
  unshift(chunk) {
    stdin.unshift(typeof chunk === "string" ? bridge.toLatin1(new TextEncoder().encode(chunk)) : bridge.toLatin1(chunk));
  }
  destroy() { this.destroyed = true; this._flowing = false; return this; }
  setRawMode() { return this; }
  ref() { return this; }
  unref() { return this; }
  async *[Symbol.asyncIterator]() {
    this._flowing = true;
    for (;;) {
      const c = this._next();
      if (c === null) break;
      yield c;
    }
    this._end();
  }
}

let streams = null;
function programStream(fd) {
  if (streams === null) streams = [new ReadStream(), new WriteStream(1), new WriteStream(2)];
  return streams[fd];
}
const stdio = io === null ? (fd) => bridge.stdio(fd) : programStream;

Object.defineProperties(process, {
  env: { get: () => bridge.env(), set() {}, enumerable: true, configurable: true },
  exitCode: {
    get: () => bridge.exitCode(),
    set(v) { bridge.setExitCode(v); },
    enumerable: true, configurable: true,
  },
  stdout: { get: () => stdio(1), enumerable: true, configurable: true },
  stderr: { get: () => stdio(2), enumerable: true, configurable: true },
  stdin: { get: () => stdio(0), enumerable: true, configurable: true },
});
Object.assign(process, {
  // An ordinary array, as node's: CLIs splice or shift their arguments off
  // it (argv.splice(2)). A program's is read once, when this module runs,
  // after the host gave it; a tool's is fixed, and each of its calls starts
  // from the snapshot, so nothing a call does to it reaches the next.
  argv: Array.from(bridge.argv()),
  title: "node",
  version: "v" + versions.node,
  versions,
  release: Object.freeze({ name: "node" }),
  platform: "linux",
  arch: "x64",
  pid: 1,
  ppid: 0,
  execPath: "/usr/local/bin/node",
  execArgv: [],
  argv0: "node",
  debugPort: 9229,
  features: Object.freeze({ inspector: false, ipv6: false, tls: false, cached_builtins: true }),
  config: Object.freeze({ variables: {} }),
  allowedNodeEnvironmentFlags: new Set(),
  noDeprecation: false,
  throwDeprecation: false,
  traceDeprecation: false,
  cwd: () => "/",
  chdir: denied("chdir"),
  umask: () => 0o22,
  getuid: () => 1000, geteuid: () => 1000, getgid: () => 1000, getegid: () => 1000, getgroups: () => [1000],
  setuid: denied("setuid"), setgid: denied("setgid"), setgroups: denied("setgroups"),
  kill: denied("kill"),
  dlopen: denied("dlopen"),
  binding(name) { throw new Error("No such module: " + name); },
  hrtime,
  uptime: () => performance.now() / 1000,
  memoryUsage: Object.assign(() => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }), { rss: () => 0 }),
  resourceUsage: () => ({}),
  cpuUsage: () => ({ user: 0, system: 0 }),
  nextTick(fn, ...args) {
    if (typeof fn !== "function") throw invalidArgType("callback", "of type function", fn);
    bridge.nextTick(fn, args);
  },
  emitWarning,
  exit(code) { bridge.exit(code); },
  reallyExit(code) { bridge.exit(code); },
  abort() { bridge.exit(134); },
  getActiveResourcesInfo: () => [],
  setUncaughtExceptionCaptureCallback() {},
  hasUncaughtExceptionCaptureCallback: () => false,
  setSourceMapsEnabled() {},
});
if (io !== null) io.onExit((code) => process.emit("exit", code));
module.exports = process;
