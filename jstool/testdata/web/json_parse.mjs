// JSON.parse's errors: a table of malformed texts (each of V8's messages,
// the context V8 shows around a token at each end and in the middle, for
// texts of 20 and 21 characters), then texts made by breaking valid ones
// at random (a seeded generator: the same texts in node and wasmgate). Each
// entry is JSON.stringify'd, so that a lone surrogate in a text or message
// stays JSON (a broken text is not echoed: its message is).
const table = [
  "", " ", "\n\t", "{", "[", "{\"a\":", "{\"a\":}", "{\"a\":1", "{\"a\":1,", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
  "{a:1}", "{'a':1}", "{,}", "[1,]", "[,1]", "[1 2]", "[1,2", "\"abc", "\"a\nb\"", "\"\t\"", "\"\\x\"", "\"\\",
  "\"\\u12\"", "\"\\u12g4\"", "\"\\ud83d\\ude00\"x", "01", "-01", "1.", "1.e5", "-", "-a", "--1", ".5", "+1", "1e", "1e+", "1E-x",
  "0x10", "tru", "trux", "tr ue", "t", "nul", "nulL", "falsey", "fals", "true false", "null x", "1 2", "123abc", "\"abc\"def",
  "NaN", "Infinity", "-Infinity", "undefined", "[object Object]", "\u00a0 1", "\u0000", "[\u0001]", "{\"a\u0001\":1}",
  "\"\ud83d", "\ud83d\ude00", "{\"\\\ud83d\":1}", "{\"a\":[1,{\"b\":}]}", "{\"a\":1}}", "[1]]",
  "x".repeat(20), "x".repeat(21), "[1,2,3,4,5,6,7,8,,]", "[1,2,3,4,5,6,7,8,9,,]", "[,2,3,4,5,6,7,8,9,10]",
  "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,,15,16,17,18,19,20]", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,,]",
  "\n\n  {\n \"name\": \"x\",\n \"version\": 1.0.0\n}", "{\"" + "k".repeat(40) + "\":}", "[" + "1,".repeat(30) + "]",
];

// xorshift32, seeded: the same texts on every run.
let seed;
const next = (n) => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const valid = [
  "{\"name\":\"wasmgate\",\"tags\":[\"a\",\"b\"],\"n\":-12.5e3,\"ok\":true,\"none\":null}",
  "[1, 2.5, -0, 1e10, \"s\\n\\u0041\", {\"k\": [false, true]}, []]",
  " { \"nested\" : { \"deeper\" : [ [ 1 ] , { } ] } } ",
];
const noise = ["", "{", "}", "[", "]", ",", ":", "\"", "\\", "-", "0", "1", ".", "e", "+", "t", "n", "f", "x", " ", "\n", "\u0001", "\u00e9", "\ud83d"];
function fuzz(count) {
  const texts = [];
  for (let k = 0; k < count; k++) {
    let s = valid[next(valid.length)];
    for (let edits = 1 + next(3); edits > 0; edits--) {
      const at = next(s.length + 1);
      const cut = next(3);
      s = s.slice(0, at) + noise[next(noise.length)] + s.slice(Math.min(s.length, at + cut));
    }
    texts.push(s);
  }
  return texts;
}

function attempt(text, echo = true) {
  const shown = echo ? [text] : [];
  try {
    JSON.parse(text);
    return JSON.stringify([...shown, "parsed"]);
  } catch (e) {
    return JSON.stringify([...shown, e.name, e.message, e.constructor === SyntaxError]);
  }
}

// The input may ask for another seed and count (the test gives {}).
export function execute({ seed: first = 0x2545f491, count = 400 } = {}) {
  seed = first >>> 0 || 1;
  const reviverError = (() => {
    try {
      JSON.parse("{\"a\":1}", () => { throw new SyntaxError("from the reviver"); });
    } catch (e) {
      return e.message;
    }
  })();
  let converted = 0;
  const once = { toString() { converted++; return "{"; } };
  const onceMessage = (() => { try { JSON.parse(once); } catch (e) { return e.message; } })();
  return {
    table: table.map((text) => attempt(text)),
    fuzzed: fuzz(count).map((text) => attempt(text, false)),
    reviverError,
    onceMessage,
    converted,
    values: [undefined, null, 1, {}, [], true].map((v) => attempt(v)),
    revived: JSON.parse("{\"a\":[1,2]}", (k, v) => (typeof v === "number" ? v * 10 : v)),
    shape: [JSON.parse.name, JSON.parse.length, typeof JSON.parse.prototype, Object.getOwnPropertyDescriptor(JSON, "parse").enumerable],
  };
}
