"use strict";
// What node:fs does under wasmgate node besides refusing: it reads the
// program's stdin (internal/fs_stdin), and the files of the program's tree
// that its bundle carries (internal/program_tree: its package.json files,
// the files it names with require.resolve), at their virtual paths, as
// node reads them. Any other path is refused as node's permission model
// refuses one it was not granted (ERR_ACCESS_DENIED, with the permission
// and the path). Each function is made from the refusing one of its name
// (internal/denied), which a tool, having no tree, gets as it is.
const stdinFs = require("wasmgate:internal/fs_stdin");
const stdin = require("wasmgate:internal/stdin");
const tree = require("wasmgate:internal/program_tree");
const { invalidArgType } = require("wasmgate:internal/errors");

const STDIN_PATHS = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

// isStdin: the argument names the program's stdin (fs_stdin reads it).
function isStdin(p) {
  if (!stdin.present) return false;
  if (p === 0) return true;
  try {
    return typeof p !== "number" && STDIN_PATHS.includes(tree.toPath(p));
  } catch (_) {
    return false;
  }
}

// denied is the refusal of a path the bundle does not carry: node's
// permission model's error, with a sentence on what a program may read.
function denied(call, p) {
  const e = new Error("Access to this API has been restricted: " + call + "(" + JSON.stringify(p) + ") " +
    "(a program reads only the files of its tree that wasmgate embedded in it when bundling it: " +
    "the package.json files of its packages, and the files its code names with require.resolve)");
  e.code = "ERR_ACCESS_DENIED";
  e.permission = "FileSystemRead";
  e.resource = p;
  return e;
}

// systemError is node's error for a failed system call on p.
function systemError(code, errno, text, syscall, p) {
  const e = new Error(code + ": " + text + ", " + syscall + (p === undefined ? "" : " '" + p + "'"));
  e.errno = errno;
  e.code = code;
  e.syscall = syscall;
  if (p !== undefined) e.path = p;
  return e;
}

// encodingOf reads readFile's options: an encoding, or { encoding, flag }.
const { encodingOf } = stdinFs;

// readTree is readFileSync of the virtual path p (its call named by call).
function readTree(call, p, options) {
  const encoding = encodingOf(options);
  switch (tree.lookup(p)) {
    case "file":
      return tree.read(p, encoding);
    case "dir":
      throw systemError("EISDIR", -21, "illegal operation on a directory", "read");
    default:
      throw denied(call, p);
  }
}

// The virtual clock's start: an embedded file was last changed then.
const EPOCH_MS = 946684800000;

// Stats is node's fs.Stats for an embedded file or directory: fixed
// values, since the file's host metadata is not the program's to see.
class Stats {
  constructor(kind, size) {
    const dir = kind === "dir";
    this.dev = 0;
    this.mode = dir ? 0o40755 : 0o100644;
    this.nlink = 1;
    this.uid = 1000;
    this.gid = 1000;
    this.rdev = 0;
    this.blksize = 4096;
    this.ino = 0;
    this.size = size;
    this.blocks = Math.ceil(size / 512);
    this.atimeMs = this.mtimeMs = this.ctimeMs = this.birthtimeMs = EPOCH_MS;
    this.atime = new Date(EPOCH_MS);
    this.mtime = new Date(EPOCH_MS);
    this.ctime = new Date(EPOCH_MS);
    this.birthtime = new Date(EPOCH_MS);
  }
  isFile() { return (this.mode & 0o170000) === 0o100000; }
  isDirectory() { return (this.mode & 0o170000) === 0o40000; }
  isSymbolicLink() { return false; }
  isBlockDevice() { return false; }
  isCharacterDevice() { return false; }
  isFIFO() { return false; }
  isSocket() { return false; }
}

// statTree is statSync of the virtual path p.
function statTree(call, p) {
  switch (tree.lookup(p)) {
    case "file":
      return new Stats("file", tree.size(p));
    case "dir":
      return new Stats("dir", 4096);
    default:
      throw denied(call, p);
  }
}

