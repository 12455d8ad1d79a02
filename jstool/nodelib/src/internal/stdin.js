"use strict";
// A program's stdin (wasmgate node): the bytes the host read before the
// start, as a latin1 string (a character per byte), behind one cursor that
// process.stdin and fs's reads of fd 0 and /dev/stdin share, as they share
// the one open file in node: what one reads, the other does not see again.
// In a tool there is none (present is false).
const bridge = globalThis[Symbol.for("wasmgate.node")];
const io = bridge.program();
let bytes = io === null ? "" : io.stdin;
let pos = 0;

module.exports = {
  present: io !== null,
  // left is how many bytes are still unread.
  left: () => bytes.length - pos,
  // byteAt is the code of the unread byte i places on (NaN past the end).
  byteAt: (i) => bytes.charCodeAt(pos + i),
  // take reads up to n bytes (all that are left when n is undefined).
  take(n) {
    const end = n === undefined ? bytes.length : Math.min(bytes.length, pos + n);
    const s = bytes.slice(pos, end);
    pos = end;
    return s;
  },
  // unshift puts bytes back in front of what is unread.
  unshift(s) {
    bytes = s + bytes.slice(pos);
    pos = 0;
  },
};
