package tscheck

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/testenv"
)

// toolscriptAmbient declares the one tool the test scripts call.
var toolscriptAmbient = []byte(`declare module "toolscript" { export const tools: { math: { sum(params: { numbers: number[] }): Promise<{ sum: number }> } } }` + "\n")

// sharedDir holds the compiler for every test when the tests' cache is
// disabled; TestMain removes it.
var sharedDir string

func TestMain(m *testing.M) {
	code := func() int {
		if testenv.CacheDir() == "" {
			dir, err := os.MkdirTemp("", "tscheck-test-")
			if err != nil {
				panic(err)
			}
			defer os.RemoveAll(dir)
			sharedDir = dir
		}
		return m.Run()
	}()
	os.Exit(code)
}

// checker is the checker the tests share: the compiler is fetched once into
// the tests' cache (about 10 MB the first time on a machine) and reused by
// every test, binary and run after.
func checker(t testing.TB) Checker {
	t.Helper()
	dir := sharedDir
	if dir == "" {
		dir = filepath.Join(testenv.CacheDir(), "typescript")
	}
	c := Checker{Dir: dir}
	_, err := c.Ensure(context.Background())
	require.NoError(t, err)
	return c
}

// check runs Check with the ambient toolscript declaration and fails the
// test on an error.
func check(t *testing.T, script string, decls map[string][]byte) []Diagnostic {
	t.Helper()
	if decls == nil {
		decls = map[string][]byte{"toolscript.d.ts": toolscriptAmbient}
	}
	diags, err := checker(t).Check(context.Background(), script, decls)
	require.NoError(t, err)
	return diags
}

func TestCheckReportsAWrongArgument(t *testing.T) {
	diags := check(t, "testdata/argument.ts", nil)
	assert.Equal(t, []Diagnostic{{
		File: "testdata/argument.ts", Line: 3, Column: 52, Code: 2322,
		Message: "Type 'string' is not assignable to type 'number'.",
	}}, diags)
	assert.Equal(t, "testdata/argument.ts:3:52: error TS2322: Type 'string' is not assignable to type 'number'.", diags[0].String())
}

func TestCheckReportsAPropertyTheResultDoesNotHave(t *testing.T) {
	assert.Equal(t, []Diagnostic{{
		File: "testdata/property.ts", Line: 3, Column: 63, Code: 2339,
		Message: "Property 'total' does not exist on type '{ sum: number; }'.",
	}}, check(t, "testdata/property.ts", nil))
}

func TestCheckPassesACorrectScript(t *testing.T) {
	assert.Empty(t, check(t, "testdata/correct.ts", nil))
}

func TestCheckResolvesToolscriptThroughPaths(t *testing.T) {
	// A module file (not `declare module`) is found only through paths.
	module := []byte("export declare const tools: { math: { sum(params: { numbers: number[] }): Promise<{ sum: number }> } };\n")
	decls := map[string][]byte{"toolscript.d.ts": module}
	assert.Empty(t, check(t, "testdata/correct.ts", decls))
	assert.Equal(t, []Diagnostic{{
		File: "testdata/argument.ts", Line: 3, Column: 52, Code: 2322,
		Message: "Type 'string' is not assignable to type 'number'.",
	}}, check(t, "testdata/argument.ts", decls))
}

func TestCheckReportsASyntaxError(t *testing.T) {
	assert.Equal(t, []Diagnostic{{
		File: "testdata/syntax.ts", Line: 3, Column: 22, Code: 1005,
		Message: "',' expected.",
	}}, check(t, "testdata/syntax.ts", nil))
}

