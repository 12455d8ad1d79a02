package jstool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secret is what the files outside a test's tree hold: no bundle may carry it.
const secret = "s3cret-outside-the-tree"

// layout writes files (slash-separated name → content) under dir; a
// content starting with "->" makes a symbolic link to the rest, resolved
// from the link's directory when relative.
func layout(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		file := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(filepath.FromSlash(target), file))
			continue
		}
		require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
	}
}

// outsideRule is the rule of a tree whose root is the entry's directory (or
// root, relative to it), as a refusal words it.
func outsideRule(noun, root string) string {
	return `imports must stay inside the ` + noun + `'s tree: "` + root + `" (the nearest directory up from the entry holding package.json, else the entry's own) and the node_modules packages found from there, links resolved`
}

// The files outside the tree in every case: dir/secret.txt, dir/secret.json,
// and the tool's project in dir/proj, whose package.json makes it the root.
var outsideFiles = map[string]string{
	"secret.txt":        secret,
	"secret.json":       `{"apiKey":"` + secret + `"}`,
	"proj/package.json": `{"name":"proj","version":"1.0.0"}`,
}

func TestBundleRefusesImportsOutsideTheTree(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // under dir, besides outsideFiles
		entry   string            // under dir
		problem string            // the one problem, file names relative to the entry's directory
		needs   string            // a host file the case needs, or ""
	}{
		{"text import of an absolute path",
			map[string]string{"proj/main.js": `import t from "/etc/passwd" with { type: "text" };
export default () => t;
`}, "proj/main.js",
			`main.js:1:15: ` + outsideRule("tool", ".") + `; "/etc/passwd" is outside it`, "/etc/passwd"},
		{"text import of /proc/self/environ",
			map[string]string{"proj/main.js": `import env from "/proc/self/environ" with { type: "text" };
export default () => env;
`}, "proj/main.js",
			`main.js:1:17: ` + outsideRule("tool", ".") + `; "/proc/self/environ" is outside it`, "/proc/self/environ"},
		{"JSON import through .. out of the root",
			map[string]string{"proj/src/main.ts": `import k from "../../secret.json";
export default () => k.apiKey;
`}, "proj/src/main.ts",
			`main.ts:1:15: ` + outsideRule("tool", "..") + `; "../../secret.json" is outside it`, ""},
		{"plain text import through ..",
			map[string]string{"proj/main.js": `import t from "../secret.txt" with { type: "text" };
export default () => t;
`}, "proj/main.js",
			`main.js:1:15: ` + outsideRule("tool", ".") + `; "../secret.txt" is outside it`, ""},
		{"require of JSON through ..",
			map[string]string{"proj/lib/main.cjs": `module.exports = () => require("../../secret.json").apiKey;
`}, "proj/lib/main.cjs",
			`main.cjs:1:32: ` + outsideRule("tool", "..") + `; "../../secret.json" is outside it`, ""},
		{"dynamic import of an absolute path",
			map[string]string{"proj/main.mjs": `export default async () => (await import("/etc/hostname")).default;
`}, "proj/main.mjs",
			`main.mjs:1:42: ` + outsideRule("tool", ".") + `; "/etc/hostname" is outside it`, "/etc/hostname"},
		{"a link in the tree pointing out",
			map[string]string{
				"proj/data.txt": "->../secret.txt",
				"proj/main.js": `import t from "./data.txt" with { type: "text" };
export default () => t;
`}, "proj/main.js",
			`main.js:1:15: ` + outsideRule("tool", ".") + `; "./data.txt" is outside it (it resolves to ../secret.txt)`, ""},
		{"a linked directory pointing out",
			map[string]string{
				"proj/conf": "->..",
				"proj/main.js": `import k from "./conf/secret.json";
export default () => k;
`}, "proj/main.js",
			`main.js:1:15: ` + outsideRule("tool", ".") + `; "./conf/secret.json" is outside it (it resolves to ../secret.json)`, ""},
		{"a package whose file imports outside",
			map[string]string{
				"proj/node_modules/evil/package.json": `{"name":"evil","version":"1.0.0","main":"index.js"}`,
				"proj/node_modules/evil/index.js": `import t from "../../../secret.txt" with { type: "text" };
export default t;
`,
				"proj/main.js": `import t from "evil";
export default () => t;
`}, "proj/main.js",
			`node_modules/evil/index.js:1:15: ` + outsideRule("tool", ".") + `; "../../../secret.txt" is outside it (it resolves to ../secret.txt)`, ""},
		{"a package whose main is outside",
			map[string]string{
				"proj/node_modules/evil/package.json": `{"name":"evil","version":"1.0.0","main":"../../../secret.json"}`,
				"proj/main.js": `import k from "evil";
export default () => k;
`}, "proj/main.js",
			`main.js:1:15: ` + outsideRule("tool", ".") + `; "evil" is outside it (it resolves to ../secret.json)`, ""},
		{"an import pattern reaching out",
			map[string]string{"proj/main.js": `export default async (name) => (await import("../" + name + ".json")).default;
`}, "proj/main.js",
			`main.js:1:46: ` + outsideRule("tool", ".") + `; "../secret.json" is outside it`, ""},
		{"tsconfig paths mapping out of the tree are not read",
			map[string]string{
				"proj/tsconfig.json": `{"compilerOptions": {"paths": {"@secret": ["../secret.json"]}}}`,
				"proj/main.ts": `import k from "@secret";
export default () => k;
`}, "proj/main.ts",
			`main.ts:1:15: Could not resolve "@secret"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if _, err := os.Stat(tc.needs); err != nil {
					t.Skipf("this host has no %s", tc.needs)
				}
			}
			dir := t.TempDir()
			layout(t, dir, outsideFiles)
			layout(t, dir, tc.files)
			entry := filepath.Join(dir, filepath.FromSlash(tc.entry))

			b, err := BundleFile(entry)
			var be *BundleError
			require.ErrorAs(t, err, &be, "bundled: %s", b.Source)
			assert.Equal(t, []string{tc.problem}, be.Problems)
			assert.Empty(t, b.Source)
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestBundleIgnoresATsconfigExtendingOutOfTheTree(t *testing.T) {
	// The tsconfig is not read at all: what it extends cannot reach the
	// bundle, and bundling goes on as without it.
	dir := t.TempDir()
	layout(t, dir, outsideFiles)
	layout(t, dir, map[string]string{
		// A JSX factory must be an identifier: a secret of that shape.
		"base.json":          `{"compilerOptions": {"jsxFactory": "hostFactory"}}`,
		"proj/tsconfig.json": `{"extends": "../base.json"}`,
		"proj/view.tsx":      "export default () => <b>x</b>;\n",
		"proj/main.js":       "import v from \"./view.tsx\";\nexport default v;\n",
	})
	b, err := BundleFile(filepath.Join(dir, "proj", "main.js"))
	require.NoError(t, err)
	assert.NotContains(t, string(b.Source), "hostFactory")
	assert.Contains(t, string(b.Source), `React.createElement("b", null, "x")`)
}

func TestBundleAllowsImportsInsideTheTree(t *testing.T) {
	dir := t.TempDir()
	layout(t, dir, map[string]string{
		// An ancestor's node_modules is found by Node's algorithm: in.
		"node_modules/ancestor-pkg/package.json": `{"name":"ancestor-pkg","version":"1.0.0","main":"index.js"}`,
		"node_modules/ancestor-pkg/index.js":     `export const fromAncestor = "ancestor";` + "\n",
		"proj/package.json":                      `{"name":"proj","version":"1.0.0"}`,
		"proj/node_modules/dep/package.json":     `{"name":"dep","version":"1.0.0","main":"lib/index.js"}`,
		"proj/node_modules/dep/lib/index.js":     `export { data } from "../data.js";` + "\n",
		"proj/node_modules/dep/data.js":          `export const data = "dep";` + "\n",
		"proj/shared/words.json":                 `{"word":"shared"}`,
		"proj/shared/note.txt":                   "note",
		"proj/linked.txt":                        "->shared/note.txt",
		"proj/src/main.ts": `import { fromAncestor } from "ancestor-pkg";
import { data } from "dep";
import words from "../shared/words.json";
import note from "./../linked.txt" with { type: "text" };
const helper = require("./helper.cjs");
export default () => [fromAncestor, data, words.word, note, helper.name, import("./lazy.js")];
`,
		"proj/src/helper.cjs": `module.exports = { name: "helper" };` + "\n",
		"proj/src/lazy.js":    `export const lazy = 1;` + "\n",
	})
	b, err := BundleFile(filepath.Join(dir, "proj", "src", "main.ts"))
	require.NoError(t, err)
	src := string(b.Source)
	for _, want := range []string{`"ancestor"`, `"dep"`, `word: "shared"`, `"note"`, `name: "helper"`, `lazy = 1`} {
		assert.Contains(t, src, want)
	}
}

func TestBundlePackageRefusesImportsOutsideItsDirectory(t *testing.T) {
	dir := t.TempDir()
	layout(t, dir, map[string]string{
		"secret.txt":                           secret,
		"entry/node_modules/evil/package.json": `{"name":"evil","version":"1.0.0","main":"index.js"}`,
		"entry/node_modules/evil/index.js": `import t from "../../../secret.txt" with { type: "text" };
export default t;
`,
	})
	_, err := BundlePackage(filepath.Join(dir, "entry"), "evil")
	var be *BundleError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "evil@1.0.0", be.Entry)
	assert.Equal(t, []string{`node_modules/evil/index.js:1:15: imports must stay inside the package's tree: "." (the directory the packages are installed in) and the node_modules packages found from there, links resolved; "../../../secret.txt" is outside it (it resolves to ../secret.txt)`}, be.Problems)
}

func TestBundleProgramAndScriptNameTheirTree(t *testing.T) {
	dir := t.TempDir()
	layout(t, dir, outsideFiles)
	layout(t, dir, map[string]string{"proj/main.ts": `import k from "../secret.json";
export default k;
`})
	entry := filepath.Join(dir, "proj", "main.ts")

	_, err := BundleProgram(entry)
	var be *BundleError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []string{`main.ts:1:15: ` + outsideRule("program", ".") + `; "../secret.json" is outside it`}, be.Problems)

	_, err = BundleScript(entry, nil)
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []string{`main.ts:1:15: ` + outsideRule("script", ".") + `; "../secret.json" is outside it`}, be.Problems)
}

func TestStoreAddRefusesAPackageReadingHostFiles(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Skip("this host has no /etc/passwd")
	}
	useRegistry(t, fakePackage{name: "leaky", version: "1.0.0", files: map[string]string{
		"package.json": `{"name": "leaky", "version": "1.0.0", "type": "module", "exports": "./index.js"}`,
		"index.js":     "import t from \"/etc/passwd\" with { type: \"text\" };\nexport default () => t;\n",
	}})
	store := Store{Dir: t.TempDir()}

	_, err := store.Add(context.Background(), "leaky@1.0.0")
	var be *BundleError
	require.ErrorAs(t, err, &be)
	assert.EqualError(t, err, `add leaky@1.0.0: cannot bundle leaky@1.0.0: node_modules/leaky/index.js:1:15: imports must stay inside the package's tree: "." (the directory the packages are installed in) and the node_modules packages found from there, links resolved; "/etc/passwd" is outside it`)
	assertStoreEntries(t, store)
	_, err = store.Get("leaky@1.0.0")
	require.ErrorIs(t, err, ErrNotInstalled)
}
