"use strict";
// wasmgate:internal/program: what makes a bundled program (wasmgate node)
// run as node runs a file, set up before the program's first line:
// - its paths: process.cwd() and the main module's are virtual (the
//   program's tree at ProgramRoot, see jstool/programlayout.go);
// - require: esbuild's bundles call a global require for what they could
//   not bundle (a require() of a module the tree does not have, of a
//   computed name, of a built-in through another name, require.resolve)
//   and read require.main from it; node has no such global, but a
//   program's own code never sees it (esbuild renames its require);
// - its tree: the files and modules it finds at run time (program_tree);
// - the console, formatted by util.format and util.inspect as node's is;
// - Error stacks shaped as V8 shapes them ("Name: message" and the frames),
//   which util.inspect and many libraries read.
const process = require("node:process");
const tree = require("wasmgate:internal/program_tree");
// util.inspect is parsed when first needed: a program that logs only
// strings and numbers does not pay for it.
const lazyInspect = require("wasmgate:lazy/inspect");
const insp = new Proxy({}, { get: (_, name) => lazyInspect()[name] });

// plain is format's result for arguments that need no inspecting (strings,
// numbers, booleans, BigInts, null and undefined, and no "%" to
// interpret), null for any other.
function plain(args) {
  if (args.length > 0 && typeof args[0] === "string" && args[0].includes("%")) return null;
  let s = "";
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const t = typeof a;
    let part;
    if (t === "string") part = a;
    else if (t === "number") part = Object.is(a, -0) ? "-0" : String(a);
    else if (t === "bigint") part = a + "n";
    else if (t === "boolean" || a === null || a === undefined) part = String(a);
    else return null;
    s += i === 0 ? part : " " + part;
  }
  return s;
}

let mainModule;

// missing is, for what the bundle passes for a module the tree does not
// have (the specifier, a NUL and the importer's path, see
// programlayout.go), node's error; null for any other id.
function missing(id) {
  const s = String(id);
  const nul = s.indexOf("\u0000");
  return nul < 0 ? null : tree.cannotFind(s.slice(0, nul), s.slice(nul + 1));
}

function installRequire(main) {
  // The error's frames start at the require() call, as node's own
  // resolution frames are not the program's.
  function require(id) {
    let load;
    try {
      const e = missing(id);
      if (e !== null) throw e;
      load = tree.locate(null, id);
    } catch (e) {
      Error.captureStackTrace(e, require);
      throw e;
    }
    return load();
  }
  require.resolve = function resolve(id) {
    try {
      const e = missing(id);
      if (e !== null) throw e;
      return tree.resolveFrom(null, id);
    } catch (e) {
      Error.captureStackTrace(e, resolve);
      throw e;
    }
  };
  require.resolve.paths = () => null;
  require.cache = Object.create(null);
  require.extensions = Object.create(null);
  Object.defineProperty(require, "main", {
    get: () => mainModule, set(v) { mainModule = v; }, enumerable: true, configurable: true,
  });
  if (main !== null) mainModule = moduleRecord({ exports: {} }, main);
  Object.defineProperty(globalThis, "require", { value: require, writable: true, configurable: true, enumerable: false });
}

// nodeModulePaths are the node_modules directories node looks in from dir.
function nodeModulePaths(dir) {
  const out = [];
  for (let d = dir; ; d = d.slice(0, d.lastIndexOf("/")) || "/") {
    if (!d.endsWith("/node_modules")) out.push((d === "/" ? "" : d) + "/node_modules");
    if (d === "/") return out;
  }
}

// moduleRecord gives m the fields node's main module has.
function moduleRecord(m, filename) {
  const dir = filename.slice(0, filename.lastIndexOf("/")) || "/";
  Object.assign(m, { id: ".", path: dir, filename, loaded: false, children: [], paths: nodeModulePaths(dir) });
  return m;
}

// enter makes a CommonJS entry's module require.main (the bundle calls it
// first thing in the entry, see programlayout.go).
function enter(m) {
  moduleRecord(m, mainModule === undefined ? "/" : mainModule.filename);
  mainModule = m;
  process.mainModule = m;
}

// ---- Error stacks ------------------------------------------------------
// The engine's stack is the frames alone; V8's starts with the error's
// "Name: message", computed when the stack is first read (so that a name a
// subclass's constructor sets is in it), and may be set to anything.
function errorHeader(e) {
  let name, message;
  try {
    name = e.name === undefined ? "Error" : String(e.name);
    message = e.message === undefined ? "" : String(e.message);
  } catch (_) {
    return "Error";
  }
  if (name === "") return message;
  if (message === "") return name;
  return name + ": " + message;
}

