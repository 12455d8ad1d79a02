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

Object.defineProperties(process, {
  env: { get: () => bridge.env(), set() {}, enumerable: true, configurable: true },
  argv: { get: () => bridge.argv(), set() {}, enumerable: true, configurable: true },
  exitCode: {
    get: () => bridge.exitCode(),
    set(v) { bridge.setExitCode(v); },
    enumerable: true, configurable: true,
  },
  stdout: { get: () => bridge.stdio(1), enumerable: true, configurable: true },
  stderr: { get: () => bridge.stdio(2), enumerable: true, configurable: true },
  stdin: { get: () => bridge.stdio(0), enumerable: true, configurable: true },
});
Object.assign(process, {
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
module.exports = process;
