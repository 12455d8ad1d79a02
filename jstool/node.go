package jstool

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
)

// Node's built-ins, as a tool's bundle gets them. wasmgate's own modules
// (nodelib/src, in git) are bundled from source; the third-party libraries
// they stand on are installed from npm by a lock file and bundled into
// nodelib/dist by scripts/build-nodelib.sh, which is committed (CI builds it
// again and fails on any difference) so that `go get` needs no make step.
// The generator empties dist before it writes, so what is embedded is what
// it wrote; naming LICENSES.txt makes a build without dist fail to compile.
// A tool's bundle holds only the built-ins it imports, and only the globals
// it names (esbuild's inject drops the others).
//
//go:embed all:nodelib/src nodelib/dist nodelib/dist/LICENSES.txt
var nodelibFS embed.FS

// nodeModules maps a built-in's name (without "node:") to the source file
// under nodelib/src that implements it.
var nodeModules = map[string]string{
	"_stream_duplex":      "_stream_duplex.js",
	"_stream_passthrough": "_stream_passthrough.js",
	"_stream_readable":    "_stream_readable.js",
	"_stream_transform":   "_stream_transform.js",
	"_stream_writable":    "_stream_writable.js",
	"assert":              "assert.js",
	"assert/strict":       "assert_strict.js",
	"async_hooks":         "async_hooks.js",
	"buffer":              "buffer.js",
	"console":             "console.js",
	"constants":           "constants.js",
	"crypto":              "crypto.js",
	"diagnostics_channel": "diagnostics_channel.js",
	"events":              "events.js",
	"module":              "module.js",
	"os":                  "os.js",
	"path":                "path.js",
	"path/posix":          "path_posix.js",
	"perf_hooks":          "perf_hooks.js",
	"process":             "process.js",
	"punycode":            "punycode.js",
	"querystring":         "querystring.js",
	"readline":            "readline.js",
	"readline/promises":   "readline_promises.js",
	"stream":              "stream.js",
	"stream/consumers":    "stream_consumers.js",
	"stream/promises":     "stream_promises.js",
	"string_decoder":      "string_decoder.js",
	"sys":                 "util.js",
	"timers":              "timers.js",
	"timers/promises":     "timers_promises.js",
	"tty":                 "tty.js",
	"url":                 "url.js",
	"util":                "util.js",
	"util/types":          "util_types.js",
	"worker_threads":      "worker_threads.js",
	"zlib":                "zlib.js",
}

// deniedModule is a built-in that loads but refuses every call.
type deniedModule struct {
	// values are JavaScript expressions for what a library may read at load
	// (constants, flags), by property name.
	values map[string]string
	// promises: every function rejects instead of throwing.
	promises bool
	// unavailable: refused as not available (ERR_FEATURE_UNAVAILABLE_ON_PLATFORM)
	// rather than as I/O (ERR_ACCESS_DENIED).
	unavailable bool
	// overrides is a JavaScript expression for the functions that work in
	// some cases (see internal/denied.js), "" for none.
	overrides string
}

const fsConstants = `Object.freeze({F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, ` +
	`O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512, O_APPEND: 1024, O_DIRECTORY: 65536, O_NOFOLLOW: 131072, O_SYNC: 1052672, ` +
	`S_IFMT: 61440, S_IFREG: 32768, S_IFDIR: 16384, S_IFLNK: 40960, COPYFILE_EXCL: 1, COPYFILE_FICLONE: 2, ` +
	`UV_FS_O_FILEMAP: 0})`

// deniedModules are the built-ins that do I/O (ERR_ACCESS_DENIED) and those
// wasmgate does not provide (ERR_FEATURE_UNAVAILABLE_ON_PLATFORM).
var deniedModules = map[string]deniedModule{
	"fs": {values: map[string]string{"constants": fsConstants, "promises": `lazy(() => require("node:fs/promises"))`},
		overrides: `require("wasmgate:internal/fs_program")`},
	"fs/promises": {values: map[string]string{"constants": fsConstants}, promises: true,
		overrides: `require("wasmgate:internal/fs_program").promises`},
	"net":                {},
	"http":               {values: map[string]string{"METHODS": httpMethods, "STATUS_CODES": httpStatusCodes, "maxHeaderSize": "16384"}},
	"https":              {},
	"http2":              {values: map[string]string{"constants": "Object.freeze({})"}},
	"child_process":      {},
	"dns":                {values: map[string]string{"promises": `lazy(() => require("node:dns/promises"))`}},
	"dns/promises":       {promises: true},
	"tls":                {},
	"dgram":              {},
	"cluster":            {values: map[string]string{"isPrimary": "true", "isMaster": "true", "isWorker": "false", "workers": "Object.freeze({})"}},
	"sqlite":             {},
	"inspector":          {values: map[string]string{"console": "globalThis.console"}},
	"repl":               {},
	"domain":             {unavailable: true},
	"v8":                 {unavailable: true},
	"vm":                 {unavailable: true},
	"wasi":               {unavailable: true},
	"trace_events":       {unavailable: true},
	"path/win32":         {unavailable: true},
	"stream/web":         {unavailable: true},
	"inspector/promises": {promises: true},
}

