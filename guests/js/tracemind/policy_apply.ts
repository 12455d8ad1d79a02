// policy.apply: evaluates the policy TraceMind's compiler bakes into an IR's
// constants.policy (a compiled PDL policy: arms, evaluate, emit) against the
// step's values, as TraceMind's own runtime does (tm/dsl/runtime.py,
// _PolicyRunner).
//
// Input:  {values: any JSON, constants: {policyRef, policy: {policy: {id,
//          params: {arms, epsilon, evaluate, emit}}}}}
//         (wasmgate's runtime adds the IR's constants to every "policy."
//         step's input)
// Output: the evaluated emit object, plus policy_id when it sets none.
//
// The statements: assignment {target, expression} (operators = and :=),
// if {condition, then, else}, and choose {options}, which takes its first
// option (the "exploit" arm) as TraceMind's runtime does: exploration with
// probability epsilon is not simulated, so a run is reproducible.
//
// Expressions are a small Python-like language, evaluated here (never by
// eval): numbers, strings, true/false/null (and True/False/None), names,
// a.b and a[i], calls of coalesce, first_numeric, random (its first option,
// as TraceMind's runtime does), min, max, abs, round, float, int, str, len;
// + - * / %, comparisons (< <= > >= == != in), not/and/or (and ! && ||),
// lists [...] and objects {key: value}. Numbers the compiler wrote as
// strings ("75.0") compare and compute as numbers.
//
// Names: the variables assigned so far, values, epsilon and arms: arms.NAME
// is the arm NAME, arms.active the arm named "default" if there is one, else
// the first arm. An expression that does not evaluate fails the step with a
// message naming it (TraceMind's runtime would use the expression's text as
// its value instead).

type Value = null | boolean | number | string | Value[] | { [k: string]: Value };
type Obj = { [k: string]: Value };

interface Params {
  values?: Value;
  constants?: { policyRef?: string; policy?: Obj };
}

export function execute({ values = null, constants }: Params) {
  if (!isObject(constants) || !isObject(constants.policy)) {
    throw new TypeError(
      'policy.apply: the input has no "constants" with a "policy": the runtime adds the IR\'s constants to a policy step\'s input',
    );
  }
  const baked = constants.policy as Obj;
  const policy = (isObject(baked.policy) ? baked.policy : baked) as Obj;
  const params = (isObject(policy.params) ? policy.params : {}) as Obj;
  const arms = isObject(params.arms) ? (params.arms as Obj) : {};
  const armNames = Object.keys(arms);
  const active = "default" in arms ? arms.default : armNames.length > 0 ? arms[armNames[0]] : {};

  const env: Obj = {
    values,
    epsilon: params.epsilon ?? null,
    arms: { ...arms, active },
  };
  const scope: Obj = {};
  const evaluate = Array.isArray(params.evaluate) ? params.evaluate : [];
  for (const stmt of evaluate) run(stmt, scope, env);

  const emitted = emitValue(params.emit ?? {}, scope, env, "emit");
  const policyId = policy.id ?? constants.policyRef ?? null;
  if (isObject(emitted)) {
    const out = emitted as Obj;
    if (!("policy_id" in out)) out.policy_id = policyId;
    console.log(`policy ${policyId}: ${JSON.stringify(out.action ?? null)}`);
    return out;
  }
  return { result: emitted, policy_id: policyId };
}

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// --- statements ---

function run(stmt: Value, scope: Obj, env: Obj): void {
  if (!isObject(stmt)) throw new TypeError(`policy.apply: a statement must be an object, not ${JSON.stringify(stmt)}`);
  const where = stmt.line != null ? ` (${stmt.filename ?? "policy"}:${stmt.line})` : "";
  switch (stmt.type) {
    case "assignment": {
      if (typeof stmt.target !== "string" || typeof stmt.expression !== "string") {
        throw new TypeError(`policy.apply: an assignment needs a target and an expression${where}`);
      }
      scope[stmt.target] = evalExpr(stmt.expression, scope, env, where);
      return;
    }
    case "if": {
      if (typeof stmt.condition !== "string") throw new TypeError(`policy.apply: an if needs a condition${where}`);
      const branch = truthy(evalExpr(stmt.condition, scope, env, where)) ? stmt.then : stmt.else;
      for (const child of Array.isArray(branch) ? branch : []) run(child, scope, env);
      return;
    }
    case "choose": {
      const options = Array.isArray(stmt.options) ? stmt.options : [];
      const first = options.find((o) => isObject(o) && typeof o.expression === "string") as Obj | undefined;
      if (first === undefined) return;
      const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(:=|=(?!=))(.*)$/s.exec(first.expression as string);
      if (m === null) {
        throw new SyntaxError(`policy.apply: choose option ${JSON.stringify(first.name)} is not an assignment: ${first.expression}${where}`);
      }
      scope[m[1]] = evalExpr(m[3], scope, env, where);
      return;
    }
  }
  throw new TypeError(`policy.apply: unknown statement type ${JSON.stringify(stmt.type)}${where}`);
}

