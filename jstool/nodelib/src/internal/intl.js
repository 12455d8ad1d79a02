"use strict";
// Intl, as Node 20 has it, for an engine built without it: FormatJS's
// ECMA-402 ponyfills (wasmgate:lib/intl, pinned by nodelib's lock file)
// given CLDR 48 data (wasmgate:lib/intl-data), and Intl.Collator on Go's
// golang.org/x/text/collate through the host (FormatJS has no collator).
// The default locale is en-US and the default time zone UTC, as node's
// with LANG=en_US.UTF-8 and TZ=UTC.
//
// Requiring this module also makes the engine's locale-sensitive methods
// (String.prototype.localeCompare, Number, BigInt, Date and Array
// toLocaleString, Date's toLocaleDateString and toLocaleTimeString) go
// through it, as they do in V8. A bundle gets it only when its code names
// Intl or calls one of them (see jstool/bundle.go): it is about a megabyte.
//
// en's data is registered, and each constructor run once, when the module
// loads, so a tool's snapshot holds them ready. The other carried locales
// are registered when a constructor is first asked for one (their data
// modules are parsed then), and a time zone is unpacked when first used.

const lib = require("wasmgate:lib/intl");
const data = require("wasmgate:lib/intl-data/index");
const bridge = globalThis[Symbol.for("wasmgate.node")];

const DEFAULT_LOCALE = "en-US";
const DEFAULT_TIME_ZONE = "UTC";

const Intl = {};
const method = (o, k, v) => Object.defineProperty(o, k, { value: v, writable: true, enumerable: false, configurable: true });
Object.defineProperty(Intl, Symbol.toStringTag, { value: "Intl", writable: false, enumerable: false, configurable: true });
// The ponyfills read each other through the global (new Intl.Locale(...),
// Intl.PluralRules in NumberFormat), so it exists before anything runs.
method(globalThis, "Intl", Intl);

// ---- locales ---------------------------------------------------------------

// The constructors that take CLDR data, by the names data modules use.
const DATA = ["NumberFormat", "DateTimeFormat", "PluralRules", "RelativeTimeFormat", "ListFormat", "DisplayNames"];
const carried = data.locales;
const carriedNames = Object.keys(carried);

const maxCache = new Map();
// maximize is the tag with its likely script and region (CLDR's likely
// subtags): "en" and "en-US" both give "en-Latn-US".
function maximize(tag) {
  let m = maxCache.get(tag);
  if (m === undefined) {
    try { m = new lib.Locale(tag).maximize().toString(); } catch { m = tag; }
    maxCache.set(tag, m);
  }
  return m;
}
const langScript = (max) => max.split("-").slice(0, 2).join("-");

const modules = new Map(); // carried locale → its data module, once registered
const pluralLocales = new Set(); // the registered locales with plural rules of their own
function register(locale) {
  let mod = modules.get(locale);
  if (mod === undefined) {
    mod = carried[locale]();
    for (const name of DATA) if (mod[name] !== undefined) lib[name].__addLocaleData(mod[name]);
    if (mod.PluralRules !== undefined) pluralLocales.add(locale);
    modules.set(locale, mod);
  }
  return mod;
}

// alias registers a carried locale's data under a tag CLDR does not tell
// apart from it (its default content: en-US for en, zh-TW for zh-Hant), so
// that, as in node, the tag resolves to itself. Plural rules are left out:
// ICU has them per language, and node resolves en-US to en for them.
const aliased = new Set();
function alias(tag, locale) {
  if (aliased.has(tag)) return;
  aliased.add(tag);
  const mod = register(locale);
  for (const name of DATA) {
    if (name === "PluralRules" || mod[name] === undefined) continue;
    lib[name].__addLocaleData({ data: mod[name].data, locale: tag });
  }
}

// want makes the data that serves a requested tag available before a
// constructor resolves it: the carried locale it names, the one it is the
// default content of, or the carried locale of its language and script
// (which the ponyfill's matcher then picks, as node picks the nearest).
const wanted = new Set();
function want(tag) {
  const base = tag.split(/-[0-9a-wyz]-/i)[0].split(/-x-/i)[0];
  if (wanted.has(base)) return;
  wanted.add(base);
  if (Object.prototype.hasOwnProperty.call(carried, base)) { register(base); return; }
  const max = maximize(base);
  let near = null;
  for (const locale of carriedNames) {
    const m = maximize(locale);
    if (m === max) { alias(base, locale); return; }
    if (near === null && langScript(m) === langScript(max)) near = locale;
  }
  if (near !== null) register(near);
}