const httpMethods = `Object.freeze(["ACL","BIND","CHECKOUT","CONNECT","COPY","DELETE","GET","HEAD","LINK","LOCK",` +
	`"M-SEARCH","MERGE","MKACTIVITY","MKCALENDAR","MKCOL","MOVE","NOTIFY","OPTIONS","PATCH","POST","PROPFIND",` +
	`"PROPPATCH","PURGE","PUT","QUERY","REBIND","REPORT","SEARCH","SOURCE","SUBSCRIBE","TRACE","UNBIND","UNLINK",` +
	`"UNLOCK","UNSUBSCRIBE"])`

const httpStatusCodes = `Object.freeze({100:"Continue",101:"Switching Protocols",102:"Processing",103:"Early Hints",` +
	`200:"OK",201:"Created",202:"Accepted",203:"Non-Authoritative Information",204:"No Content",205:"Reset Content",` +
	`206:"Partial Content",207:"Multi-Status",208:"Already Reported",226:"IM Used",300:"Multiple Choices",` +
	`301:"Moved Permanently",302:"Found",303:"See Other",304:"Not Modified",305:"Use Proxy",307:"Temporary Redirect",` +
	`308:"Permanent Redirect",400:"Bad Request",401:"Unauthorized",402:"Payment Required",403:"Forbidden",` +
	`404:"Not Found",405:"Method Not Allowed",406:"Not Acceptable",407:"Proxy Authentication Required",` +
	`408:"Request Timeout",409:"Conflict",410:"Gone",411:"Length Required",412:"Precondition Failed",` +
	`413:"Payload Too Large",414:"URI Too Long",415:"Unsupported Media Type",416:"Range Not Satisfiable",` +
	`417:"Expectation Failed",418:"I'm a Teapot",421:"Misdirected Request",422:"Unprocessable Entity",423:"Locked",` +
	`424:"Failed Dependency",425:"Too Early",426:"Upgrade Required",428:"Precondition Required",` +
	`429:"Too Many Requests",431:"Request Header Fields Too Large",451:"Unavailable For Legal Reasons",` +
	`500:"Internal Server Error",501:"Not Implemented",502:"Bad Gateway",503:"Service Unavailable",` +
	`504:"Gateway Timeout",505:"HTTP Version Not Supported",506:"Variant Also Negotiates",507:"Insufficient Storage",` +
	`508:"Loop Detected",509:"Bandwidth Limit Exceeded",510:"Not Extended",511:"Network Authentication Required"})`

// nodeGlobals are the globals a tool gets from a built-in when its code
// names them: the global's name, the module and the export ("" for the
// module itself), in the order they are installed.
var nodeGlobals = []struct{ name, module, export string }{
	{"Buffer", "node:buffer", "Buffer"},
	{"process", "node:process", ""},
	{"URL", "node:url", "URL"},
	{"URLSearchParams", "node:url", "URLSearchParams"},
	{"DOMException", "wasmgate:internal/dom_exception", "DOMException"},
	{"crypto", "node:crypto", "webcrypto"},
	{"Crypto", "wasmgate:internal/webcrypto", "Crypto"},
	{"CryptoKey", "wasmgate:internal/webcrypto", "CryptoKey"},
	{"SubtleCrypto", "wasmgate:internal/webcrypto", "SubtleCrypto"},
	{"structuredClone", "wasmgate:internal/structured_clone", "structuredClone"},
	{"AbortController", "wasmgate:lib/abort-controller", "AbortController"},
	{"AbortSignal", "wasmgate:lib/abort-controller", "AbortSignal"},
	{"EventTarget", "wasmgate:internal/event_target", "EventTarget"},
	{"Event", "wasmgate:internal/event_target", "Event"},
	{"MessageEvent", "wasmgate:internal/messaging", "MessageEvent"},
	{"MessageChannel", "wasmgate:internal/messaging", "MessageChannel"},
	{"MessagePort", "wasmgate:internal/messaging", "MessagePort"},
	{"BroadcastChannel", "wasmgate:internal/messaging", "BroadcastChannel"},
	// Intl is about a megabyte of FormatJS and CLDR data (see intl.js).
	{"Intl", "wasmgate:internal/intl", "Intl"},
}

