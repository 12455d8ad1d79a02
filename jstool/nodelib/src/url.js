"use strict";
// node:url: the legacy API from the url package, the WHATWG URL and
// URLSearchParams from whatwg-url (the standard's reference implementation).
const legacy = require("wasmgate:lib/url");
const whatwg = require("wasmgate:lib/whatwg-url");
const { invalidArgType } = require("wasmgate:internal/errors");
const { URL, URLSearchParams } = whatwg;
// Bundling the library renamed the classes (globals of their names are in
// scope there); their names are what util.inspect and messages show.
for (const [c, name] of [[URL, "URL"], [URLSearchParams, "URLSearchParams"]]) {
  if (c.name !== name) Object.defineProperty(c, "name", { value: name, configurable: true });
}
// util.inspect shows them as node does: a URL as an object of its parts,
// URLSearchParams as its pairs.
const custom = Symbol.for("nodejs.util.inspect.custom");
URL.prototype[custom] = function (depth, options, inspect) {
  const constructor = this.constructor || URL;
  // Past the depth node shows the URL itself, which has no own properties.
  if (typeof depth === "number" && depth < 0) return constructor.name + " {}";
  const parts = { __proto__: { constructor } };
  for (const k of ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "searchParams", "hash"]) {
    parts[k] = this[k];
  }
  return constructor.name + " " + inspect(parts, options);
};
URLSearchParams.prototype[custom] = function (depth, options, inspect) {
  if (typeof depth === "number" && depth < 0) return options.stylize("[Object]", "special");
  const inner = Object.assign({}, options);
  if (depth !== null) inner.depth = depth - 1;
  const pairs = [];
  for (const [k, v] of this) pairs.push(inspect(k, inner) + " => " + inspect(v, inner));
  const name = this.constructor.name;
  if (pairs.length === 0) return name + " {}";
  // The width of the pairs on one line, without color codes.
  const width = pairs.reduce((n, p) => n + p.replace(/\x1b\[\d\d?m/g, "").length + 2, -2);
  if (width > options.breakLength) return name + " {\n  " + pairs.join(",\n  ") + " }";
  return name + " { " + pairs.join(", ") + " }";
};
// globalThis.URL is a stand-in until now (see the prelude).
globalThis.URL = URL;
globalThis.URLSearchParams = URLSearchParams;

function domainToASCII(domain) {
  try { return new URL("ws://" + domain).hostname; } catch (_) { return ""; }
}
function domainToUnicode(domain) {
  const ascii = domainToASCII(domain);
  return ascii === "" ? "" : require("node:punycode").toUnicode(ascii);
}
function fileURLToPath(path) {
  const u = typeof path === "string" ? new URL(path) : path;
  if (!(u instanceof URL) && !(u && typeof u.href === "string")) throw invalidArgType("path", "of type string or an instance of URL", path);
  if (u.protocol !== "file:") {
    const e = new TypeError("The URL must be of scheme file");
    e.code = "ERR_INVALID_URL_SCHEME";
    throw e;
  }
  if (u.hostname !== "") {
    const e = new TypeError("File URL host must be \"localhost\" or empty on linux");
    e.code = "ERR_INVALID_FILE_URL_HOST";
    throw e;
  }
  const p = u.pathname;
  if (/%2f/i.test(p)) {
    const e = new TypeError("File URL path must not include encoded / characters");
    e.code = "ERR_INVALID_FILE_URL_PATH";
    throw e;
  }
  return decodeURIComponent(p);
}
function pathToFileURL(filepath) {
  const path = require("node:path");
  let resolved = path.resolve(filepath);
  if (filepath.endsWith("/") && !resolved.endsWith("/")) resolved += "/";
  const u = new URL("file://");
  u.pathname = resolved.replace(/%/g, "%25").replace(/\\/g, "%5C").replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/\t/g, "%09");
  return u;
}
function urlToHttpOptions(url) {
  const o = {
    protocol: url.protocol,
    hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    hash: url.hash, search: url.search, pathname: url.pathname,
    path: (url.pathname || "") + (url.search || ""), href: url.href,
  };
  if (url.port !== "") o.port = Number(url.port);
  if (url.username || url.password) o.auth = decodeURIComponent(url.username) + ":" + decodeURIComponent(url.password);
  return o;
}
function format(urlObject, options) {
  if (urlObject instanceof URL) {
    const o = Object.assign({ auth: true, fragment: true, search: true, unicode: false }, options);
    const u = new URL(urlObject.href);
    if (!o.auth) { u.username = ""; u.password = ""; }
    if (!o.fragment) u.hash = "";
    if (!o.search) u.search = "";
    let s = u.href;
    if (o.unicode && u.hostname !== "") s = s.replace(u.hostname, domainToUnicode(u.hostname));
    return s;
  }
  return legacy.format(urlObject);
}
module.exports = {
  Url: legacy.Url, parse: legacy.parse, resolve: legacy.resolve, resolveObject: legacy.resolveObject, format,
  URL, URLSearchParams, domainToASCII, domainToUnicode, fileURLToPath, pathToFileURL, urlToHttpOptions,
};
