"use strict";
// node:readline: line-by-line reading of any readable stream, as Node's
// Interface reads one that is not a terminal (the sandbox has no terminal:
// process.stdin is the program's stdin, read before the start). Lines end
// at "\n", "\r\n" or a lone "\r"; a last line without an end is a "line"
// at the end of the input, which then closes the interface. question()
// writes its query to the output and hands the next line to its callback.
// The terminal-only parts (cursor movement, history, completion) exist
// with their non-terminal behaviour. In a tool, reading process.stdin is
// refused, as process.stdin itself refuses it.
const EventEmitter = require("node:events");
const bridge = globalThis[Symbol.for("wasmgate.node")];
const { invalidArgType } = require("wasmgate:internal/errors");

const lineEnding = /\r?\n|\r(?!\n)/g;

function useAfterClose() {
  const e = new Error("readline was closed");
  e.code = "ERR_USE_AFTER_CLOSE";
  return e;
}

function abortError(signal) {
  const e = new Error("The operation was aborted");
  e.name = "AbortError";
  e.code = "ABORT_ERR";
  if (signal && signal.reason !== undefined) e.cause = signal.reason;
  return e;
}

// decoder turns the chunks of a stream into text: strings as they are,
// bytes as UTF-8, a character cut between chunks kept for the next.
function decoder() {
  const d = new TextDecoder("utf-8");
  return (chunk) => typeof chunk === "string" ? chunk : d.decode(chunk, { stream: true });
}

class Interface extends EventEmitter {
  constructor(input, output, completer, terminal) {
    super();
    let options = input;
    if (input === null || typeof input !== "object" || typeof input.on !== "function" || input.input !== undefined) {
      options = input || {};
    } else {
      options = { input, output, completer, terminal };
    }
    input = options.input;
    if (input === undefined || input === null || typeof input.on !== "function") {
      throw invalidArgType("input", "an instance of Stream", input);
    }
    if (bridge.program() === null && input.fd === 0 && input.readable === false) {
      // A tool's process.stdin: a tool's input is its params.
      throw bridge.accessDenied("readline.createInterface() over process.stdin (a tool's input is execute's params)");
    }
    this.input = input;
    this.output = options.output === undefined ? undefined : options.output;
    this.terminal = false;
    this.line = "";
    this.cursor = 0;
    this.history = [];
    this.historySize = options.historySize === undefined ? 30 : options.historySize;
    this.crlfDelay = options.crlfDelay === undefined ? 100 : Math.max(100, Number(options.crlfDelay));
    this.completer = options.completer;
    this.closed = false;
    this.paused = false;
    this._prompt = options.prompt === undefined ? "> " : String(options.prompt);
    this._buffer = null;
    this._sawReturnAt = 0;
    this._question = null;
    this._oldPrompt = "";
    this._decode = decoder();
    this._lines = undefined;

    const ondata = (chunk) => this._normalWrite(chunk);
    const onend = () => {
      if (typeof this._buffer === "string" && this._buffer.length > 0) this.emit("line", this._buffer);
      this.close();
    };
    const onerror = (err) => this.emit("error", err);
    input.on("data", ondata);
    input.on("end", onend);
    input.on("error", onerror);
    this.once("close", () => {
      input.removeListener("data", ondata);
      input.removeListener("end", onend);
      input.removeListener("error", onerror);
    });
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) bridge.nextTick(() => this.close(), []);
      else {
        const onabort = () => this.close();
        signal.addEventListener("abort", onabort, { once: true });
        this.once("close", () => signal.removeEventListener("abort", onabort));
      }
    }
    input.resume();
  }

  get columns() { return this.output && this.output.columns ? this.output.columns : Infinity; }

  setPrompt(prompt) { this._prompt = prompt; }
  getPrompt() { return this._prompt; }

  prompt() {
    if (this.paused) this.resume();
    this._writeToOutput(this._prompt);
  }

  question(query, options, cb) {
    cb = typeof options === "function" ? options : cb;
    if (options !== null && typeof options === "object" && options.signal) {
      const signal = options.signal;
      if (signal.aborted) return;
      const onabort = () => { this._question = null; };
      signal.addEventListener("abort", onabort, { once: true });
      const inner = cb;
      cb = (answer) => {
        signal.removeEventListener("abort", onabort);
        inner(answer);
      };
    }
    if (typeof cb === "function") this._ask(query, cb);
  }

  _ask(query, cb) {
    if (this.closed) throw useAfterClose();
    if (this._question) {
      this.prompt();
      return;
    }
    this._oldPrompt = this._prompt;
    this.setPrompt(query);
    this._question = cb;
    this.prompt();
  }

  _writeToOutput(s) {
    if (typeof s !== "string") throw invalidArgType("stringToWrite", "of type string", s);
    if (this.output !== null && this.output !== undefined) this.output.write(s);
  }

  _onLine(line) {
    if (this._question) {
      const cb = this._question;
      this._question = null;
      this.setPrompt(this._oldPrompt);
      cb(line);
    } else {
      this.emit("line", line);
    }
  }

  // _normalWrite splits what came in into lines: a "\r" at the end of one
  // chunk and a "\n" at the start of the next, crlfDelay apart at most, are
  // one line ending.
  _normalWrite(chunk) {
    if (chunk === undefined) return;
    let s = this._decode(chunk);
    if (this._sawReturnAt && Date.now() - this._sawReturnAt <= this.crlfDelay) {
      if (s.codePointAt(0) === 10) s = s.slice(1);
      this._sawReturnAt = 0;
    }
    lineEnding.lastIndex = 0;
    let m = lineEnding.exec(s);
    if (m === null) {
      if (s) this._buffer = this._buffer ? this._buffer + s : s;
      return;
    }
    if (this._buffer) {
      s = this._buffer + s;
      this._buffer = null;
      lineEnding.lastIndex = 0;
      m = lineEnding.exec(s);
    }
    this._sawReturnAt = s.endsWith("\r") ? Date.now() : 0;
    const ends = [0, m.index, lineEnding.lastIndex];
    while ((m = lineEnding.exec(s)) !== null) ends.push(m.index, lineEnding.lastIndex);
    const last = ends.length - 1;
    this._buffer = s.slice(ends[last]);
    for (let i = 1; i < last; i += 2) {
      this._onLine(s.slice(ends[i - 1], ends[i]));
    }
  }

  write(data) {
    if (this.closed) throw useAfterClose();
    if (this.paused) this.resume();
    this._normalWrite(data);
  }

  pause() {
    if (this.paused) return this;
    this.input.pause();
    this.paused = true;
    this.emit("pause");
    return this;
  }

  resume() {
    if (!this.paused) return this;
    this.input.resume();
    this.paused = false;
    this.emit("resume");
    return this;
  }

  close() {
    if (this.closed) return;
    this.pause();
    this.closed = true;
    this.emit("close");
  }

  getCursorPos() { return { rows: 0, cols: this.cursor }; }

  // The async iterator yields the lines as they come, from when it is made;
  // a backlog of more than 1024 lines pauses the input until it is read.
  [Symbol.asyncIterator]() {
    if (this._lines === undefined) this._lines = lineIterator(this);
    return this._lines;
  }
}