function shapeStacks() {
  const desc = Object.getOwnPropertyDescriptor(Error.prototype, "stack");
  if (desc === undefined || typeof desc.get !== "function") return;
  const frames = desc.get;
  const shaped = new WeakMap();
  Object.defineProperty(Error.prototype, "stack", {
    get() {
      if (shaped.has(this)) return shaped.get(this);
      let raw;
      try {
        raw = frames.call(this);
      } catch (_) {
        return undefined;
      }
      // Anything but the engine's frames is an Error.prepareStackTrace's
      // own result, given as it is.
      if (typeof raw !== "string" || (raw !== "" && !raw.startsWith("    at "))) return raw;
      const s = errorHeader(this) + (raw === "" ? "" : "\n" + raw.replace(/\n$/, ""));
      shaped.set(this, s);
      return s;
    },
    set(v) { shaped.set(this, v); },
    enumerable: false, configurable: true,
  });
  const capture = Error.captureStackTrace;
  if (typeof capture === "function") {
    Error.captureStackTrace = function captureStackTrace(obj, fn) {
      capture.call(Error, obj, fn);
      const d = Object.getOwnPropertyDescriptor(obj, "stack");
      if (d !== undefined && typeof d.value === "string" && (d.value === "" || d.value.startsWith("    at "))) {
        d.value = errorHeader(obj) + (d.value === "" ? "" : "\n" + d.value.replace(/\n$/, ""));
        Object.defineProperty(obj, "stack", d);
      }
    };
  }
}

// ---- the console -------------------------------------------------------
const kSecond = 1000, kMinute = 60 * kSecond, kHour = 60 * kMinute;
const pad2 = (n) => String(n).padStart(2, "0");

// formatTime is how node's console.timeEnd shows a duration.
function formatTime(ms) {
  let hours = 0, minutes = 0, seconds = 0;
  if (ms >= kSecond) {
    if (ms >= kMinute) {
      if (ms >= kHour) {
        hours = Math.floor(ms / kHour);
        ms %= kHour;
      }
      minutes = Math.floor(ms / kMinute);
      ms %= kMinute;
    }
    seconds = ms / kSecond;
  }
  if (hours !== 0 || minutes !== 0) {
    const [s, frac] = seconds.toFixed(3).split(".");
    const lead = hours !== 0 ? hours + ":" + pad2(minutes) : String(minutes);
    return lead + ":" + pad2(s) + "." + frac + " (" + (hours !== 0 ? "h:m" : "") + "m:ss.mmm)";
  }
  if (seconds !== 0) return seconds.toFixed(3) + "s";
  return Number(ms.toFixed(3)) + "ms";
}

// makeConsole gives node's Console methods writing to the streams that
// stdout() and stderr() return when called (so that a program replacing
// process.stdout.write is heard, as in node).
function makeConsole(stdout, stderr, inspectOptions) {
  let indent = "";
  const counts = new Map();
  const timers = new Map();
  const opts = inspectOptions || {};
  const write = (stream, s) => {
    if (indent !== "") s = indent + s.replace(/\n/g, "\n" + indent);
    stream().write(s + "\n");
  };
  const format = (args) => {
    const s = plain(args);
    return s !== null ? s : insp.formatWithOptions(opts, ...args);
  };
  const c = {
    log(...args) { write(stdout, format(args)); },
    warn(...args) { write(stderr, format(args)); },
    dir(obj, options) { write(stdout, insp.inspect(obj, Object.assign({ customInspect: false }, opts, options))); },
    trace(...args) {
      const err = { name: "Trace", message: format(args) };
      Error.captureStackTrace(err, c.trace);
      c.error(err.stack);
    },
    assert(ok, ...args) {
      if (ok) return;
      if (typeof args[0] === "string") args[0] = "Assertion failed: " + args[0];
      else args.unshift("Assertion failed");
      c.warn(...args);
    },
    count(label = "default") {
      label = String(label);
      const n = (counts.get(label) || 0) + 1;
      counts.set(label, n);
      c.log(label + ": " + n);
    },
    countReset(label = "default") {
      label = String(label);
      if (!counts.has(label)) {
        process.emitWarning("Count for '" + label + "' does not exist");
        return;
      }
      counts.delete(label);
    },
    group(...labels) {
      if (labels.length > 0) c.log(...labels);
      indent += "  ";
    },
    groupEnd() { indent = indent.slice(0, Math.max(0, indent.length - 2)); },
    time(label = "default") {
      label = String(label);
      if (timers.has(label)) {
        process.emitWarning("Label '" + label + "' already exists for console.time()");
        return;
      }
      timers.set(label, performance.now());
    },
    timeEnd(label = "default") {
      label = String(label);
      if (!timeLog(label, "timeEnd", [])) return;
      timers.delete(label);
    },
    timeLog(label = "default", ...data) { timeLog(String(label), "timeLog", data); },
    table(data, properties) { c.log(table(data, properties, opts)); },
  };
  function timeLog(label, name, data) {
    const start = timers.get(label);
    if (start === undefined) {
      process.emitWarning("No such label '" + label + "' for console." + name + "()");
      return false;
    }
    c.log(label + ": " + formatTime(performance.now() - start), ...data);
    return true;
  }
  c.info = c.debug = c.dirxml = c.log;
  c.error = c.warn;
  c.groupCollapsed = c.group;
  return c;
}