func TestCheckHasNoDOMOrNodeGlobals(t *testing.T) {
	assert.Equal(t, []Diagnostic{
		{File: "testdata/globals.ts", Line: 1, Column: 30, Code: 2584,
			Message: "Cannot find name 'document'. Do you need to change your target library? Try changing the 'lib' compiler option to include 'dom'."},
		{File: "testdata/globals.ts", Line: 2, Column: 21, Code: 2591,
			Message: "Cannot find name 'process'. Do you need to install type definitions for node? Try `npm i --save-dev @types/node` and then add 'node' to the types field in your tsconfig."},
		{File: "testdata/globals.ts", Line: 3, Column: 19, Code: 2591,
			Message: "Cannot find name 'require'. Do you need to install type definitions for node? Try `npm i --save-dev @types/node` and then add 'node' to the types field in your tsconfig."},
	}, check(t, "testdata/globals.ts", nil))

	t.Run("unless declared", func(t *testing.T) {
		env := []byte(`declare var document: { title: string };
declare var process: { env: Record<string, string | undefined> };
declare function require(name: string): unknown;
`)
		assert.Empty(t, check(t, "testdata/globals.ts", map[string][]byte{"wasmgate-env.d.ts": env}))
	})
}

func TestCheckJoinsAMessageChain(t *testing.T) {
	script := writeScript(t, t.TempDir(), "chain.ts", `type Point = { at: { x: number } };
const p = { at: { x: "1" } };
export const q: Point = p;
`)
	assert.Equal(t, []Diagnostic{{
		File: script, Line: 3, Column: 14, Code: 2322,
		Message: "Type '{ at: { x: string; }; }' is not assignable to type 'Point'.\n" +
			"  The types of 'at.x' are incompatible between these types.\n" +
			"    Type 'string' is not assignable to type 'number'.",
	}}, check(t, script, map[string][]byte{}))
}

func TestCheckNamesDeclarationAndImportedFiles(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "main.ts", `import { half } from "./lib/half.ts";
export const h: number = half(4);
`)
	writeScript(t, dir, "lib/half.ts", `export function half(n: number): string { return n / 2; }
`)
	diags := check(t, script, map[string][]byte{
		"wasmgate-env.d.ts": []byte("declare var broken: ;\n"),
	})
	// Syntax errors come alone: fix the declaration and the type errors show.
	assert.Equal(t, []Diagnostic{{
		File: "wasmgate-env.d.ts", Line: 1, Column: 21, Code: 1110, Message: "Type expected.",
	}}, diags)

	diags = check(t, script, map[string][]byte{"wasmgate-env.d.ts": []byte("declare var fine: number;\n")})
	assert.Equal(t, []Diagnostic{
		{File: filepath.Join(filepath.Dir(script), "lib", "half.ts"), Line: 1, Column: 43, Code: 2322,
			Message: "Type 'number' is not assignable to type 'string'."},
		{File: script, Line: 2, Column: 14, Code: 2322,
			Message: "Type 'string' is not assignable to type 'number'."},
	}, diags)
}