function emitValue(v: Value, scope: Obj, env: Obj, path: string): Value {
  if (typeof v === "string") return evalExpr(v, scope, env, ` (${path})`);
  if (Array.isArray(v)) return v.map((e, i) => emitValue(e, scope, env, `${path}[${i}]`));
  if (isObject(v)) {
    const out: Obj = {};
    for (const [k, e] of Object.entries(v)) out[k] = emitValue(e, scope, env, `${path}.${k}`);
    return out;
  }
  return v;
}

// --- expressions ---

type Node =
  | { t: "lit"; v: Value }
  | { t: "name"; name: string }
  | { t: "get"; obj: Node; key: Node; text: string }
  | { t: "call"; fn: string; args: Node[] }
  | { t: "un"; op: string; x: Node }
  | { t: "bin"; op: string; a: Node; b: Node }
  | { t: "list"; items: Node[] }
  | { t: "obj"; entries: [string, Node][] };

function evalExpr(text: string, scope: Obj, env: Obj, where: string): Value {
  try {
    return evaluate(new Parser(text).parse(), scope, env);
  } catch (e) {
    throw new Error(`policy.apply: cannot evaluate ${JSON.stringify(text)}${where}: ${(e as Error).message}`);
  }
}

const TOKEN = /\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|([A-Za-z_][A-Za-z0-9_]*)|(>=|<=|==|!=|&&|\|\||[-+*/%<>!()[\]{}.,:]))/y;

type Token = { kind: "num" | "str" | "id" | "op" | "end"; text: string; at: number };

class Parser {
  private tokens: Token[] = [];
  private i = 0;

  constructor(private src: string) {
    TOKEN.lastIndex = 0;
    let at = 0;
    for (;;) {
      if (/^\s*$/.test(src.slice(at))) break;
      TOKEN.lastIndex = at;
      const m = TOKEN.exec(src);
      if (m === null) throw new SyntaxError(`unexpected character at ${at + 1}: ${JSON.stringify(src.slice(at).trimStart()[0])}`);
      const kind = m[1] !== undefined ? "num" : m[2] !== undefined ? "str" : m[3] !== undefined ? "id" : "op";
      this.tokens.push({ kind, text: m[1] ?? m[2] ?? m[3] ?? m[4], at: at + 1 });
      at = TOKEN.lastIndex;
    }
    this.tokens.push({ kind: "end", text: "", at: src.length + 1 });
  }

  parse(): Node {
    const n = this.or();
    this.expect("end");
    return n;
  }

  private peek(): Token {
    return this.tokens[this.i];
  }
  private is(text: string): boolean {
    const t = this.peek();
    return (t.kind === "op" || t.kind === "id") && t.text === text;
  }
  private take(text: string): boolean {
    if (!this.is(text)) return false;
    this.i++;
    return true;
  }
  private expect(what: string): Token {
    const t = this.peek();
    if (what === "end" ? t.kind !== "end" : t.text !== what || t.kind === "str") {
      throw new SyntaxError(`expected ${what === "end" ? "the end" : JSON.stringify(what)} at ${t.at}, found ${t.kind === "end" ? "the end" : JSON.stringify(t.text)}`);
    }
    this.i++;
    return t;
  }

