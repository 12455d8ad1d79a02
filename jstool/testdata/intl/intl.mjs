// A table of Intl calls, run in wasmgate and in node (TZ=UTC,
// LANG=en_US.UTF-8) by jstool's TestIntlGivesWhatNodeGives, which requires
// the same result for each, or the reason it differs.
const d = new Date(Date.UTC(2024, 0, 15, 13, 5, 9, 7));
const d2 = new Date(Date.UTC(2024, 2, 3, 8, 30, 0, 0));
const calls = {
  // The namespace and the locale-sensitive built-ins.
  "Intl.names": () => Object.getOwnPropertyNames(Intl),
  "Intl.tag": () => Object.prototype.toString.call(Intl),
  "Date.toString": () => String(d),
  "Date.toTimeString": () => d.toTimeString(),
  "Date.toLocaleString": () => d.toLocaleString(),
  "Date.toLocaleDateString de-DE": () => d.toLocaleDateString("de-DE"),
  "Date.toLocaleTimeString en-US 2-digit": () => d.toLocaleTimeString("en-US", { hour: "2-digit", minute: "2-digit" }),
  "Date.toLocaleString invalid": () => new Date(NaN).toLocaleString(),
  "Number.toLocaleString": () => (1234567.891).toLocaleString(),
  "Number.toLocaleString de": () => (1234567.891).toLocaleString("de"),
  "Number.toLocaleString currency": () => (-5.5).toLocaleString("en-US", { style: "currency", currency: "USD" }),
  "BigInt.toLocaleString": () => (12345678901234567890n).toLocaleString(),
  "Array.toLocaleString": () => [1234.5, d, null, "x"].toLocaleString(),
  "String.localeCompare": () => ["a".localeCompare("B"), "a".localeCompare("A"), "a".localeCompare("á"), "b".localeCompare("a"), "a".localeCompare("a")],
  "String.localeCompare sorts": () => ["z", "é", "e", "E", "a", "Z", "ä", "10", "9", "_x", "b"].sort((x, y) => x.localeCompare(y)),

  // DateTimeFormat
  "dtf default": () => new Intl.DateTimeFormat().format(d),
  "dtf de-DE": () => new Intl.DateTimeFormat("de-DE").format(d),
  "dtf fr long": () => new Intl.DateTimeFormat("fr", { dateStyle: "long" }).format(d),
  "dtf ja-JP medium": () => new Intl.DateTimeFormat("ja-JP", { dateStyle: "medium", timeStyle: "medium" }).format(d),
  "dtf en full+long": () => new Intl.DateTimeFormat("en-US", { dateStyle: "full", timeStyle: "long" }).format(d),
  "dtf en medium+short New York": () => new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeStyle: "short", timeZone: "America/New_York" }).format(d),
  "dtf en Tokyo zone name": () => new Intl.DateTimeFormat("en-US", { hour: "numeric", timeZone: "Asia/Tokyo", timeZoneName: "short" }).format(d),
  "dtf en weekday month day": () => new Intl.DateTimeFormat("en-US", { weekday: "long", month: "long", day: "numeric" }).format(d),
  "dtf de weekday month day": () => new Intl.DateTimeFormat("de", { weekday: "short", month: "short", day: "2-digit" }).format(d),
  "dtf en h23": () => new Intl.DateTimeFormat("en-US", { hour: "numeric", minute: "2-digit", hourCycle: "h23" }).format(d),
  "dtf en hour12 false": () => new Intl.DateTimeFormat("en-US", { hour: "2-digit", minute: "2-digit", hour12: false }).format(d),
  "dtf en fractional seconds": () => new Intl.DateTimeFormat("en-US", { minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 }).format(d),
  "dtf en formatToParts": () => new Intl.DateTimeFormat("en-US", { hour: "numeric", minute: "2-digit" }).formatToParts(d),
  "dtf en formatRange": () => new Intl.DateTimeFormat("en-US", { month: "short", day: "numeric" }).formatRange(d, d2),
  "dtf resolvedOptions default": () => new Intl.DateTimeFormat().resolvedOptions(),
  "dtf resolvedOptions de": () => new Intl.DateTimeFormat("de-DE", { month: "long", timeZone: "Europe/Berlin" }).resolvedOptions(),
  "dtf bad time zone": () => new Intl.DateTimeFormat("en", { timeZone: "Mars/Olympus" }),
  "dtf supportedLocalesOf": () => Intl.DateTimeFormat.supportedLocalesOf(["de-DE", "fr", "ja-JP"]),

  // NumberFormat
  "nf default": () => new Intl.NumberFormat().format(1234567.891),
  "nf de-DE": () => new Intl.NumberFormat("de-DE").format(1234567.891),
  "nf fr": () => new Intl.NumberFormat("fr").format(1234567.891),
  "nf ja-JP currency": () => new Intl.NumberFormat("ja-JP", { style: "currency", currency: "JPY" }).format(123456),
  "nf de-DE currency": () => new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(-1234.5),
  "nf en currency EUR": () => new Intl.NumberFormat("en-US", { style: "currency", currency: "EUR", currencyDisplay: "name" }).format(2),
  "nf en compact": () => [1234, 1234567, 0.5].map((n) => new Intl.NumberFormat("en-US", { notation: "compact" }).format(n)),
  "nf en compact long": () => new Intl.NumberFormat("en-US", { notation: "compact", compactDisplay: "long" }).format(1234567),
  "nf en unit": () => new Intl.NumberFormat("en-US", { style: "unit", unit: "kilometer-per-hour", unitDisplay: "long" }).format(50),
  "nf en percent": () => new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 2 }).format(0.12345),
  "nf en sign always": () => new Intl.NumberFormat("en-US", { signDisplay: "always" }).format(5),
  "nf en significant": () => new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 }).format(123456),
  "nf en scientific": () => new Intl.NumberFormat("en-US", { notation: "scientific" }).format(123456),
  "nf en min fraction": () => new Intl.NumberFormat("en-US", { minimumFractionDigits: 2 }).format(3),
  "nf en bigint": () => new Intl.NumberFormat("en-US").format(12345678901234567890n),
  "nf en formatToParts": () => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).formatToParts(-1234.56),
  "nf resolvedOptions": () => new Intl.NumberFormat().resolvedOptions(),
  "nf bad currency": () => new Intl.NumberFormat("en", { style: "currency" }),

  // PluralRules
  "pr en ordinal": () => [1, 2, 3, 4, 11, 22].map((n) => new Intl.PluralRules("en-US", { type: "ordinal" }).select(n)),
  "pr en cardinal": () => [0, 1, 2, 1.5].map((n) => new Intl.PluralRules("en").select(n)),
  "pr ru": () => [1, 2, 5, 21].map((n) => new Intl.PluralRules("ru").select(n)),
  "pr resolvedOptions": () => new Intl.PluralRules("en-US").resolvedOptions(),
  "pr resolvedOptions default": () => new Intl.PluralRules().resolvedOptions(),
  "dtf en formatRange times": () => new Intl.DateTimeFormat("en-US", { hour: "numeric", minute: "2-digit" }).formatRange(0, 5 * 3600e3),

  // RelativeTimeFormat
  "rtf en auto": () => new Intl.RelativeTimeFormat("en", { numeric: "auto" }).format(-1, "day"),
  "rtf en always": () => new Intl.RelativeTimeFormat("en").format(3, "hours"),
  "rtf de short": () => new Intl.RelativeTimeFormat("de", { style: "short" }).format(-2, "month"),
  "rtf en formatToParts": () => new Intl.RelativeTimeFormat("en").formatToParts(100, "day"),
  "rtf resolvedOptions": () => new Intl.RelativeTimeFormat().resolvedOptions(),

  // ListFormat
  "lf en": () => new Intl.ListFormat("en").format(["a", "b", "c"]),
  "lf en or": () => new Intl.ListFormat("en", { type: "disjunction" }).format(["a", "b", "c"]),
  "lf en unit narrow": () => new Intl.ListFormat("en", { type: "unit", style: "narrow" }).format(["1", "2", "3"]),
  "lf de": () => new Intl.ListFormat("de").format(["a", "b", "c"]),
  "lf ja": () => new Intl.ListFormat("ja").format(["a", "b", "c"]),
  "lf resolvedOptions": () => new Intl.ListFormat().resolvedOptions(),

  // DisplayNames
  "dn en region": () => new Intl.DisplayNames(["en"], { type: "region" }).of("DE"),
  "dn de region": () => new Intl.DisplayNames(["de"], { type: "region" }).of("US"),
  "dn en language": () => new Intl.DisplayNames(["en"], { type: "language" }).of("fr-CA"),
  "dn en currency": () => new Intl.DisplayNames(["en"], { type: "currency" }).of("EUR"),
  "dn en script": () => new Intl.DisplayNames(["en"], { type: "script" }).of("Latn"),
  "dn resolvedOptions": () => new Intl.DisplayNames(["en-US"], { type: "region" }).resolvedOptions(),

  // Segmenter
  "seg grapheme": () => [...new Intl.Segmenter("en", { granularity: "grapheme" }).segment("e\u0301👍🏽🇩🇪a")].map((s) => s.segment),
  "seg word": () => [...new Intl.Segmenter("en", { granularity: "word" }).segment("Hello, world! It's 3.14.")].map((s) => [s.segment, s.index, s.isWordLike]),
  "seg sentence": () => [...new Intl.Segmenter("en", { granularity: "sentence" }).segment("One. Two? Three!")].map((s) => s.segment),
  "seg resolvedOptions": () => new Intl.Segmenter().resolvedOptions(),

  // Collator
  "coll de sort": () => ["Äpfel", "Zebra", "apfel", "Bär", "Ähre"].sort(new Intl.Collator("de").compare),
  "coll sv sort": () => ["ä", "z", "a", "ö", "o"].sort(new Intl.Collator("sv").compare),
  "coll numeric": () => ["a10", "a9", "a100", "a1"].sort(new Intl.Collator("en", { numeric: true }).compare),
  "coll base": () => [new Intl.Collator("en", { sensitivity: "base" }).compare("a", "Á"), new Intl.Collator("en", { sensitivity: "accent" }).compare("a", "A"), new Intl.Collator("en", { sensitivity: "accent" }).compare("a", "á")],
  "coll caseFirst upper": () => ["a", "A", "b", "B"].sort(new Intl.Collator("en", { caseFirst: "upper" }).compare),
  "coll ignorePunctuation": () => new Intl.Collator("en", { ignorePunctuation: true }).compare("a-b", "ab"),
  "coll resolvedOptions": () => new Intl.Collator().resolvedOptions(),
  "coll resolvedOptions de-u-kn": () => new Intl.Collator("de-u-kn").resolvedOptions(),

  // Locales
  "getCanonicalLocales": () => Intl.getCanonicalLocales(["EN-us", "zh-hant-tw", "de-DE-u-co-phonebk"]),
  "getCanonicalLocales bad": () => Intl.getCanonicalLocales("en_US"),
  "Locale": () => { const l = new Intl.Locale("en-Latn-US", { calendar: "gregory", hourCycle: "h12" }); return [l.toString(), l.baseName, l.language, l.script, l.region, l.calendar, l.hourCycle]; },
  "Locale maximize minimize": () => [new Intl.Locale("zh-TW").maximize().toString(), new Intl.Locale("en-Latn-US").minimize().toString()],
  "supportedValuesOf calendar": () => Intl.supportedValuesOf("calendar"),
  "supportedValuesOf unit": () => Intl.supportedValuesOf("unit"),
};

// shape is a result as JSON keeps it: a plain object as its entries, so
// that the order of its keys is compared too (the pipeline sorts them), any
// other object as its tag.
function shape(v) {
  if (Array.isArray(v)) return v.map(shape);
  if (v !== null && typeof v === "object") {
    if (Object.getPrototypeOf(v) !== Object.prototype) return { object: Object.prototype.toString.call(v) };
    return { entries: Object.entries(v).map(([k, x]) => [k, shape(x)]) };
  }
  return v;
}

export function execute() {
  const out = {};
  for (const [name, call] of Object.entries(calls)) {
    try {
      out[name] = shape(call());
    } catch (e) {
      // The error's kind: its message is the engine's own wording.
      out[name] = { error: e.name };
    }
  }
  return out;
}