func TestCheckRefusesWhatItCannotCheck(t *testing.T) {
	c := checker(t)
	ctx := context.Background()

	_, err := c.Check(ctx, "testdata/missing.ts", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tscheck: script: stat ")
	assert.Contains(t, err.Error(), "missing.ts: no such file or directory")

	_, err = c.Check(ctx, "testdata", nil)
	assert.EqualError(t, err, `tscheck: script "testdata" is not a regular file`)

	_, err = c.Check(ctx, "testdata/correct.ts", map[string][]byte{"../escape.d.ts": nil})
	assert.EqualError(t, err, `tscheck: declaration file name "../escape.d.ts" is not a plain file name`)

	_, err = c.Check(ctx, "testdata/correct.ts", map[string][]byte{"env.json": nil})
	assert.EqualError(t, err, `tscheck: declaration file name "env.json" does not end in .d.ts (or .ts, .mts, .cts)`)
}

func TestVerifyIntegrityRefusesOtherBytes(t *testing.T) {
	data := []byte("the package")
	// sha512 of "the package", as npm writes an integrity.
	const integrity = "sha512-jjb8r/nhhANO0PV22GZdh5epVe5w5CrCN0r9d4JmR/IAZmgxqikDxLPfJASfN5iLXv+b/bNMcFhzn76iBs5tug=="
	require.NoError(t, verifyIntegrity("p.tgz", data, integrity))

	assert.EqualError(t, verifyIntegrity("p.tgz", []byte("the packagE"), integrity),
		"tscheck: p.tgz (11 bytes) has sha512-tMkczZsYOjg9svuN34xdh2hxxqWICCP/UuzXPbecfzk5/87bnjWqrJDwb8Dp1A9BctEHSMSGSxmTD1pO5EzHEQ==, want the pinned sha512-jjb8r/nhhANO0PV22GZdh5epVe5w5CrCN0r9d4JmR/IAZmgxqikDxLPfJASfN5iLXv+b/bNMcFhzn76iBs5tug==; refusing to use it")

	assert.EqualError(t, verifyIntegrity("p.tgz", data, "sha1-abc"),
		`tscheck: pinned integrity "sha1-abc" of p.tgz is not sha512-BASE64`)
}

func TestEnsureRefusesACorruptedDownloadAndLeavesNothing(t *testing.T) {
	platform, err := npmPlatform(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	var asked string
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path
		w.Write(tarGz(t, map[string]string{"package/lib/tsc": "not the compiler"}))
	}))
	defer registry.Close()
	t.Setenv("WASMGATE_NPM_REGISTRY", registry.URL+"/")

	c := Checker{Dir: t.TempDir()}
	_, err = c.Ensure(context.Background())
	require.Error(t, err)
	assert.Regexp(t, `^tscheck: typescript-`+platform+`-7\.0\.2\.tgz \([0-9]+ bytes\) has sha512-\S+, want the pinned `+
		strings.ReplaceAll(strings.ReplaceAll(pinnedIntegrity[platform], "+", `\+`), ".", `\.`)+`; refusing to use it$`, err.Error())
	assert.Equal(t, "/@typescript/typescript-"+platform+"/-/typescript-"+platform+"-7.0.2.tgz", asked)
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused download leaves nothing in Dir")
}

func TestEnsureReportsARegistryError(t *testing.T) {
	if _, err := npmPlatform(runtime.GOOS, runtime.GOARCH); err != nil {
		t.Skip(err)
	}
	registry := httptest.NewServer(http.NotFoundHandler())
	defer registry.Close()
	t.Setenv("WASMGATE_NPM_REGISTRY", registry.URL)

	c := Checker{Dir: filepath.Join(t.TempDir(), "typescript")}
	_, err := c.Ensure(context.Background())
	require.Error(t, err)
	assert.Regexp(t, `^tscheck: download http://\S+/@typescript/typescript-\S+-7\.0\.2\.tgz: the registry answered 404 Not Found$`, err.Error())
	assert.NoDirExists(t, c.Dir)
}