function lineIterator(rl) {
  const queue = [];
  const waiting = [];
  let done = false, error = null;
  const settle = () => {
    while (waiting.length > 0 && (queue.length > 0 || done || error)) {
      const { resolve, reject } = waiting.shift();
      if (queue.length > 0) {
        resolve({ value: queue.shift(), done: false });
        if (queue.length < 1 && rl.paused && !rl.closed) rl.resume();
      } else if (error) {
        const e = error;
        error = null;
        done = true;
        reject(e);
      } else resolve({ value: undefined, done: true });
    }
  };
  const online = (line) => {
    queue.push(line);
    if (queue.length > 1024) rl.pause();
    settle();
  };
  const onclose = () => { done = true; cleanup(); settle(); };
  const onerror = (e) => { error = e; cleanup(); settle(); };
  const cleanup = () => {
    rl.removeListener("line", online);
    rl.removeListener("close", onclose);
    rl.removeListener("error", onerror);
  };
  rl.on("line", online);
  rl.on("close", onclose);
  rl.on("error", onerror);
  return {
    next() {
      if (queue.length > 0) {
        const value = queue.shift();
        if (queue.length < 1 && rl.paused && !rl.closed) rl.resume();
        return Promise.resolve({ value, done: false });
      }
      if (error) {
        const e = error;
        error = null;
        done = true;
        return Promise.reject(e);
      }
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    return() {
      done = true;
      cleanup();
      rl.close();
      settle();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(e) {
      cleanup();
      rl.close();
      return Promise.reject(e);
    },
    [Symbol.asyncIterator]() { return this; },
  };
}

function createInterface(input, output, completer, terminal) {
  return new Interface(input, output, completer, terminal);
}

// The cursor functions write the terminal's escape sequences to the stream,
// terminal or not, as node's do.
const CSI = "\x1b[";
function writeTo(stream, data, cb) {
  if (stream === null || stream === undefined) {
    if (typeof cb === "function") bridge.nextTick(cb, [null]);
    return true;
  }
  return stream.write(data, cb);
}
function cursorTo(stream, x, y, cb) {
  if (typeof y === "function") { cb = y; y = undefined; }
  if (Number.isNaN(x) || Number.isNaN(y)) throw invalidArgType("x", "a number", x);
  if (typeof x !== "number") throw invalidArgType("x", "of type number", x);
  const data = typeof y !== "number" ? CSI + (x + 1) + "G" : CSI + (y + 1) + ";" + (x + 1) + "H";
  return writeTo(stream, data, cb);
}
function moveCursor(stream, dx, dy, cb) {
  if (!dx && !dy) {
    if (typeof cb === "function") bridge.nextTick(cb, [null]);
    return true;
  }
  let data = "";
  if (dx < 0) data += CSI + -dx + "D";
  else if (dx > 0) data += CSI + dx + "C";
  if (dy < 0) data += CSI + -dy + "A";
  else if (dy > 0) data += CSI + dy + "B";
  return writeTo(stream, data, cb);
}
function clearLine(stream, dir, cb) {
  const data = dir < 0 ? CSI + "1K" : dir > 0 ? CSI + "0K" : CSI + "2K";
  return writeTo(stream, data, cb);
}
function clearScreenDown(stream, cb) {
  return writeTo(stream, CSI + "0J", cb);
}
// emitKeypressEvents decodes keys from a terminal; there is none, and a
// stream that is not one gives no keypresses in node either.
function emitKeypressEvents() {}

module.exports = {
  Interface, createInterface, cursorTo, moveCursor, clearLine, clearScreenDown, emitKeypressEvents,
};
Object.defineProperty(module.exports, "promises", {
  get: () => require("node:readline/promises"), enumerable: true, configurable: true,
});
