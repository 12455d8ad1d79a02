package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Intl is FormatJS's ECMA-402 ponyfills (@formatjs/intl-*), bundled into
// dist/intl.js, and the CLDR data they are given, one module per carried
// locale under dist/intl-data/ plus the time zone database. The data
// modules are required lazily by wasmgate's glue (nodelib/src/internal/intl.js),
// so a locale costs a tool's snapshot only its source text until it is used.

// intlPackages are the ponyfills, by the Intl member each provides, with
// the export that is its class or function.
var intlPackages = []struct{ member, pkg, export string }{
	{"getCanonicalLocales", "@formatjs/intl-getcanonicallocales", "getCanonicalLocales"},
	{"Locale", "@formatjs/intl-locale", "Locale"},
	{"PluralRules", "@formatjs/intl-pluralrules", "PluralRules"},
	{"NumberFormat", "@formatjs/intl-numberformat", "NumberFormat"},
	{"DateTimeFormat", "@formatjs/intl-datetimeformat", "DateTimeFormat"},
	{"RelativeTimeFormat", "@formatjs/intl-relativetimeformat", "default"},
	{"ListFormat", "@formatjs/intl-listformat", "default"},
	{"DisplayNames", "@formatjs/intl-displaynames", "DisplayNames"},
	{"Segmenter", "@formatjs/intl-segmenter", "Segmenter"},
	{"supportedValuesOf", "@formatjs/intl-supportedvaluesof", "supportedValuesOf"},
	// Their shared dependencies, for the licenses.
	{"", "@formatjs/intl-localematcher", ""},
	{"", "@formatjs/bigdecimal", ""},
	{"", "@formatjs/fast-memoize", ""},
}

// intlDataPackages are the ponyfills that take per-locale data, by the
// constructor whose __addLocaleData takes it.
var intlDataPackages = []struct{ ctor, pkg string }{
	{"NumberFormat", "@formatjs/intl-numberformat"},
	{"DateTimeFormat", "@formatjs/intl-datetimeformat"},
	{"PluralRules", "@formatjs/intl-pluralrules"},
	{"RelativeTimeFormat", "@formatjs/intl-relativetimeformat"},
	{"ListFormat", "@formatjs/intl-listformat"},
	{"DisplayNames", "@formatjs/intl-displaynames"},
}

// intlLocales are the locales whose CLDR data a tool that uses Intl
// carries (docs/JAVASCRIPT.md lists them; RATIONALE says why these).
// A region or script variant that CLDR does not tell apart from its
// language (en-US, de-DE, zh-CN) is served by its language's data.
var intlLocales = []string{"en", "en-GB", "de", "fr", "es", "it", "pt", "nl", "ja", "zh", "zh-Hant", "ko", "ru"}

func generateIntl(modules, dist string, licenses *strings.Builder) error {
	var entry strings.Builder
	for _, p := range intlPackages {
		if p.member == "" {
			continue
		}
		if p.export == p.member {
			fmt.Fprintf(&entry, "export { %s } from %q;\n", p.export, p.pkg)
		} else {
			fmt.Fprintf(&entry, "export { %s as %s } from %q;\n", p.export, p.member, p.pkg)
		}
	}
	res := api.Build(api.BuildOptions{
		Stdin: &api.StdinOptions{
			Contents:   entry.String(),
			ResolveDir: modules,
			Sourcefile: "intl-entry.js",
			Loader:     api.LoaderJS,
		},
		AbsWorkingDir:    filepath.Dir(modules),
		Bundle:           true,
		Write:            false,
		Format:           api.FormatCommonJS,
		Platform:         api.PlatformBrowser,
		Target:           api.ES2022,
		MinifyWhitespace: true,
		MinifySyntax:     true,
		LegalComments:    api.LegalCommentsNone,
		LogLevel:         api.LogLevelSilent,
		Plugins:          []api.Plugin{keepBuiltins},
		Charset:          api.CharsetUTF8,
		TreeShaking:      api.TreeShakingTrue,
	})
	if len(res.Errors) > 0 {
		var msgs []string
		for _, m := range res.Errors {
			msgs = append(msgs, m.Text)
		}
		return fmt.Errorf("bundling the ponyfills: %s", strings.Join(msgs, "; "))
	}
	header := "// intl, FormatJS's Intl ponyfills bundled by wasmgate's nodelibgen (see LICENSES.txt).\n"
	if err := writeFile(filepath.Join(dist, "intl.js"), append([]byte(header), res.OutputFiles[0].Contents...)); err != nil {
		return err
	}
	for _, p := range intlPackages {
		license, err := readLicense(filepath.Join(modules, p.pkg))
		if err != nil {
			return err
		}
		fmt.Fprintf(licenses, "==== %s (dist/intl.js, dist/intl-data) ====\n%s\n\n", p.pkg, strings.TrimSpace(license))
	}

	data := filepath.Join(dist, "intl-data")
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	var index strings.Builder
	index.WriteString("// The CLDR data wasmgate's Intl carries, from FormatJS's packages, by locale (see LICENSES.txt).\n")
	index.WriteString("module.exports = {\n  versions: ")
	versions, err := intlVersions(modules)
	if err != nil {
		return err
	}
	index.WriteString(versions)
	index.WriteString(",\n  locales: {\n")
	for _, locale := range intlLocales {
		src, err := intlLocaleModule(modules, locale)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(data, locale+".js"), src); err != nil {
			return err
		}
		fmt.Fprintf(&index, "    %q: () => require(%q),\n", locale, "wasmgate:lib/intl-data/"+locale)
	}
	index.WriteString("  },\n  timeZones: () => require(\"wasmgate:lib/intl-data/tz\"),\n};\n")
	tz, err := intlTimeZones(modules)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(data, "tz.js"), tz); err != nil {
		return err
	}
	return writeFile(filepath.Join(data, "index.js"), []byte(index.String()))
}

