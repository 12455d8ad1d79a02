"use strict";
// wasmgate:internal/program_tree: what a program (wasmgate node) finds of
// its tree when it runs, all of it decided when it was bundled and carried
// in the bundle (jstool/programfiles.go): the files embedded (its
// package.json files and the files its require.resolve calls name), read
// by fs at their virtual paths; the modules that a require made by
// module.createRequire names; and the built-ins required by a name the
// bundler could not see. In a tool, and before a program's setup, it holds
// nothing.
const { invalidArgType } = require("wasmgate:internal/errors");

let present = false;
let cwd = "/";
let text = Object.create(null);   // virtual path → the file's text
let binary = Object.create(null); // virtual path → the file's bytes, base64
let dirs = new Set();             // the directories holding an embedded file
let builtins = Object.create(null);
const requires = new Map();       // directory → specifier → { path, load } or { importer }
const jsonCache = new Map();

// init gives a program its tree (setup, before the program's first line).
function init(options) {
  present = true;
  cwd = options.cwd;
  builtins = options.builtins;
  text = Object.assign(Object.create(null), options.files.t);
  binary = Object.assign(Object.create(null), options.files.b);
  dirs = new Set();
  for (const p of Object.keys(text).concat(Object.keys(binary))) {
    for (let d = dirname(p); !dirs.has(d); d = dirname(d)) {
      dirs.add(d);
      if (d === "/") break;
    }
  }
}

// register records what a module in dir requires through a created
// require (the bundle's generated modules call it as they load).
function register(dir, specs) {
  let m = requires.get(dir);
  if (m === undefined) requires.set(dir, m = Object.create(null));
  Object.assign(m, specs);
}