function prepare(locales) {
  let list;
  try { list = lib.getCanonicalLocales(locales); } catch { return; } // the constructor throws it
  for (const tag of list) want(tag);
}

// ---- the constructors ------------------------------------------------------

// wrap is the constructor Intl shows for a ponyfill's: the same prototype
// and statics, its locales made available first. callable: may be called
// without new (NumberFormat, DateTimeFormat), as in V8.
// resolved, when set, makes resolvedOptions' object what V8 gives: its
// keys in V8's order, without those the ponyfill adds.
function wrap(name, Base, { callable = false, before = prepare, locales = (l) => l, resolved, after } = {}) {
  // A function, not a method: methods cannot be constructed.
  const C = {
    [name]: function (l, options) {
      if (new.target === undefined && !callable) throw new TypeError("Constructor Intl." + name + " requires 'new'");
      before(l);
      const made = Reflect.construct(Base, [locales(l), options], new.target === undefined ? C : new.target);
      if (after !== undefined) after(made, l);
      return made;
    },
  }[name];
  Object.defineProperty(C, "length", { value: 0, configurable: true });
  Object.defineProperty(C, "prototype", { value: Base.prototype, writable: false, enumerable: false, configurable: false });
  method(Base.prototype, "constructor", C);
  if (resolved !== undefined) {
    const own = Base.prototype.resolvedOptions;
    method(Base.prototype, "resolvedOptions", { resolvedOptions() { return resolved(own.call(this), this); } }.resolvedOptions);
  }
  const supported = Base.supportedLocalesOf;
  method(C, "supportedLocalesOf", {
    supportedLocalesOf(l, options) { before(l); return supported.call(Base, l, options); },
  }.supportedLocalesOf);
  return C;
}

const DateTimeFormat = lib.DateTimeFormat;
DateTimeFormat.__defaultTimeZone = DEFAULT_TIME_ZONE;

// The time zone database, each zone unpacked by the ponyfill's own
// unpacker when first used: unpacking all 450 at load costs 3·10⁹ fuel.
{
  const packed = data.timeZones();
  const zones = {};
  for (const z of packed.zones) {
    const zone = z.slice(0, z.indexOf("|"));
    Object.defineProperty(zones, zone, {
      enumerable: true,
      configurable: true,
      get() {
        DateTimeFormat.__addTZData({ abbrvs: packed.abbrvs, offsets: packed.offsets, zones: [z] });
        const value = DateTimeFormat.tzData[zone];
        DateTimeFormat.tzData = zones;
        Object.defineProperty(zones, zone, { value, enumerable: true, configurable: false, writable: false });
        return value;
      },
    });
  }
  DateTimeFormat.tzData = zones;
}

// Segmenter's ponyfill defaults to "en" (node: en-US) and carries its own
// list of locales; it takes no data.
const canonical = (l) => { try { return lib.getCanonicalLocales(l); } catch { return l; } };
const segmenterLocales = (l) => { const c = canonical(l); return Array.isArray(c) && c.length === 0 ? [DEFAULT_LOCALE] : l; };

// inOrder is o's keys in the order given, without those o lacks.
const inOrder = (keys) => (o) => {
  const out = {};
  for (const k of keys) if (o[k] !== undefined && o[k] !== null) out[k] = o[k];
  return out;
};
const NUMBER_KEYS = ["locale", "numberingSystem", "style", "currency", "currencyDisplay", "currencySign", "unit", "unitDisplay",
  "minimumIntegerDigits", "minimumFractionDigits", "maximumFractionDigits", "minimumSignificantDigits", "maximumSignificantDigits",
  "useGrouping", "notation", "compactDisplay", "signDisplay", "roundingMode", "roundingIncrement", "trailingZeroDisplay", "roundingPriority"];
