"use strict";
// What node:fs does under wasmgate node besides refusing: reading the
// program's stdin, by fd 0 or by /dev/stdin, which is how most command-line
// programs read their input (fs.readFileSync(0, "utf8")). Each function is
// made from the refusing one of its name (internal/denied), which it calls
// for every other file, and in a tool, which has no stdin.
const stdin = require("wasmgate:internal/stdin");
const { invalidArgType } = require("wasmgate:internal/errors");

const STDIN_PATHS = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

// isStdin: the path or fd names the program's stdin.
function isStdin(p) {
  if (!stdin.present) return false;
  if (p === 0) return true;
  if (typeof p === "string") return STDIN_PATHS.includes(p);
  if (p instanceof Uint8Array) return STDIN_PATHS.includes(new TextDecoder().decode(p));
  if (p !== null && typeof p === "object" && typeof p.href === "string" && p.protocol === "file:") {
    return STDIN_PATHS.includes(decodeURIComponent(p.pathname));
  }
  return false;
}

// encodingOf reads readFile's options: an encoding, or { encoding, flag }.
function encodingOf(options) {
  if (options === undefined || options === null) return null;
  if (typeof options === "string") return options;
  if (typeof options === "object") return options.encoding === undefined ? null : options.encoding;
  throw invalidArgType("options", "one of type string or an instance of Object", options);
}

// decode gives the bytes (a latin1 string) as readFile does: a Buffer,
// or a string in the encoding.
function decode(bytes, encoding) {
  const buf = globalThis.Buffer.from(bytes, "latin1");
  return encoding === null ? buf : buf.toString(encoding);
}

// after calls fn(...args) once the current turn of the event loop is
// over, as a callback after I/O comes.
const after = (fn, args) => globalThis.setImmediate(() => fn(...args));

const readFileSync = (refuse) => function readFileSync(p, options) {
  if (!isStdin(p)) return refuse.apply(this, arguments);
  return decode(stdin.take(), encodingOf(options));
};

const readFile = (refuse) => function readFile(p, options, cb) {
  if (typeof options === "function") { cb = options; options = undefined; }
  if (!isStdin(p)) return refuse.apply(this, arguments);
  if (typeof cb !== "function") throw invalidArgType("cb", "of type function", cb);
  let data;
  try {
    data = decode(stdin.take(), encodingOf(options));
  } catch (e) {
    after(cb, [e]);
    return;
  }
  after(cb, [null, data]);
};

// A pipe gives at most this much to one read, and so does readSync here.
const PIPE_READ = 65536;

const readSync = (refuse) => function readSync(fd, buffer, offsetOrOptions, length, position) {
  if (fd !== 0 || !stdin.present) return refuse.apply(this, arguments);
  if (!ArrayBuffer.isView(buffer)) throw invalidArgType("buffer", "an instance of Buffer, TypedArray, or DataView", buffer);
  let offset = offsetOrOptions;
  if (offsetOrOptions !== null && typeof offsetOrOptions === "object") {
    ({ offset = 0, length = buffer.byteLength - offset } = offsetOrOptions);
  }
  if (offset === undefined || offset === null) offset = 0;
  if (length === undefined || length === null) length = buffer.byteLength - offset;
  const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const s = stdin.take(Math.max(0, Math.min(length, bytes.length - offset, PIPE_READ)));
  for (let i = 0; i < s.length; i++) bytes[offset + i] = s.charCodeAt(i);
  return s.length;
};

const promisesReadFile = (refuse) => function readFile(p, options) {
  if (p === 0 || !isStdin(p)) return refuse.apply(this, arguments);
  return new Promise((resolve, reject) => {
    let data;
    try {
      data = decode(stdin.take(), encodingOf(options));
    } catch (e) {
      after(reject, [e]);
      return;
    }
    after(resolve, [data]);
  });
};

module.exports = { readFileSync, readFile, readSync, promises: { readFile: promisesReadFile }, encodingOf };
