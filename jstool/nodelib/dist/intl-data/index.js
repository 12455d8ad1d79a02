// The CLDR data wasmgate's Intl carries, from FormatJS's packages, by locale (see LICENSES.txt).
module.exports = {
  versions: {"@formatjs/bigdecimal":"0.2.7","@formatjs/fast-memoize":"3.1.7","@formatjs/intl-datetimeformat":"7.8.1","@formatjs/intl-displaynames":"7.3.15","@formatjs/intl-getcanonicallocales":"3.2.12","@formatjs/intl-listformat":"8.3.15","@formatjs/intl-locale":"5.3.12","@formatjs/intl-localematcher":"0.9.0","@formatjs/intl-numberformat":"9.4.3","@formatjs/intl-pluralrules":"6.3.16","@formatjs/intl-relativetimeformat":"13.0.1","@formatjs/intl-segmenter":"12.2.15","@formatjs/intl-supportedvaluesof":"2.3.11"},
  locales: {
    "en": () => require("wasmgate:lib/intl-data/en"),
    "en-GB": () => require("wasmgate:lib/intl-data/en-GB"),
    "de": () => require("wasmgate:lib/intl-data/de"),
    "fr": () => require("wasmgate:lib/intl-data/fr"),
    "es": () => require("wasmgate:lib/intl-data/es"),
    "it": () => require("wasmgate:lib/intl-data/it"),
    "pt": () => require("wasmgate:lib/intl-data/pt"),
    "nl": () => require("wasmgate:lib/intl-data/nl"),
    "ja": () => require("wasmgate:lib/intl-data/ja"),
    "zh": () => require("wasmgate:lib/intl-data/zh"),
    "zh-Hant": () => require("wasmgate:lib/intl-data/zh-Hant"),
    "ko": () => require("wasmgate:lib/intl-data/ko"),
    "ru": () => require("wasmgate:lib/intl-data/ru"),
  },
  timeZones: () => require("wasmgate:lib/intl-data/tz"),
};