// nodeFeatures are what V8 has and the engine lacks that would cost every
// bundle if always installed: the module that adds one is injected, before
// the bundle's own code, only when that code matches named.
var nodeFeatures = []nodeFeature{
	// RegExp.$1-$9, input ($_), lastMatch ($&), lastParen ($+), leftContext
	// ($`), rightContext ($'), or RegExp[...]: wrapping exec costs a
	// regex-heavy tool 1 to 5% of its fuel (see regexp_statics.js).
	{"wasmgate:internal/regexp_statics", regexp.MustCompile("\\bRegExp\\s*(?:\\.\\s*(?:\\$[1-9_&+'`]|input\\b|lastMatch\\b|lastParen\\b|leftContext\\b|rightContext\\b)|\\[)")},
	// util.types.isProxy: the engine cannot tell a proxy from JavaScript,
	// so the Proxy global remembers those it makes (see proxy_tracking.js).
	{"wasmgate:internal/proxy_tracking", regexp.MustCompile(`\bisProxy\b`)},
	// A call of a locale-sensitive method (x.localeCompare(...),
	// x.toLocaleString(...), …, or through .call, .apply, .bind): they go
	// through Intl in V8, so the bundle gets it (it is about a megabyte).
	{"wasmgate:internal/intl", regexp.MustCompile(`\.\s*(?:localeCompare|toLocale(?:Date|Time)?String)\s*(?:\(|\.\s*(?:call|apply|bind)\b)`)},
	// Date.prototype.toString and toTimeString end with the zone's name in
	// V8 ("GMT+0000 (Coordinated Universal Time)"), the engine's without.
	{"wasmgate:internal/date_zone_name", regexp.MustCompile(`\bDate\b`)},
	// JSON.parse's errors in V8's words: a wrapper that costs a parse one
	// call and rescans the text only when the engine refused it.
	{"wasmgate:internal/json_parse", regexp.MustCompile(`\bJSON\b`)},
}

// nodeFeature is a module injected into a bundle whose code matches named.
type nodeFeature struct {
	module string
	named  *regexp.Regexp
}

// IsNodeBuiltin reports whether name (with or without "node:") names a
// Node built-in module.
func IsNodeBuiltin(name string) bool {
	name = strings.TrimPrefix(name, "node:")
	if _, ok := nodeModules[name]; ok {
		return true
	}
	_, ok := deniedModules[name]
	return ok
}

// prefixOnly are the built-ins Node knows only with "node:": a bare name
// is a package.
var prefixOnly = map[string]bool{"sqlite": true}

// nodeNamespace holds the built-ins and wasmgate's modules behind them.
const nodeNamespace = "wasmgate-node"

// nodeFilter preselects the imports that may name a built-in (the callback
// decides); it is Go regexp syntax, which esbuild's Go API uses.
const nodeFilter = `^(node:.+|wasmgate:.+|_?[a-z][a-z0-9_]*(/[a-z0-9_]+)?)$`

// nodeBuiltinsPlugin resolves Node's built-ins as Node does: "node:NAME"
// and a bare NAME are the built-in, before any installed package of that
// name ("NAME/" is the package). An unknown "node:" name is an error.
var nodeBuiltinsPlugin = api.Plugin{
	Name: "wasmgate-node-builtins",
	Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: nodeFilter}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
			if strings.HasPrefix(args.Path, "wasmgate:") {
				// A feature module is there for what it does when it runs:
				// marked free of side effects, the bundle would drop it.
				side := api.SideEffectsFalse
				if slices.ContainsFunc(nodeFeatures, func(f nodeFeature) bool { return f.module == args.Path }) {
					side = api.SideEffectsTrue
				}
				return api.OnResolveResult{Path: args.Path, Namespace: nodeNamespace, SideEffects: side}, nil
			}
			name := strings.TrimPrefix(args.Path, "node:")
			if !IsNodeBuiltin(name) || prefixOnly[name] && !strings.HasPrefix(args.Path, "node:") {
				if strings.HasPrefix(args.Path, "node:") {
					return api.OnResolveResult{}, fmt.Errorf("no such built-in module: %s", args.Path)
				}
				return api.OnResolveResult{}, nil
			}
			return api.OnResolveResult{Path: "node:" + name, Namespace: nodeNamespace, SideEffects: api.SideEffectsFalse}, nil
		})
		b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: nodeNamespace}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
			src, err := nodeModuleSource(args.Path)
			if err != nil {
				return api.OnLoadResult{}, err
			}
			return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
		})
	},
}

