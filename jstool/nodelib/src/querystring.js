"use strict";
// node:querystring: querystring-es3, with Node's escape and unescape.
const lib = require("wasmgate:lib/querystring");
function unescape(s) {
  try { return decodeURIComponent(s); } catch (_) { return unescapeBuffer(s); }
}
function unescapeBuffer(s) {
  return s.replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
}
module.exports = {
  decode: lib.decode, parse: lib.parse, encode: lib.encode, stringify: lib.stringify,
  escape: (s) => encodeURIComponent(s), unescape, unescapeBuffer,
};