// intlVersions is a JavaScript object of the ponyfills' versions, so that
// a tool's bundle (and its digest) changes when its data does.
func intlVersions(modules string) (string, error) {
	versions := map[string]string{}
	for _, p := range intlPackages {
		raw, err := os.ReadFile(filepath.Join(modules, p.pkg, "package.json"))
		if err != nil {
			return "", err
		}
		var pkg struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &pkg); err != nil {
			return "", fmt.Errorf("%s/package.json: %w", p.pkg, err)
		}
		versions[p.pkg] = pkg.Version
	}
	b, err := json.Marshal(versions) // sorted keys
	return string(b), err
}

// intlLocaleModule is the data module of one locale: an object mapping each
// constructor to the argument of its __addLocaleData, parsed from JSON when
// first required (the engine's JSON.parse is many times faster than
// evaluating the object literal the packages ship). Plural rules are code,
// and stay as they are.
func intlLocaleModule(modules, locale string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// CLDR data for %s, from FormatJS's locale-data/%s.js files (see LICENSES.txt).\nmodule.exports = {\n", locale, locale)
	found := 0
	for _, p := range intlDataPackages {
		file := filepath.Join(modules, p.pkg, "locale-data", locale+".js")
		raw, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			// The package has nothing of its own for this locale: its
			// parent's data applies (the glue registers it under this name).
			continue
		}
		if err != nil {
			return nil, err
		}
		payload, isJSON, err := localeDataPayload(string(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if isJSON {
			quoted, err := jsString(payload)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "  %s: JSON.parse(%s),\n", p.ctor, quoted)
		} else {
			fmt.Fprintf(&b, "  %s: %s,\n", p.ctor, payload)
		}
		found++
	}
	if found == 0 {
		return nil, fmt.Errorf("no FormatJS package has data for %q", locale)
	}
	b.WriteString("};\n")
	return b.Bytes(), nil
}

// localeDataPayload finds the argument of the __addLocaleData call in one
// of FormatJS's generated locale-data files: compact JSON when it is JSON
// (isJSON), else its JavaScript text.
func localeDataPayload(src string) (payload string, isJSON bool, err error) {
	// intl-datetimeformat: (function (data) {...})(JSON.parse("..."))
	if i := strings.Index(src, "(JSON.parse("); i >= 0 {
		var text string
		if err := json.NewDecoder(strings.NewReader(src[i+len("(JSON.parse("):])).Decode(&text); err != nil {
			return "", false, fmt.Errorf("the JSON.parse argument is not a string: %w", err)
		}
		c, err := compactJSON([]byte(text))
		return c, true, err
	}
	const call = "__addLocaleData("
	i := strings.Index(src, call)
	if i < 0 {
		return "", false, fmt.Errorf("no %s call", call)
	}
	rest := src[i+len(call):]
	var raw json.RawMessage
	if json.NewDecoder(strings.NewReader(rest)).Decode(&raw) == nil {
		c, err := compactJSON(raw)
		return c, true, err
	}
	// Plural rules carry a function: the argument runs up to the end of the
	// if branch that calls __addLocaleData (the else branch repeats it).
	end := strings.Index(rest, ")\n} else {")
	if end < 0 {
		return "", false, fmt.Errorf("cannot find the end of the %s argument", call)
	}
	return strings.TrimSpace(rest[:end]), false, nil
}

// intlTimeZones is the module of the IANA time zone database as
// intl-datetimeformat packs it (add-all-tz.js), as JSON: the glue unpacks
// each zone when it is first used, not all 450 at load.
func intlTimeZones(modules string) ([]byte, error) {
	file := filepath.Join(modules, "@formatjs/intl-datetimeformat", "add-all-tz.js")
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	const call = "__addTZData("
	i := bytes.Index(raw, []byte(call))
	if i < 0 {
		return nil, fmt.Errorf("%s: no %s call", file, call)
	}
	var packed json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(raw[i+len(call):])).Decode(&packed); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c, err := compactJSON(packed)
	if err != nil {
		return nil, err
	}
	quoted, err := jsString(c)
	if err != nil {
		return nil, err
	}
	return []byte("// The IANA time zone database as @formatjs/intl-datetimeformat packs it (add-all-tz.js; see LICENSES.txt).\nmodule.exports = JSON.parse(" + quoted + ");\n"), nil
}

// compactJSON is raw without insignificant space, its keys in their order.
func compactJSON(raw []byte) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