  private or(): Node {
    let a = this.and();
    while (this.take("or") || this.take("||")) a = { t: "bin", op: "or", a, b: this.and() };
    return a;
  }
  private and(): Node {
    let a = this.not();
    while (this.take("and") || this.take("&&")) a = { t: "bin", op: "and", a, b: this.not() };
    return a;
  }
  private not(): Node {
    if (this.take("not") || this.take("!")) return { t: "un", op: "not", x: this.not() };
    return this.comparison();
  }
  private comparison(): Node {
    let a = this.additive();
    for (;;) {
      const t = this.peek();
      if (t.kind === "op" && ["<", "<=", ">", ">=", "==", "!="].includes(t.text)) {
        this.i++;
        a = { t: "bin", op: t.text, a, b: this.additive() };
      } else if (this.take("in")) {
        a = { t: "bin", op: "in", a, b: this.additive() };
      } else if (this.is("not") && this.tokens[this.i + 1].text === "in") {
        this.i += 2;
        a = { t: "un", op: "not", x: { t: "bin", op: "in", a, b: this.additive() } };
      } else {
        return a;
      }
    }
  }
  private additive(): Node {
    let a = this.multiplicative();
    for (;;) {
      if (this.take("+")) a = { t: "bin", op: "+", a, b: this.multiplicative() };
      else if (this.take("-")) a = { t: "bin", op: "-", a, b: this.multiplicative() };
      else return a;
    }
  }
  private multiplicative(): Node {
    let a = this.unary();
    for (;;) {
      const t = this.peek();
      if (t.kind === "op" && ["*", "/", "%"].includes(t.text)) {
        this.i++;
        a = { t: "bin", op: t.text, a, b: this.unary() };
      } else {
        return a;
      }
    }
  }
  private unary(): Node {
    if (this.take("-")) return { t: "un", op: "-", x: this.unary() };
    if (this.take("+")) return { t: "un", op: "+", x: this.unary() };
    return this.postfix();
  }
  private postfix(): Node {
    let n = this.primary();
    for (;;) {
      if (this.take(".")) {
        const t = this.peek();
        if (t.kind !== "id") throw new SyntaxError(`expected a name after "." at ${t.at}`);
        this.i++;
        n = { t: "get", obj: n, key: { t: "lit", v: t.text }, text: `.${t.text}` };
      } else if (this.take("[")) {
        const key = this.or();
        this.expect("]");
        n = { t: "get", obj: n, key, text: "[...]" };
      } else if (this.is("(")) {
        if (n.t !== "name") throw new SyntaxError(`only a function name can be called, at ${this.peek().at}`);
        this.i++;
        const args: Node[] = [];
        if (!this.take(")")) {
          do args.push(this.or());
          while (this.take(","));
          this.expect(")");
        }
        n = { t: "call", fn: n.name, args };
      } else {
        return n;
      }
    }
  }
  private primary(): Node {
    const t = this.peek();
    this.i++;
    switch (t.kind) {
      case "num":
        return { t: "lit", v: Number(t.text) };
      case "str":
        return { t: "lit", v: unquote(t.text) };
      case "id":
        switch (t.text) {
          case "true":
          case "True":
            return { t: "lit", v: true };
          case "false":
          case "False":
            return { t: "lit", v: false };
          case "null":
          case "None":
            return { t: "lit", v: null };
        }
        return { t: "name", name: t.text };
      case "op":
        if (t.text === "(") {
          const n = this.or();
          this.expect(")");
          return n;
        }
        if (t.text === "[") {
          const items: Node[] = [];
          if (!this.take("]")) {
            do items.push(this.or());
            while (this.take(","));
            this.expect("]");
          }
          return { t: "list", items };
        }
        if (t.text === "{") {
          const entries: [string, Node][] = [];
          if (!this.take("}")) {
            do {
              const k = this.peek();
              if (k.kind !== "id" && k.kind !== "str") throw new SyntaxError(`expected a key at ${k.at}`);
              this.i++;
              this.expect(":");
              entries.push([k.kind === "str" ? unquote(k.text) : k.text, this.or()]);
            } while (this.take(","));
            this.expect("}");
          }
          return { t: "obj", entries };
        }
    }
    throw new SyntaxError(`unexpected ${t.kind === "end" ? "end" : JSON.stringify(t.text)} at ${t.at}`);
  }
}

function unquote(s: string): string {
  return s.slice(1, -1).replace(/\\(.)/gs, (_, c: string) => ({ n: "\n", t: "\t", r: "\r" })[c] ?? c);
}

function evaluate(n: Node, scope: Obj, env: Obj): Value {
  switch (n.t) {
    case "lit":
      return n.v;
    case "name":
      if (n.name in scope) return scope[n.name];
      if (n.name in env) return env[n.name];
      throw new ReferenceError(`unknown name ${JSON.stringify(n.name)}`);
    case "get": {
      const obj = evaluate(n.obj, scope, env);
      const key = evaluate(n.key, scope, env);
      if (Array.isArray(obj) && typeof key === "number" && Number.isInteger(key)) {
        const i = key < 0 ? obj.length + key : key;
        if (i < 0 || i >= obj.length) throw new RangeError(`index ${key} is out of range`);
        return obj[i];
      }
      if (isObject(obj) && typeof key === "string") {
        if (!(key in obj)) throw new ReferenceError(`no field ${JSON.stringify(key)}`);
        return obj[key];
      }
      throw new TypeError(`cannot take ${JSON.stringify(key)} of ${typeName(obj)}`);
    }
    case "call":
      return call(n.fn, n.args.map((a) => evaluate(a, scope, env)));
    case "un": {
      const x = evaluate(n.x, scope, env);
      if (n.op === "not") return !truthy(x);
      const v = number(x, n.op);
      return n.op === "-" ? -v : v;
    }
    case "bin": {
      if (n.op === "and") {
        const a = evaluate(n.a, scope, env);
        return truthy(a) ? evaluate(n.b, scope, env) : a;
      }
      if (n.op === "or") {
        const a = evaluate(n.a, scope, env);
        return truthy(a) ? a : evaluate(n.b, scope, env);
      }
      return binary(n.op, evaluate(n.a, scope, env), evaluate(n.b, scope, env));
    }
    case "list":
      return n.items.map((i) => evaluate(i, scope, env));
    case "obj": {
      const out: Obj = {};
      for (const [k, v] of n.entries) out[k] = evaluate(v, scope, env);
      return out;
    }
  }
}