// after calls fn(...args) once the current turn of the event loop is
// over, as a callback after I/O comes.
const after = (fn, args) => globalThis.setImmediate(() => fn(...args));

// sync makes the function name of fs from work(p, ...rest), which the
// stdin and a tool's refusal go before.
const sync = (name, work, fromStdin) => (refuse) => {
  const stdinFn = fromStdin === undefined ? null : fromStdin(refuse);
  return { [name]: function (p, ...rest) {
    if (stdinFn !== null && isStdin(p)) return stdinFn.apply(this, arguments);
    if (!tree.present || typeof p === "number") return refuse.apply(this, arguments);
    return work("fs." + name, tree.toPath(p), ...rest);
  } }[name];
};

// callback is sync's callback form: the last argument is the callback.
const callback = (name, work, fromStdin) => (refuse) => {
  const stdinFn = fromStdin === undefined ? null : fromStdin(refuse);
  return { [name]: function (p, ...rest) {
    if (stdinFn !== null && isStdin(p)) return stdinFn.apply(this, arguments);
    if (!tree.present || typeof p === "number") return refuse.apply(this, arguments);
    const cb = rest.pop();
    if (typeof cb !== "function") throw invalidArgType("cb", "of type function", cb);
    let value;
    try {
      value = work("fs." + name, tree.toPath(p), ...rest);
    } catch (e) {
      if (e.code === "ERR_INVALID_ARG_TYPE" || e.code === "ERR_INVALID_ARG_VALUE" || e.code === "ERR_INVALID_URL_SCHEME") throw e;
      after(cb, [e]);
      return;
    }
    after(cb, [null, value]);
  } }[name];
};

// promise is sync's form in fs/promises.
const promise = (name, work, fromStdin) => (refuse) => {
  const stdinFn = fromStdin === undefined ? null : fromStdin(refuse);
  return { [name]: function (p, ...rest) {
    if (stdinFn !== null && p !== 0 && isStdin(p)) return stdinFn.apply(this, arguments);
    if (!tree.present || typeof p === "number") return refuse.apply(this, arguments);
    return new Promise((resolve, reject) => {
      let value;
      try {
        value = work("fs/promises." + name, tree.toPath(p), ...rest);
      } catch (e) {
        after(reject, [e]);
        return;
      }
      after(resolve, [value]);
    });
  } }[name];
};

const statWork = (call, p) => statTree(call, p);
const realpathWork = (call, p) => {
  statTree(call, p);
  return p;
};

const realpathSync = (refuse) => {
  const f = sync("realpathSync", realpathWork)(refuse);
  f.native = f;
  return f;
};
const realpath = (refuse) => {
  const f = callback("realpath", realpathWork)(refuse);
  f.native = f;
  return f;
};

// existsSync never throws for a bad argument, as node's; a path the bundle
// does not carry is refused as node 20's permission model refuses it.
const existsSync = (refuse) => function existsSync(p) {
  if (isStdin(p)) return true;
  if (!tree.present || typeof p === "number") return refuse.apply(this, arguments);
  let path;
  try {
    path = tree.toPath(p);
  } catch (_) {
    return false;
  }
  if (tree.lookup(path) === null) throw denied("fs.existsSync", path);
  return true;
};

module.exports = {
  readFileSync: sync("readFileSync", readTree, stdinFs.readFileSync),
  readFile: callback("readFile", readTree, stdinFs.readFile),
  readSync: stdinFs.readSync,
  existsSync,
  statSync: sync("statSync", statWork),
  lstatSync: sync("lstatSync", statWork),
  stat: callback("stat", statWork),
  lstat: callback("lstat", statWork),
  realpathSync,
  realpath,
  promises: {
    readFile: promise("readFile", readTree, stdinFs.promises.readFile),
    stat: promise("stat", statWork),
    lstat: promise("lstat", statWork),
    realpath: promise("realpath", realpathWork),
  },
};
