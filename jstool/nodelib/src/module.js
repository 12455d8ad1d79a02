"use strict";
// node:module: what is bundled is all there is; require() at run time
// finds nothing (as a bundle's own require does).
const { unavailable } = require("wasmgate:internal/errors");
const builtinModules = ["assert", "assert/strict", "async_hooks", "buffer", "child_process", "cluster", "console",
  "constants", "crypto", "dgram", "diagnostics_channel", "dns", "dns/promises", "domain", "events", "fs",
  "fs/promises", "http", "http2", "https", "inspector", "module", "net", "os", "path", "path/posix", "path/win32",
  "perf_hooks", "process", "punycode", "querystring", "readline", "readline/promises", "repl", "stream",
  "stream/consumers", "stream/promises", "stream/web", "string_decoder", "sys", "timers", "timers/promises", "tls",
  "trace_events", "tty", "url", "util", "util/types", "v8", "vm", "wasi", "worker_threads", "zlib"];
function createRequire() {
  const require = (id) => {
    const e = new Error("Dynamic require of \"" + id + "\" is not supported");
    e.code = "MODULE_NOT_FOUND";
    throw e;
  };
  require.resolve = (id) => { throw unavailable("require.resolve(" + JSON.stringify(id) + ")"); };
  require.cache = Object.create(null);
  return require;
}
function Module() { throw unavailable("new module.Module()"); }
module.exports = {
  builtinModules, createRequire, Module,
  isBuiltin: (name) => builtinModules.includes(String(name).replace(/^node:/, "")),
  register() { throw unavailable("module.register()"); },
  syncBuiltinESMExports() {},
};
