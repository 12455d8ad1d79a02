"use strict";
// node:module: what is bundled is all there is. A require() made by
// createRequire finds what its module named by a literal (bundled with
// it), the built-ins the bundle holds and a program's embedded JSON files
// (see internal/program_tree); anything else it cannot load at run time.
const { unavailable, invalidArgType } = require("wasmgate:internal/errors");
const tree = require("wasmgate:internal/program_tree");
const builtinModules = ["assert", "assert/strict", "async_hooks", "buffer", "child_process", "cluster", "console",
  "constants", "crypto", "dgram", "diagnostics_channel", "dns", "dns/promises", "domain", "events", "fs",
  "fs/promises", "http", "http2", "https", "inspector", "module", "net", "os", "path", "path/posix", "path/win32",
  "perf_hooks", "process", "punycode", "querystring", "readline", "readline/promises", "repl", "stream",
  "stream/consumers", "stream/promises", "stream/web", "string_decoder", "sys", "timers", "timers/promises", "tls",
  "trace_events", "tty", "url", "util", "util/types", "v8", "vm", "wasi", "worker_threads", "zlib"];

function invalidValue(name, value, reason) {
  let shown;
  if (typeof value === "string") shown = "'" + value + "'";
  else if (value === null || value === undefined || typeof value !== "object") shown = String(value);
  else shown = require("wasmgate:lazy/inspect")().inspect(value);
  const e = new TypeError("The argument '" + name + "' " + reason + ". Received " + shown);
  e.code = "ERR_INVALID_ARG_VALUE";
  return e;
}

// createRequire is node's: filename is a file URL (object or string) or
// an absolute path, whose directory the require resolves from (the path
// itself when it ends with "/").
function createRequire(filename) {
  const reason = "must be a file URL object, file URL string, or absolute path string";
  let file;
  if (typeof filename === "string" && filename.startsWith("/")) {
    file = filename;
  } else if (typeof filename === "string" || (filename !== null && typeof filename === "object" && typeof filename.href === "string")) {
    try {
      file = tree.fileURLPath(filename);
    } catch (_) {
      throw invalidValue("filename", filename, reason);
    }
  } else {
    throw invalidValue("filename", filename, reason);
  }
  const dir = file.endsWith("/") ? (file.slice(0, -1) || "/") : tree.dirname(file);
  const req = function require(id) {
    if (typeof id !== "string") throw invalidArgType("id", "of type string", id);
    if (id === "") throw invalidValue("id", id, "must be a non-empty string");
    let load;
    try {
      load = tree.locate(dir, id, file);
    } catch (e) {
      Error.captureStackTrace(e, req);
      throw e;
    }
    return load();
  };
  req.resolve = function resolve(request) {
    if (typeof request !== "string") throw invalidArgType("request", "of type string", request);
    try {
      return tree.resolveFrom(dir, request, file);
    } catch (e) {
      Error.captureStackTrace(e, resolve);
      throw e;
    }
  };
  req.resolve.paths = (request) => (builtinModules.includes(String(request).replace(/^node:/, "")) ? null : []);
  Object.defineProperty(req, "main", {
    get: () => (typeof globalThis.require === "function" ? globalThis.require.main : undefined),
    enumerable: true, configurable: true,
  });
  req.extensions = Object.create(null);
  req.cache = Object.create(null);
  return req;
}
function Module() { throw unavailable("new module.Module()"); }
module.exports = {
  builtinModules, createRequire, Module,
  isBuiltin: (name) => builtinModules.includes(String(name).replace(/^node:/, "")),
  register() { throw unavailable("module.register()"); },
  syncBuiltinESMExports() {},
};
