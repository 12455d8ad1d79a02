"use strict";
// The legacy RegExp statics V8 has and the engine lacks: RegExp.$1–$9,
// input ($_), lastMatch ($&), lastParen ($+), leftContext ($`) and
// rightContext ($'), accessors on RegExp as in Node (not enumerable,
// configurable; input's setter sets it, the others' do nothing). Each
// successful match of a RegExp updates them, as V8's built-in exec does:
// the engine's exec, test, String.prototype.match, matchAll, replace,
// replaceAll, search and split all reach RegExp.prototype.exec, so
// wrapping it is enough.
//
// The wrapper costs every match a call and a copy of its captures (5% of
// marked's fuel on a markdown document, 1% of markdown-it's), so a bundle
// gets this module only when its code names a static (see jstool/bundle.go).
const nativeExec = RegExp.prototype.exec;
const execOn = Function.prototype.call.bind(nativeExec);

// What the last successful match saw: the captures (copied: the caller may
// change the array), where it began, its subject; input is apart, since
// RegExp.input can be set.
let captures = [""], at = 0, subject = "", input = "";

Object.defineProperty(RegExp.prototype, "exec", {
  value: {
    exec(string) {
      const m = execOn(this, string);
      if (m !== null) {
        captures = m.slice();
        at = m.index;
        input = subject = m.input;
      }
      return m;
    },
  }.exec,
  writable: true, enumerable: false, configurable: true,
});

const capture = (i) => {
  const c = i < captures.length ? captures[i] : undefined;
  return c === undefined ? "" : c;
};
const statics = {
  input: [() => input, (v) => { input = `${v}`; }],
  lastMatch: [() => capture(0)],
  lastParen: [() => (captures.length > 1 ? capture(captures.length - 1) : "")],
  leftContext: [() => subject.slice(0, at)],
  rightContext: [() => subject.slice(at + captures[0].length)],
};
const aliases = { input: "$_", lastMatch: "$&", lastParen: "$+", leftContext: "$`", rightContext: "$'" };
const define = (name, get, set) => {
  // Named as V8 names them: "get input", "set $1".
  const accessors = Object.getOwnPropertyDescriptor({
    get [name]() { return get(); },
    set [name](v) { if (set !== undefined) set(v); },
  }, name);
  Object.defineProperty(RegExp, name, { get: accessors.get, set: accessors.set, enumerable: false, configurable: true });
};
for (const name of Object.keys(statics)) {
  const [get, set] = statics[name];
  define(name, get, set);
  define(aliases[name], get, set);
}
for (let i = 1; i <= 9; i++) define("$" + i, () => capture(i));
