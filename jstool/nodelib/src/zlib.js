"use strict";
// node:zlib: browserify-zlib over pako (a port of zlib itself, so deflate
// writes the bytes zlib writes). Brotli is not available.
const lib = require("wasmgate:lib/zlib");
const { unavailable } = require("wasmgate:internal/errors");
const constants = {};
for (const k of Object.keys(lib)) if (/^Z_/.test(k)) constants[k] = lib[k];
const brotli = {};
for (const name of ["BrotliCompress", "BrotliDecompress", "createBrotliCompress", "createBrotliDecompress",
  "brotliCompress", "brotliCompressSync", "brotliDecompress", "brotliDecompressSync"]) {
  brotli[name] = function () { throw unavailable("zlib." + name + "()"); };
}
module.exports = Object.assign({}, lib, brotli, { constants: Object.freeze(Object.assign(constants, lib.constants)) });