func TestNpmPlatform(t *testing.T) {
	for _, tc := range []struct{ goos, goarch, want string }{
		{"linux", "amd64", "linux-x64"},
		{"linux", "arm64", "linux-arm64"},
		{"darwin", "amd64", "darwin-x64"},
		{"darwin", "arm64", "darwin-arm64"},
		{"windows", "amd64", "win32-x64"},
		{"windows", "arm64", "win32-arm64"},
	} {
		got, err := npmPlatform(tc.goos, tc.goarch)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	_, err := npmPlatform("plan9", "386")
	assert.EqualError(t, err, "tscheck: no pinned sha512 of TypeScript 7.0.2's compiler for plan9/386 (npm package @typescript/typescript-plan9-ia32@7.0.2), so scripts cannot be type-checked on this platform; --no-check skips checking")
}

func TestExtractRefusesEntriesOutsideThePackage(t *testing.T) {
	for _, name := range []string{"package/../../evil", "other/lib/tsc", "/package/lib/tsc"} {
		err := extract(tarGz(t, map[string]string{name: "x"}), t.TempDir())
		assert.EqualError(t, err, `entry "`+name+`" is not inside package/`)
	}
	dir := t.TempDir()
	require.NoError(t, extract(tarGz(t, map[string]string{"package/lib/tsc": "bin", "package/LICENSE": "l"}), dir))
	got, err := os.ReadFile(filepath.Join(dir, "lib", "tsc"))
	require.NoError(t, err)
	assert.Equal(t, "bin", string(got))
}

func TestDefault(t *testing.T) {
	t.Setenv("WASMGATE_CACHE_DIR", "/somewhere")
	assert.Equal(t, Checker{Dir: filepath.Join("/somewhere", "typescript")}, Default())

	t.Setenv("WASMGATE_CACHE_DIR", "off")
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	assert.Equal(t, Checker{Dir: filepath.Join(cache, "wasmgate", "typescript")}, Default())
}

func TestDiagnosticString(t *testing.T) {
	assert.Equal(t, "s.ts:3:7: error TS2322: Type 'string' is not assignable to type 'number'.",
		Diagnostic{File: "s.ts", Line: 3, Column: 7, Code: 2322, Message: "Type 'string' is not assignable to type 'number'."}.String())
	assert.Equal(t, "error TS6053: File 'x.ts' not found.",
		Diagnostic{Code: 6053, Message: "File 'x.ts' not found."}.String())
}

func TestParseDiagnostics(t *testing.T) {
	out := "error TS5023: Unknown compiler option '--bogus'.\n" +
		"a.ts(1,2): warning TS6133: unused.\n" +
		"  more about the warning\n" +
		"dir (1)/b.ts(10,20): error TS2322: Type 'A' is not assignable to type 'B'.\r\n" +
		"  The types of 'x' are incompatible between these types.\n"
	diags, err := parseDiagnostics(out, strings.ToUpper)
	require.NoError(t, err)
	assert.Equal(t, []Diagnostic{
		{Code: 5023, Message: "Unknown compiler option '--bogus'."},
		{File: "DIR (1)/B.TS", Line: 10, Column: 20, Code: 2322,
			Message: "Type 'A' is not assignable to type 'B'.\n  The types of 'x' are incompatible between these types."},
	}, diags)

	_, err = parseDiagnostics("Found 1 error.\n", strings.ToUpper)
	assert.EqualError(t, err, `the compiler's output has a line that is not a diagnostic: "Found 1 error."`)
}

// BenchmarkCheck50Lines is one Check of a 50-line script with the compiler
// already fetched: the cost a user pays per script.
func BenchmarkCheck50Lines(b *testing.B) {
	c := checker(b)
	var src strings.Builder
	src.WriteString("import { tools } from \"toolscript\";\n\ninterface Row { name: string; value: number }\n\n")
	for i := range 11 {
		src.WriteString("async function step" + string(rune('a'+i)) + "(rows: Row[]): Promise<number> {\n")
		src.WriteString("  const r = await tools.math.sum({ numbers: rows.map((x) => x.value + 1) });\n")
		src.WriteString("  return r.sum;\n}\n")
	}
	src.WriteString("const rows: Row[] = [{ name: \"a\", value: 1 }];\nexport const out = await stepa(rows);\n")
	script := filepath.Join(b.TempDir(), "s50.ts")
	require.NoError(b, os.WriteFile(script, []byte(src.String()), 0o644))
	require.Equal(b, 50, strings.Count(src.String(), "\n"))
	decls := map[string][]byte{"toolscript.d.ts": toolscriptAmbient}
	b.ResetTimer()
	for b.Loop() {
		diags, err := c.Check(context.Background(), script, decls)
		require.NoError(b, err)
		require.Empty(b, diags)
	}
}

// writeScript writes src at name (slash-separated) under dir and returns
// its path.
func writeScript(t *testing.T, dir, name, src string) string {
	t.Helper()
	file := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	return file
}

// tarGz is a gzipped tarball of files (name → content).
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