// nodeModuleSource is the source of a module of the node namespace:
// "node:NAME" (a built-in), "wasmgate:lib/NAME" (a third-party library),
// "wasmgate:internal/NAME" and "wasmgate:globals/NAME" (an inject file).
func nodeModuleSource(path string) (string, error) {
	switch {
	case strings.HasPrefix(path, "node:"):
		name := strings.TrimPrefix(path, "node:")
		if file, ok := nodeModules[name]; ok {
			return readNodelib("nodelib/src/" + file)
		}
		if d, ok := deniedModules[name]; ok {
			return d.source(name), nil
		}
	case strings.HasPrefix(path, "wasmgate:lib/"):
		return readNodelib("nodelib/dist/" + strings.TrimPrefix(path, "wasmgate:lib/") + ".js")
	case strings.HasPrefix(path, "wasmgate:lazy/"):
		// A library kept as a string and evaluated when first asked for:
		// its parse is paid only by code that uses it (a program's console).
		src, err := readNodelib("nodelib/dist/" + strings.TrimPrefix(path, "wasmgate:lazy/") + ".js")
		if err != nil {
			return "", err
		}
		quoted, err := json.Marshal(src)
		if err != nil {
			return "", err
		}
		return "\"use strict\";\nlet lib = null;\nmodule.exports = () => {\n  if (lib === null) {\n    const m = { exports: {} };\n    new Function(\"module\", \"exports\", " + string(quoted) + ")(m, m.exports);\n    lib = m.exports;\n  }\n  return lib;\n};\n", nil
	case strings.HasPrefix(path, "wasmgate:internal/"):
		return readNodelib("nodelib/src/internal/" + strings.TrimPrefix(path, "wasmgate:internal/") + ".js")
	case strings.HasPrefix(path, globalsInstaller):
		return installerSource(strings.Split(strings.TrimPrefix(path, globalsInstaller), ","))
	}
	return "", fmt.Errorf("no module %s in wasmgate", path)
}

var nodelibCache sync.Map // path → string

func readNodelib(path string) (string, error) {
	if s, ok := nodelibCache.Load(path); ok {
		return s.(string), nil
	}
	b, err := fs.ReadFile(nodelibFS, path)
	if err != nil {
		return "", err
	}
	nodelibCache.Store(path, string(b))
	return string(b), nil
}

// source is the module that refuses every call of the built-in name.
func (d deniedModule) source(name string) string {
	keys := make([]string, 0, len(d.values))
	for k := range d.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var values strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&values, "%s: %s, ", strconv.Quote(k), d.values[k])
	}
	code := "ERR_ACCESS_DENIED"
	if d.unavailable {
		code = "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM"
	}
	overrides := "{}"
	if d.overrides != "" {
		overrides = d.overrides
	}
	return fmt.Sprintf(`"use strict";
const denied = require("wasmgate:internal/denied");
const lazy = denied.lazy;
module.exports = denied(%s, { values: { %s}, promises: %t, code: %s, overrides: %s });
`, strconv.Quote(name), values.String(), d.promises, strconv.Quote(code), overrides)
}

// globalsInstaller names the module that installs Node globals; the names
// follow, comma-separated.
const globalsInstaller = "wasmgate:globals/"

// installerSource is the module build injects first into a bundle that
// names Node globals: it installs them on globalThis, as Node's own
// globals are (writable, configurable, not enumerable), in the order of
// nodeGlobals, so that process and Buffer exist before the built-ins behind
// later ones run.
func installerSource(names []string) (string, error) {
	var b strings.Builder
	b.WriteString("// Node's globals this bundle names.\nconst define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });\n")
	for _, g := range nodeGlobals {
		if !slices.Contains(names, g.name) {
			continue
		}
		value := fmt.Sprintf("require(%s)", strconv.Quote(g.module))
		if g.export != "" {
			value += "." + g.export
		}
		fmt.Fprintf(&b, "define(%s, %s);\n", strconv.Quote(g.name), value)
	}
	b.WriteString("export {};\n")
	return b.String(), nil
}
