"use strict";
// Intl.Collator, which FormatJS does not provide: ECMA-402's option
// handling here, the comparison itself by Go's golang.org/x/text/collate
// (the Unicode Collation Algorithm with CLDR's tailorings) through the
// host's intl.collate. Its locales are those x/text tailors (intl.collations),
// matched as ECMA-402's lookup matcher does; a language it has no tailoring
// for resolves to the default locale, where ICU would name the language and
// use the root order, which x/text's root is too.

module.exports = function collator(lib, bridge) {
  const slots = new WeakMap();
  let available = null; // the host's tailored locales (without -u- variants)
  const availableLocales = () => {
    if (available === null) available = new Set(JSON.parse(bridge.intl("collations")));
    return available;
  };

  function option(options, key, type, values, fallback) {
    let v = options[key];
    if (v === undefined) return fallback;
    if (type === "boolean") v = Boolean(v);
    else v = String(v);
    if (values !== undefined && !values.includes(v)) {
      throw new RangeError("Value " + v + " out of range for Intl.Collator options property " + key);
    }
    return v;
  }

  // lookup is ECMA-402's BestAvailableLocale over the tag's prefixes.
  function lookup(tag) {
    let candidate = tag;
    for (;;) {
      if (availableLocales().has(candidate)) return candidate;
      let i = candidate.lastIndexOf("-");
      if (i < 0) return undefined;
      if (i >= 2 && candidate[i - 2] === "-") i -= 2;
      candidate = candidate.slice(0, i);
    }
  }

  // unicodeKeywords are the -u- keywords of a tag, by key ("" for a key
  // without a value, which means "true").
  function unicodeKeywords(tag) {
    const out = new Map();
    const parts = tag.toLowerCase().split("-");
    const u = parts.indexOf("u");
    if (u < 0) return out;
    let key = null;
    for (let i = u + 1; i < parts.length && parts[i].length > 1; i++) {
      if (parts[i].length === 2) { key = parts[i]; out.set(key, ""); } else if (key !== null) out.set(key, out.get(key) === "" ? parts[i] : out.get(key) + "-" + parts[i]);
    }
    return out;
  }
  const stripExtensions = (tag) => tag.split(/-[0-9a-wyz]-/i)[0].split(/-x-/i)[0];

  function Collator(locales, options) {
    if (new.target === undefined) return new Collator(locales, options);
    const requested = lib.getCanonicalLocales(locales);
    options = options === undefined ? Object.create(null) : Object(options);
    const usage = option(options, "usage", "string", ["sort", "search"], "sort");
    option(options, "localeMatcher", "string", ["lookup", "best fit"], "best fit");
    const collationOption = option(options, "collation", "string", undefined, undefined);
    if (collationOption !== undefined && !/^[a-z0-9]{3,8}(-[a-z0-9]{3,8})*$/i.test(collationOption)) {
      throw new RangeError("Invalid collation : " + collationOption);
    }
    const numericOption = option(options, "numeric", "boolean", undefined, undefined);
    const caseFirstOption = option(options, "caseFirst", "string", ["upper", "lower", "false"], undefined);

    let locale, keywords = new Map();
    for (const tag of requested) {
      const found = lookup(stripExtensions(tag));
      if (found !== undefined) { locale = found; keywords = unicodeKeywords(tag); break; }
    }
    if (locale === undefined) locale = "en-US";
    // Keywords of the tag the options do not override stay in the locale.
    const extension = [];
    let numeric = false, caseFirst = "false", collation = "default";
    if (keywords.has("co")) {
      const co = keywords.get("co");
      if (collationOption === undefined && availableLocales().has(locale + "-u-co-" + co)) { collation = co; extension.push("co-" + co); }
    }
    if (collationOption !== undefined && availableLocales().has(locale + "-u-co-" + collationOption)) collation = collationOption;
    if (keywords.has("kf") && ["upper", "lower", "false"].includes(keywords.get("kf") || "true")) {
      const kf = keywords.get("kf");
      if (caseFirstOption === undefined || caseFirstOption === kf) { caseFirst = kf; extension.push("kf-" + kf); }
    }
    if (caseFirstOption !== undefined) caseFirst = caseFirstOption;
    if (keywords.has("kn") && ["", "true", "false"].includes(keywords.get("kn"))) {
      const kn = keywords.get("kn") !== "false";
      if (numericOption === undefined || numericOption === kn) { numeric = kn; extension.push(kn ? "kn" : "kn-false"); }
    }
    if (numericOption !== undefined) numeric = numericOption;
    const sensitivity = option(options, "sensitivity", "string", ["base", "accent", "case", "variant"], usage === "sort" ? "variant" : "variant");
    const ignorePunctuation = option(options, "ignorePunctuation", "boolean", undefined, false);

    slots.set(this, {
      locale: extension.length > 0 ? locale + "-u-" + extension.join("-") : locale,
      usage, sensitivity, ignorePunctuation, collation, numeric, caseFirst,
      // What the host collates with: the tailoring and the options.
      spec: [collation === "default" ? locale : locale + "-u-co-" + collation, sensitivity, numeric ? "1" : "0", caseFirst, ignorePunctuation ? "1" : "0"],
      bound: undefined,
    });
  }
  const slot = (c, what) => {
    const s = typeof c === "object" && c !== null ? slots.get(c) : undefined;
    if (s === undefined) throw new TypeError("Method Intl.Collator.prototype." + what + " called on incompatible receiver " + String(c));
    return s;
  };

  const compareGetter = Object.getOwnPropertyDescriptor({
    get compare() {
      const s = slot(this, "compare");
      if (s.bound === undefined) {
        const spec = s.spec;
        s.bound = (x, y) => {
          x = String(x); y = String(y);
          if (x === y) return 0;
          return Number(bridge.intl("collate", spec[0], spec[1], spec[2], spec[3], spec[4], x.toWellFormed(), y.toWellFormed()));
        };
        Object.defineProperty(s.bound, "name", { value: "" });
      }
      return s.bound;
    },
  }, "compare").get;
  Object.defineProperty(Collator.prototype, "compare", { get: compareGetter, enumerable: false, configurable: true });
  Object.defineProperty(Collator.prototype, "resolvedOptions", {
    value: function resolvedOptions() {
      const s = slot(this, "resolvedOptions");
      return {
        locale: s.locale, usage: s.usage, sensitivity: s.sensitivity, ignorePunctuation: s.ignorePunctuation,
        collation: s.collation, numeric: s.numeric, caseFirst: s.caseFirst,
      };
    },
    writable: true, enumerable: false, configurable: true,
  });
  Object.defineProperty(Collator.prototype, Symbol.toStringTag, { value: "Intl.Collator", configurable: true });
  Object.defineProperty(Collator, "supportedLocalesOf", {
    value: function supportedLocalesOf(locales, options) {
      if (options !== undefined) option(Object(options), "localeMatcher", "string", ["lookup", "best fit"], "best fit");
      return lib.getCanonicalLocales(locales).filter((tag) => lookup(stripExtensions(tag)) !== undefined);
    },
    writable: true, enumerable: false, configurable: true,
  });
  Object.defineProperty(Collator, "length", { value: 0, configurable: true });
  return Collator;
};
