// The legacy RegExp statics (RegExp.$1-$9, input/$_, lastMatch/$&,
// lastParen/$+, leftContext/$`, rightContext/$') after each way a match is
// made, as V8 keeps them.
const statics = () => ({
  $1: RegExp.$1, $2: RegExp.$2, $3: RegExp.$3, $9: RegExp.$9,
  input: RegExp.input, $_: RegExp.$_, lastMatch: RegExp.lastMatch, "$&": RegExp["$&"],
  lastParen: RegExp.lastParen, "$+": RegExp["$+"], leftContext: RegExp.leftContext, "$`": RegExp["$`"],
  rightContext: RegExp.rightContext, "$'": RegExp["$'"],
});

export function execute() {
  const out = {};
  const after = (name, f) => {
    const r = f();
    out[name] = { result: r === undefined ? null : r, statics: statics() };
  };
  after("exec", () => /(\w+)@(\w+)\.com/.exec("mail ann@example.com now")[0]);
  after("failed match keeps the last", () => /zzz/.exec("nothing here"));
  after("test", () => /(b)(c)?/.test("abd"));
  after("match", () => "2024-05-06".match(/(\d+)-(\d+)/)[0]);
  after("match global", () => "a1 b2 c3".match(/([a-z])(\d)/g));
  after("matchAll", () => Array.from("k=1;v=2".matchAll(/(\w)=(\d)/g), (m) => m[0]));
  after("replace with a string", () => "John Smith".replace(/(\w+)\s(\w+)/, "$2, $1"));
  after("replace global with a function", () => "a1b2".replace(/[a-z](\d)/g, (m) => "<" + RegExp.$1 + RegExp.lastMatch + ">"));
  after("replaceAll", () => "x-y-z".replaceAll(/-(\w)/g, "+$1"));
  after("search", () => "find the needle".search(/ne(e)dle/));
  after("split", () => "a1b22c".split(/(\d+)/));
  after("eleven groups", () => /(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)/.exec("abcdefghijk").length);
  after("named and unmatched groups", () => /(?<first>x)|(y)/.exec("y")[0]);
  after("sticky and unicode", () => { const r = /(\u{1F600})/uy; r.lastIndex = 1; return r.exec("a\u{1F600}b")[1]; });
  after("a subclass", () => { class R extends RegExp {} return new R("(q+)").exec("aqqb")[1]; });
  RegExp.input = 42;
  RegExp.lastMatch = "ignored";
  RegExp.$1 = "ignored";
  out["the setters"] = statics();
  const d = Object.getOwnPropertyDescriptor(RegExp, "$1");
  const i = Object.getOwnPropertyDescriptor(RegExp, "input");
  out.descriptors = [typeof d.get, typeof d.set, d.enumerable, d.configurable, d.get.name, i.set.name,
    Object.getOwnPropertyNames(RegExp).filter((k) => k.startsWith("$") || /^(input|last|left|right)/.test(k))];
  out.exec = [RegExp.prototype.exec.name, RegExp.prototype.exec.length, "prototype" in RegExp.prototype.exec];
  return out;
}