// ICU has plural rules per language: node resolves en-US to en for them
// (the ponyfill registers en-US beside en), but names the default locale
// as it is.
const pluralDefault = new WeakSet(); // the PluralRules made without a locale
const pluralLocale = (o, rules) => {
  if (pluralDefault.has(rules)) return { ...o, locale: DEFAULT_LOCALE };
  let l = o.locale;
  while (!pluralLocales.has(l) && l.includes("-")) l = l.slice(0, l.lastIndexOf("-"));
  return { ...o, locale: pluralLocales.has(l) ? l : o.locale };
};
const PLURAL_KEYS = ["locale", "type", "minimumIntegerDigits", "minimumFractionDigits", "maximumFractionDigits",
  "minimumSignificantDigits", "maximumSignificantDigits", "pluralCategories"];

// V8's format (and so toLocaleString) prints a plain space where CLDR 42
// and later put U+202F (narrow no-break space) before AM and PM, for the
// web's sake; its formatToParts and formatRange keep U+202F. So does this.
const NNBSP = /\u202f/g;
const plainSpace = (s) => s.replace(NNBSP, " ");
{
  const proto = DateTimeFormat.prototype;
  const formatGet = Object.getOwnPropertyDescriptor(proto, "format").get;
  const bound = new WeakMap();
  Object.defineProperty(proto, "format", {
    enumerable: false, configurable: true,
    get: Object.getOwnPropertyDescriptor({ get format() {
      const f = formatGet.call(this);
      let g = bound.get(f);
      if (g === undefined) {
        g = (date) => plainSpace(f(date));
        Object.defineProperty(g, "name", { value: "" });
        bound.set(f, g);
      }
      return g;
    } }, "format").get,
  });
}

method(Intl, "getCanonicalLocales", { getCanonicalLocales(l) { return lib.getCanonicalLocales(l); } }.getCanonicalLocales);
method(Intl, "supportedValuesOf", { supportedValuesOf(key) { return lib.supportedValuesOf(key); } }.supportedValuesOf);
method(Intl, "DateTimeFormat", wrap("DateTimeFormat", DateTimeFormat, { callable: true }));
method(Intl, "NumberFormat", wrap("NumberFormat", lib.NumberFormat, { callable: true, resolved: inOrder(NUMBER_KEYS) }));
method(Intl, "Collator", require("wasmgate:internal/intl_collator")(lib, bridge));
method(Intl, "PluralRules", wrap("PluralRules", lib.PluralRules, {
  resolved: (o, rules) => inOrder(PLURAL_KEYS)(pluralLocale(o, rules)),
  after(rules, l) { if (Array.isArray(canonical(l)) && canonical(l).length === 0) pluralDefault.add(rules); },
}));
method(Intl, "RelativeTimeFormat", wrap("RelativeTimeFormat", lib.RelativeTimeFormat));
method(Intl, "ListFormat", wrap("ListFormat", lib.ListFormat));
method(Intl, "Locale", lib.Locale);
method(Intl, "DisplayNames", wrap("DisplayNames", lib.DisplayNames, { resolved: inOrder(["locale", "style", "type", "fallback", "languageDisplay"]) }));
method(Intl, "Segmenter", wrap("Segmenter", lib.Segmenter, { before: () => {}, locales: segmenterLocales }));

// en is always there, and en-US, the default, resolves to itself.
want(DEFAULT_LOCALE);
for (const name of DATA) lib[name].__defaultLocale = DEFAULT_LOCALE;

// ---- the locale-sensitive built-ins -----------------------------------------

// A formatter made with no locales and no options (what toLocaleString()
// uses) is kept, as V8 keeps its own: making one costs the ponyfill far
// more than formatting with it.
const kept = new Map();
function formatter(kind, make, locales, options) {
  if (options !== undefined || (locales !== undefined && typeof locales !== "string")) return make();
  const key = kind + "\u0000" + (locales === undefined ? "" : locales);
  let f = kept.get(key);
  if (f === undefined) {
    f = make();
    if (kept.size < 64) kept.set(key, f);
  }
  return f;
}