function dirname(p) {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

// resolvePath is path.posix.resolve(base, p) for an absolute base.
function resolvePath(base, p) {
  const out = [];
  for (const part of (p.startsWith("/") ? p : base + "/" + p).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return "/" + out.join("/");
}

// toPath is the absolute virtual path fs names by p (a string, a Buffer,
// a file: URL), as node reads a path argument.
function toPath(p, name = "path") {
  if (p !== null && typeof p === "object" && typeof p.href === "string" && typeof p.protocol === "string") {
    if (p.protocol !== "file:") {
      const e = new TypeError("The URL must be of scheme file");
      e.code = "ERR_INVALID_URL_SCHEME";
      throw e;
    }
    if (p.hostname !== "" && p.hostname !== undefined) {
      const e = new TypeError("File URL host must be \"localhost\" or empty on linux");
      e.code = "ERR_INVALID_FILE_URL_HOST";
      throw e;
    }
    if (/%2f/i.test(p.pathname)) {
      const e = new TypeError("File URL path must not include encoded / characters");
      e.code = "ERR_INVALID_FILE_URL_PATH";
      throw e;
    }
    p = decodeURIComponent(p.pathname);
  } else if (p instanceof Uint8Array) {
    p = new TextDecoder().decode(p);
  } else if (typeof p !== "string") {
    throw invalidArgType(name, "of type string or an instance of Buffer or URL", p);
  }
  if (p.includes("\u0000")) {
    const e = new TypeError("The argument '" + name + "' must be a string, Uint8Array, or URL without null bytes. Received " + JSON.stringify(p).replace(/"/g, "'"));
    e.code = "ERR_INVALID_ARG_VALUE";
    throw e;
  }
  return resolvePath(cwd, p);
}

// fileURLPath is the path of a file: URL (a URL object or its string), as
// url.fileURLToPath gives it; it throws for anything else.
function fileURLPath(u) {
  if (typeof u === "string") {
    const m = /^file:\/\/([^/?#]*)([^?#]*)/i.exec(u);
    if (m === null) throw new TypeError("not a file URL: " + u);
    u = { protocol: "file:", hostname: m[1] === "localhost" ? "" : m[1], pathname: m[2], href: u };
  }
  if (u === null || typeof u !== "object" || typeof u.href !== "string" || u.protocol !== "file:" ||
      (u.hostname !== "" && u.hostname !== undefined) || /%2f/i.test(u.pathname) || !u.pathname.startsWith("/")) {
    throw new TypeError("not a file URL");
  }
  return decodeURIComponent(u.pathname);
}

// lookup is what the tree has at the absolute virtual path p: "file",
// "dir" (a directory holding an embedded file), or null (not embedded:
// the program may not know).
function lookup(p) {
  if (p in text || p in binary) return "file";
  if (dirs.has(p)) return "dir";
  return null;
}

// bytes is the embedded file at p as a Buffer.
function bytes(p) {
  if (p in binary) return globalThis.Buffer.from(binary[p], "base64");
  return globalThis.Buffer.from(text[p], "utf8");
}

// read is the embedded file at p as readFile gives it: its text when the
// encoding is utf8, else a Buffer or the string in the encoding.
function read(p, encoding) {
  if ((encoding === "utf8" || encoding === "utf-8") && p in text) return text[p];
  const b = bytes(p);
  return encoding === null || encoding === undefined || encoding === "buffer" ? b : b.toString(encoding);
}

// size is the embedded file's length in bytes.
function size(p) {
  if (p in binary) return bytes(p).length;
  return new TextEncoder().encode(text[p]).length;
}

// ---- require at run time -------------------------------------------------

function isBuiltin(id) {
  return require("node:module").isBuiltin(id);
}

function builtinName(id) {
  return id.startsWith("node:") ? id.slice(5) : id;
}

// cannotFind is node's error for a module that is not there, named by
// the module that required it.
function cannotFind(specifier, importer) {
  const e = new Error("Cannot find module '" + specifier + "'\nRequire stack:\n- " + importer);
  e.code = "MODULE_NOT_FOUND";
  e.requireStack = [importer];
  return e;
}

// notBundled is the error for what nothing in the bundle answers: a name
// computed at run time, a built-in the program's code never names. Its
// code is node's for a module not found, which code that loads something
// optionally checks for.
function notBundled(id) {
  const e = new Error("Dynamic require of \"" + id + "\" is not supported");
  e.code = "MODULE_NOT_FOUND";
  return e;
}

// locate finds what require(id), made from a module in dir (null: from
// no known module, the bundle's own fallback), gives: the built-ins the
// bundle holds, what dir's created requires name, and the embedded JSON
// files. It returns the function that loads it, or throws node's error.
function locate(dir, id, importer) {
  id = String(id);
  if (isBuiltin(id)) {
    const load = builtins[builtinName(id)];
    if (load !== undefined) return load;
    throw notBundled(id);
  }
  const entry = dir === null ? undefined : (requires.get(dir) || {})[id];
  if (entry !== undefined) {
    if (entry.load === undefined) throw cannotFind(id, importer || entry.importer);
    return entry.load;
  }
  if (id.startsWith("/") || (dir !== null && (id.startsWith("./") || id.startsWith("../") || id === "." || id === ".."))) {
    const p = resolvePath(dir === null ? "/" : dir, id);
    if (p.endsWith(".json") && lookup(p) === "file") return () => loadJSON(p);
  }
  throw notBundled(id);
}

// loadJSON is require() of the embedded JSON file p: parsed once, as node
// caches a module, its syntax error naming the file as node's does.
function loadJSON(p) {
  if (!jsonCache.has(p)) {
    try {
      jsonCache.set(p, JSON.parse(read(p, "utf8")));
    } catch (e) {
      e.message = p + ": " + e.message;
      throw e;
    }
  }
  return jsonCache.get(p);
}

// resolveFrom is require.resolve(id) made from a module in dir (null: from
// no known module).
function resolveFrom(dir, id, importer) {
  id = String(id);
  if (isBuiltin(id)) return id;
  const entry = dir === null ? undefined : (requires.get(dir) || {})[id];
  if (entry !== undefined) {
    if (entry.load === undefined) throw cannotFind(id, importer || entry.importer);
    return entry.path;
  }
  if (id.startsWith("/") && lookup(resolvePath("/", id)) === "file") return resolvePath("/", id);
  throw notBundled(id);
}

module.exports = {
  get present() { return present; },
  init, register, toPath, fileURLPath, lookup, read, bytes, size, resolvePath, dirname,
  locate, resolveFrom, cannotFind,
};
