"use strict";
// node:buffer: the buffer package (feross/buffer), with what Node adds.
const lib = require("wasmgate:lib/buffer");
const { Buffer } = lib;
// Bundling the library renamed the class (a global of its name is in
// scope there); Buffer.name is what util.inspect and error messages show.
if (Buffer.name !== "Buffer") Object.defineProperty(Buffer, "name", { value: "Buffer", configurable: true });

// base64url, which the buffer package lacks: its base64 decoder already
// reads "-" and "_", so only the name and the encoder need adding.
if (!Buffer.isEncoding("base64url")) {
  const isB64url = (enc) => typeof enc === "string" && enc.toLowerCase() === "base64url";
  const b64 = (enc) => isB64url(enc) ? "base64" : enc;
  const { toString, write } = Buffer.prototype;
  const { from, byteLength, isEncoding } = Buffer;
  Buffer.prototype.toString = function (encoding, start, end) {
    if (!isB64url(encoding)) return toString.apply(this, arguments);
    return toString.call(this, "base64", start, end).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  };
  Buffer.prototype.write = function (string, offset, length, encoding) {
    const args = Array.from(arguments);
    if (args.length > 1 && isB64url(args[args.length - 1])) args[args.length - 1] = "base64";
    return write.apply(this, args);
  };
  Buffer.from = function (value, encodingOrOffset, length) {
    return typeof value === "string" ? from.call(this, value, b64(encodingOrOffset)) : from.apply(this, arguments);
  };
  Buffer.byteLength = function (string, encoding) { return byteLength.call(this, string, b64(encoding)); };
  Buffer.isEncoding = function (encoding) { return isB64url(encoding) || isEncoding.call(this, encoding); };
}
function isAscii(input) {
  const b = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  for (let i = 0; i < b.length; i++) if (b[i] > 0x7f) return false;
  return true;
}
function isUtf8(input) {
  const b = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  try { new TextDecoder("utf-8", { fatal: true }).decode(b); return true; } catch (_) { return false; }
}
// util.inspect shows a Buffer as node does: its first INSPECT_MAX_BYTES
// bytes in hex, how many more there are, and its own properties.
Buffer.prototype[Symbol.for("nodejs.util.inspect.custom")] = function inspect(depth, options, inspect) {
  const max = module.exports.INSPECT_MAX_BYTES;
  let s = this.toString("hex", 0, Math.min(max, this.length)).replace(/(..)(?!$)/g, "$1 ");
  const more = this.length - max;
  if (more > 0) s += " ... " + more + " more byte" + (more > 1 ? "s" : "");
  if (options && typeof inspect === "function") {
    const own = Object.create(null);
    let extra = false;
    const keys = [...Object.keys(this), ...Object.getOwnPropertySymbols(this).filter((k) => Object.prototype.propertyIsEnumerable.call(this, k))];
    for (const k of keys) {
      if (typeof k === "string" && /^(0|[1-9][0-9]*)$/.test(k)) continue;
      own[k] = this[k];
      extra = true;
    }
    if (extra) {
      // Shown without the braces of the object that holds them.
      const shown = inspect(own, Object.assign({}, options, { breakLength: Infinity, compact: true }));
      s += (this.length !== 0 ? ", " : "") + shown.slice("[Object: null prototype] { ".length, -2);
    }
  }
  return "<" + this.constructor.name + " " + s + ">";
};
module.exports = Object.assign({}, lib, {
  atob: globalThis.atob,
  btoa: globalThis.btoa,
  constants: Object.freeze({ MAX_LENGTH: lib.kMaxLength, MAX_STRING_LENGTH: 536870888 }),
  isAscii,
  isUtf8,
});