// ToDateTimeOptions (ECMA-402): the fields a toLocale*String shows when
// its options name none.
function dateTimeOptions(options, required, defaults) {
  const o = options === undefined ? {} : Object(options);
  const copy = Object.create(o);
  let needDefaults = true;
  if (required === "date" || required === "any") {
    for (const k of ["weekday", "year", "month", "day"]) if (o[k] !== undefined) needDefaults = false;
  }
  if (required === "time" || required === "any") {
    for (const k of ["dayPeriod", "hour", "minute", "second", "fractionalSecondDigits"]) if (o[k] !== undefined) needDefaults = false;
  }
  const dateStyle = o.dateStyle, timeStyle = o.timeStyle;
  if (dateStyle !== undefined || timeStyle !== undefined) needDefaults = false;
  if (required === "date" && timeStyle !== undefined) throw new TypeError("Invalid option : timeStyle");
  if (required === "time" && dateStyle !== undefined) throw new TypeError("Invalid option : dateStyle");
  if (needDefaults && (defaults === "date" || defaults === "all")) {
    for (const k of ["year", "month", "day"]) copy[k] = "numeric";
  }
  if (needDefaults && (defaults === "time" || defaults === "all")) {
    for (const k of ["hour", "minute", "second"]) copy[k] = "numeric";
  }
  return copy;
}

const thisTime = Function.prototype.call.bind(Date.prototype.getTime);
function dateMethod(name, required, defaults) {
  method(Date.prototype, name, {
    [name](locales, options) {
      const t = thisTime(this);
      if (Number.isNaN(t)) return "Invalid Date";
      const f = formatter(name, () => new Intl.DateTimeFormat(locales, dateTimeOptions(options, required, defaults)), locales, options);
      return f.format(t);
    },
  }[name]);
}
dateMethod("toLocaleString", "any", "all");
dateMethod("toLocaleDateString", "date", "date");
dateMethod("toLocaleTimeString", "time", "time");

const thisNumber = Function.prototype.call.bind(Number.prototype.valueOf);
method(Number.prototype, "toLocaleString", {
  toLocaleString(locales, options) {
    const x = thisNumber(this);
    return formatter("number", () => new Intl.NumberFormat(locales, options), locales, options).format(x);
  },
}.toLocaleString);
const thisBigInt = Function.prototype.call.bind(BigInt.prototype.valueOf);
method(BigInt.prototype, "toLocaleString", {
  toLocaleString(locales, options) {
    const x = thisBigInt(this);
    return formatter("number", () => new Intl.NumberFormat(locales, options), locales, options).format(x);
  },
}.toLocaleString);

const toStr = (v) => {
  if (v === null || v === undefined) throw new TypeError("String.prototype.localeCompare called on null or undefined");
  return String(v);
};
method(String.prototype, "localeCompare", {
  localeCompare(that, locales, options) {
    const s = toStr(this);
    return formatter("collator", () => new Intl.Collator(locales, options), locales, options).compare(s, String(that));
  },
}.localeCompare);

// Array.prototype.toLocaleString passes its arguments on to each element's
// toLocaleString, as ECMA-402 says (the engine's passes none).
method(Array.prototype, "toLocaleString", {
  toLocaleString(locales, options) {
    const a = Object(this);
    const n = Math.min(Math.max(Math.trunc(Number(a.length)) || 0, 0), Number.MAX_SAFE_INTEGER);
    let s = "";
    for (let i = 0; i < n; i++) {
      if (i > 0) s += ",";
      const e = a[i];
      if (e !== undefined && e !== null) s += String(Object(e).toLocaleString(locales, options));
    }
    return s;
  },
}.toLocaleString);

// ---- warm-up -------------------------------------------------------------
// Each constructor once with the defaults, at load: the ponyfills build
// their tables for a locale when first used (DateTimeFormat parses every
// skeleton of it), which would otherwise cost each execution again.
new Intl.DateTimeFormat().format(0);
new Intl.DateTimeFormat(DEFAULT_LOCALE, { dateStyle: "full", timeStyle: "full" }).format(0);
new Intl.NumberFormat().format(1.5);
new Intl.PluralRules().select(1);
new Intl.RelativeTimeFormat().format(1, "day");
new Intl.ListFormat().format(["a", "b"]);
new Intl.DisplayNames(undefined, { type: "region" }).of("US");
Array.from(new Intl.Segmenter(undefined, { granularity: "word" }).segment("a b"));
// And the formatters the built-ins keep for their defaults.
new Date(0).toLocaleString();
new Date(0).toLocaleDateString();
new Date(0).toLocaleTimeString();
(0).toLocaleString();
"a".localeCompare("b");

module.exports = { Intl };