// numeric reads a number, or a string holding one (the compiler writes
// numbers as strings); null otherwise.
function numeric(v: Value): number | null {
  if (typeof v === "number") return v;
  if (typeof v === "string" && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v)) return Number(v);
  return null;
}

function number(v: Value, op: string): number {
  const n = numeric(v);
  if (n === null) throw new TypeError(`${op} needs a number, not ${typeName(v)}`);
  return n;
}

function binary(op: string, a: Value, b: Value): Value {
  const na = numeric(a);
  const nb = numeric(b);
  switch (op) {
    case "==":
      return equal(a, b);
    case "!=":
      return !equal(a, b);
    case "<":
    case "<=":
    case ">":
    case ">=": {
      let c: number;
      if (na !== null && nb !== null) c = na - nb;
      else if (typeof a === "string" && typeof b === "string") c = a < b ? -1 : a > b ? 1 : 0;
      else throw new TypeError(`cannot compare ${typeName(a)} with ${typeName(b)}`);
      return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
    }
    case "in":
      if (Array.isArray(b)) return b.some((x) => equal(x, a));
      if (typeof b === "string" && typeof a === "string") return b.includes(a);
      if (isObject(b) && typeof a === "string") return a in b;
      throw new TypeError(`cannot look for ${typeName(a)} in ${typeName(b)}`);
    case "+":
      if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
      if (na !== null && nb !== null) return na + nb;
      if (typeof a === "string" && typeof b === "string") return a + b;
      throw new TypeError(`cannot add ${typeName(a)} and ${typeName(b)}`);
    case "-":
      return number(a, op) - number(b, op);
    case "*":
      return number(a, op) * number(b, op);
    case "/": {
      const d = number(b, op);
      if (d === 0) throw new RangeError("division by zero");
      return number(a, op) / d;
    }
    case "%": {
      const d = number(b, op);
      if (d === 0) throw new RangeError("modulo by zero");
      return number(a, op) % d;
    }
  }
  throw new SyntaxError(`unknown operator ${op}`);
}

function equal(a: Value, b: Value): boolean {
  const na = numeric(a);
  const nb = numeric(b);
  if (na !== null && nb !== null && (typeof a === "number" || typeof b === "number")) return na === nb;
  return JSON.stringify(a) === JSON.stringify(b);
}

function truthy(v: Value): boolean {
  if (v === null || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObject(v)) return Object.keys(v).length > 0;
  return true;
}

function typeName(v: Value): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  return `${typeof v === "string" ? "the string" : "the " + typeof v} ${JSON.stringify(v)}`;
}

function empty(v: Value): boolean {
  return v === null || v === "" || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
}

function call(fn: string, args: Value[]): Value {
  const arity = (n: number) => {
    if (args.length !== n) throw new TypeError(`${fn}() takes ${n} argument(s), not ${args.length}`);
  };
  switch (fn) {
    case "coalesce":
      return args.find((a) => !empty(a)) ?? null;
    case "first_numeric": {
      arity(1);
      const items = Array.isArray(args[0]) ? args[0] : isObject(args[0]) ? Object.values(args[0]) : [];
      for (const item of items) {
        const n = numeric(item);
        if (n !== null) return n;
      }
      return null;
    }
    case "random": {
      // TraceMind's runtime picks the first option: runs stay reproducible.
      arity(1);
      const options = args[0];
      return Array.isArray(options) && options.length > 0 ? options[0] : null;
    }
    case "min":
    case "max": {
      const items = args.length === 1 && Array.isArray(args[0]) ? args[0] : args;
      if (items.length === 0) throw new TypeError(`${fn}() of nothing`);
      const nums = items.map((i) => number(i, fn));
      return fn === "min" ? Math.min(...nums) : Math.max(...nums);
    }
    case "abs":
      arity(1);
      return Math.abs(number(args[0], fn));
    case "round":
      arity(1);
      return Math.round(number(args[0], fn));
    case "float":
      arity(1);
      return number(args[0], fn);
    case "int":
      arity(1);
      return Math.trunc(number(args[0], fn));
    case "str":
      arity(1);
      return typeof args[0] === "string" ? args[0] : JSON.stringify(args[0]);
    case "len":
      arity(1);
      if (Array.isArray(args[0]) || typeof args[0] === "string") return args[0].length;
      if (isObject(args[0])) return Object.keys(args[0]).length;
      throw new TypeError(`len() of ${typeName(args[0])}`);
  }
  throw new ReferenceError(`unknown function ${fn}()`);
}
