"use strict";
// node:readline/promises: the Interface of node:readline whose question()
// returns a promise of the answer, and Readline, which queues cursor moves
// and writes them on commit().
const readline = require("node:readline");

function abortError(signal) {
  const e = new Error("The operation was aborted");
  e.name = "AbortError";
  e.code = "ABORT_ERR";
  if (signal && signal.reason !== undefined) e.cause = signal.reason;
  return e;
}

class Interface extends readline.Interface {
  question(query, options) {
    return new Promise((resolve, reject) => {
      let cb = resolve;
      const signal = options !== null && typeof options === "object" ? options.signal : undefined;
      if (signal) {
        if (signal.aborted) {
          reject(abortError(signal));
          return;
        }
        const onabort = () => {
          this._question = null;
          reject(abortError(signal));
        };
        signal.addEventListener("abort", onabort, { once: true });
        cb = (answer) => {
          signal.removeEventListener("abort", onabort);
          resolve(answer);
        };
      }
      this._ask(query, cb);
    });
  }
}

function createInterface(input, output, completer, terminal) {
  return new Interface(input, output, completer, terminal);
}

const CSI = "\x1b[";
class Readline {
  constructor(stream, options) {
    this._stream = stream;
    this._autoCommit = Boolean(options && options.autoCommit);
    this._todo = [];
  }
  _queue(data) {
    if (this._autoCommit) this._stream.write(data);
    else this._todo.push(data);
    return this;
  }
  cursorTo(x, y) { return this._queue(typeof y !== "number" ? CSI + (x + 1) + "G" : CSI + (y + 1) + ";" + (x + 1) + "H"); }
  moveCursor(dx, dy) {
    let data = "";
    if (dx < 0) data += CSI + -dx + "D";
    else if (dx > 0) data += CSI + dx + "C";
    if (dy < 0) data += CSI + -dy + "A";
    else if (dy > 0) data += CSI + dy + "B";
    return data === "" ? this : this._queue(data);
  }
  clearLine(dir) { return this._queue(dir < 0 ? CSI + "1K" : dir > 0 ? CSI + "0K" : CSI + "2K"); }
  clearScreenDown() { return this._queue(CSI + "0J"); }
  commit() {
    const data = this._todo.join("");
    this._todo = [];
    return new Promise((resolve) => this._stream.write(data, resolve));
  }
  rollback() {
    this._todo = [];
    return this;
  }
}

module.exports = { Interface, Readline, createInterface };
