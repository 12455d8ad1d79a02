"use strict";
// JSON.parse's errors in V8's words. The engine's parser and V8's find the
// same inputs malformed, but say so differently ("unexpected data at the
// end" where node 20 says "Unexpected non-whitespace character after JSON
// at position 4", " (line 1 column 5)" after a position, which V8 11 does
// not add), and libraries show or test the message (parse-json prints it).
//
// A successful parse goes straight to the engine's: the wrapper costs it one
// call. Only when the engine throws a SyntaxError is the text scanned again,
// here, the way V8's JsonParser (src/json/json-parser.cc) walks it, to find
// where it stops and which of its messages it gives there; that message
// replaces the engine's. A reviver's own SyntaxError finds the text valid
// and is left as thrown. A bundle gets this module when its code names JSON
// (see jstool/bundle.go).
const engineParse = JSON.parse;

// V8 gives context around the unexpected token only for a text of at
// least 21 characters, 10 on each side.
const CONTEXT = 10;
const MIN_LENGTH_FOR_CONTEXT = 2 * CONTEXT + 1;

// unexpected is V8's message for an unexpected character (LookUpErrorMessageForJsonToken):
// the kind of token the character starts decides the wording.
function unexpected(text, pos) {
  if (pos >= text.length) return "Unexpected end of JSON input";
  const c = text.charCodeAt(pos);
  if (c === 0x22) return "Unexpected string in JSON at position " + pos;
  if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return "Unexpected number in JSON at position " + pos;
  if (text === "[object Object]" || text === "undefined" || text === "Infinity" || text === "NaN") {
    return "\"" + text + "\" is not valid JSON";
  }
  const token = "Unexpected token '" + text[pos] + "', ";
  if (text.length < MIN_LENGTH_FOR_CONTEXT) return token + "\"" + text + "\" is not valid JSON";
  if (pos < CONTEXT) return token + "\"" + text.slice(0, pos + CONTEXT) + "\"... is not valid JSON";
  if (pos < text.length - CONTEXT) {
    return token + "...\"" + text.slice(pos - CONTEXT, pos + CONTEXT) + "\"... is not valid JSON";
  }
  return token + "...\"" + text.slice(pos - CONTEXT) + "\" is not valid JSON";
}

// v8Message is the message V8 gives for text, or "" when V8 would parse it.
function v8Message(text) {
  const n = text.length;
  let i = 0;
  const at = (message) => message + " in JSON at position " + i;
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      i++;
    }
  };
  const isDigit = (c) => c >= 0x30 && c <= 0x39;
  // string scans a string whose opening quote is at i; "" when it is well formed.
  const string = () => {
    i++;
    for (;;) {
      if (i >= n) return at("Unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) { i++; return ""; }
      if (c < 0x20) return at("Bad control character in string literal");
      if (c !== 0x5c) { i++; continue; }
      i++;
      if (i >= n) return unexpected(text, i);
      const e = text.charCodeAt(i);
      if (e === 0x75) {
        for (let k = 0; k < 4; k++) {
          i++;
          const h = i < n ? text.charCodeAt(i) : -1;
          const hex = isDigit(h) || (h >= 0x41 && h <= 0x46) || (h >= 0x61 && h <= 0x66);
          if (!hex) return at("Bad Unicode escape");
        }
        i++;
        continue;
      }
      if (e > 0xff) return unexpected(text, i);
      if ("\"\\/bfnrt".indexOf(text[i]) < 0) return at("Bad escaped character");
      i++;
    }
  };
  const number = () => {
    if (text.charCodeAt(i) === 0x2d) i++;
    if (text.charCodeAt(i) === 0x30) {
      i++;
      if (isDigit(text.charCodeAt(i))) return "Unexpected number in JSON at position " + i;
    } else {
      if (!isDigit(text.charCodeAt(i))) return at("No number after minus sign");
      while (isDigit(text.charCodeAt(i))) i++;
    }
    if (text.charCodeAt(i) === 0x2e) {
      i++;
      if (!isDigit(text.charCodeAt(i))) return at("Unterminated fractional number");
      while (isDigit(text.charCodeAt(i))) i++;
    }
    if ((text.charCodeAt(i) | 0x20) === 0x65) {
      i++;
      if (text.charCodeAt(i) === 0x2b || text.charCodeAt(i) === 0x2d) i++;
      if (!isDigit(text.charCodeAt(i))) return at("Exponent part is missing a number");
      while (isDigit(text.charCodeAt(i))) i++;
    }
    return "";
  };
  const literal = (word) => {
    for (let k = 1; k < word.length; k++) {
      i++;
      if (i >= n) return unexpected(text, i);
      if (text[i] !== word[k]) return unexpected(text, i);
    }
    i++;
    return "";
  };
  // value scans one value at i (whitespace skipped); the containers it
  // opens are on stack, as V8's continuation stack.
  const stack = [];
  for (;;) {
    // Produce a value.
    let err = "";
    for (;;) {
      ws();
      const c = i < n ? text[i] : "";
      if (c === "\"") err = string();
      else if (c === "-" || (c >= "0" && c <= "9")) err = number();
      else if (c === "t") err = literal("true");
      else if (c === "f") err = literal("false");
      else if (c === "n") err = literal("null");
      else if (c === "{") {
        i++;
        ws();
        if (text[i] === "}") { i++; break; }
        stack.push("}");
        if (text[i] !== "\"") return at("Expected property name or '}'");
        err = string();
        if (err) return err;
        ws();
        if (text[i] !== ":") return at("Expected ':' after property name");
        i++;
        continue;
      } else if (c === "[") {
        i++;
        ws();
        if (text[i] === "]") { i++; break; }
        stack.push("]");
        continue;
      } else return unexpected(text, i);
      break;
    }
    if (err) return err;
    // Consume it: close the containers it completes.
    for (;;) {
      if (stack.length === 0) {
        ws();
        return i < n ? "Unexpected non-whitespace character after JSON at position " + i : "";
      }
      ws();
      if (text[i] === ",") {
        i++;
        if (stack[stack.length - 1] === "}") {
          ws();
          if (text[i] !== "\"") return at("Expected double-quoted property name");
          err = string();
          if (err) return err;
          ws();
          // Only the first property's colon has a message of its own.
          if (text[i] !== ":") return unexpected(text, i);
          i++;
        }
        break;
      }
      const close = stack.pop();
      if (text[i] !== close) {
        return at(close === "}" ? "Expected ',' or '}' after property value" : "Expected ',' or ']' after array element");
      }
      i++;
    }
  }
}

Object.defineProperty(JSON, "parse", {
  value: {
    parse(text, reviver) {
      // Converted once, as the engine would: a toString is called once.
      const source = typeof text === "string" ? text : `${text}`;
      try {
        return engineParse(source, reviver);
      } catch (e) {
        if (e instanceof SyntaxError) {
          const message = v8Message(source);
          if (message !== "") {
            Object.defineProperty(e, "message", { value: message, writable: true, enumerable: false, configurable: true });
          }
        }
        throw e;
      }
    },
  }.parse,
  writable: true, enumerable: false, configurable: true,
});