// ---- console.table -----------------------------------------------------
// Node's table: an "(index)" column, a column per key of the rows that are
// objects (in the order first seen, or the properties asked for), and a
// "Values" column for rows that are not; cells are util.inspect's, in
// box-drawing lines.
function table(data, properties, opts) {
  if (data === null || typeof data !== "object") return insp.formatWithOptions(opts, data);
  const cell = (v) => insp.inspect(v, Object.assign({}, opts, {
    depth: v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 2 ? -1 : 0,
    maxArrayLength: 3, breakLength: Infinity,
  }));
  const indexKey = "(index)", valuesKey = "Values";
  let rows;
  let iterKey = null;
  if (data instanceof Map) {
    iterKey = "(iteration index)";
    rows = [...data].map(([k, v], i) => [String(i), { Key: k, Values: v }, true]);
  } else if (data instanceof Set || (typeof data[Symbol.iterator] === "function" && !Array.isArray(data) && !ArrayBuffer.isView(data))) {
    iterKey = "(iteration index)";
    rows = [...data].map((v, i) => [String(i), v, false]);
  } else {
    rows = Object.keys(data).map((k) => [k, data[k], false]);
  }
  const keys = [];
  const seen = new Set();
  let hasValues = false;
  const table = rows.map(([index, v, mapRow]) => {
    const row = new Map();
    if (mapRow) {
      for (const k of ["Key", "Values"]) {
        if (!seen.has(k)) { seen.add(k); keys.push(k); }
        row.set(k, cell(v[k]));
      }
      return [index, row, undefined];
    }
    if (v !== null && (typeof v === "object" || typeof v === "function")) {
      for (const k of properties || Object.keys(v)) {
        if (!seen.has(k)) { seen.add(k); keys.push(k); }
        if (Object.prototype.hasOwnProperty.call(v, k)) row.set(k, cell(v[k]));
      }
      return [index, row, undefined];
    }
    hasValues = true;
    return [index, row, cell(v)];
  });
  const head = [iterKey || indexKey, ...keys];
  if (hasValues && !(data instanceof Map)) head.push(valuesKey);
  const body = table.map(([index, row, value]) => {
    const line = [index];
    for (const k of keys) line.push(row.has(k) ? row.get(k) : "");
    if (hasValues && !(data instanceof Map)) line.push(value === undefined ? "" : value);
    return line;
  });
  const width = (s) => insp.getStringWidth(s);
  const widths = head.map((h, i) => Math.max(width(h), ...body.map((r) => width(r[i]))) + 2);
  const line = (l, m, r) => l + widths.map((w) => "─".repeat(w)).join(m) + r;
  const render = (cells) => "│" + cells.map((s, i) => " " + s + " ".repeat(widths[i] - width(s) - 1)).join("│") + "│";
  return [line("┌", "┬", "┐"), render(head), line("├", "┼", "┤"), ...body.map(render), line("└", "┴", "┘")].join("\n");
}

// Console is node's console.Console: a console writing to other streams.
function Console(stdout, stderr, ignoreErrors) {
  if (!new.target) return new Console(stdout, stderr, ignoreErrors);
  let options = stdout;
  if (options === null || typeof options !== "object" || typeof options.write === "function") {
    options = { stdout, stderr };
  }
  const out = options.stdout;
  if (out === null || typeof out !== "object" || typeof out.write !== "function") {
    const e = new TypeError("The \"stdout\" argument must be an instance of Stream. Received " + String(out));
    e.code = "ERR_INVALID_ARG_TYPE";
    throw e;
  }
  const err = options.stderr || out;
  Object.assign(this, makeConsole(() => out, () => err, options.inspectOptions));
}

function installConsole() {
  const c = globalThis.console;
  Object.assign(c, makeConsole(() => process.stdout, () => process.stderr, {}));
  c.Console = Console;
}

// setup runs once, before the program: layout is {cwd, main, esm},
// builtins the built-ins its require may give by name, files those
// embedded (see programlayout.go's setup module).
function setup(layout, builtins, files) {
  process.cwd = function cwd() { return layout.cwd; };
  tree.init({ cwd: layout.cwd, builtins, files });
  // A CommonJS program has a require.main from its start; an ES module
  // program none, as in node.
  installRequire(layout.esm ? null : layout.main);
  shapeStacks();
  installConsole();
}

module.exports = { setup, enter };
