package jstool_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

func TestProgram(t *testing.T) {
	cases := []struct {
		name, source, file string
		stdin              string
		maxOutput          int64
		kind               sandbox.OutcomeKind
		code               int
		stdout, stderr     string
	}{
		{name: "the end of work is status 0", source: `process.stdout.write("hi\n");`, stdout: "hi\n"},
		{name: "exitCode", source: `process.exitCode = 2; console.log("x", 1);`, kind: sandbox.Failed, code: 2, stdout: "x 1\n"},
		{name: "exit cannot be caught", kind: sandbox.Failed, code: 7,
			source: `Promise.resolve().then(() => { try { process.exit(7); } catch (e) { process.stdout.write("caught"); } process.stdout.write("after"); });`},
		{name: "exit 0 from a timer stops the timers", source: `setTimeout(() => process.exit(0), 5); setTimeout(() => console.log("late"), 10);`},
		{name: "an uncaught exception in a timer", kind: sandbox.Failed, code: 1,
			source: `setTimeout(() => { throw new RangeError("boom"); }, 1);`, stderr: "\nRangeError: boom\n    at "},
		{name: "a throwing ES module", file: "p.mjs", kind: sandbox.Failed, code: 1,
			source: `process.stdout.write("first "); throw "plain";`, stdout: "first ", stderr: "\nplain\n"},
		{name: "bytes and lone surrogates, as Node writes them",
			source: `process.stdout.write("a\uD800b"); process.stdout.write(new Uint8Array([0xff, 0]));`, stdout: "a\uFFFDb\xff\x00"},
		{name: "stdin bytes", stdin: "\x00\xff\x80",
			source: `const c = []; process.stdin.on("data", (b) => c.push(b)); process.stdin.on("end", () => process.stdout.write(Buffer.concat(c).toString("hex")));`,
			stdout: "00ff80"},
		{name: "stdin in chunks, never half a character", stdin: strings.Repeat("é", 50000),
			source: `process.stdin.setEncoding("utf8"); let n = 0, s = ""; process.stdin.on("data", (c) => { n++; s += c; }); process.stdin.on("end", () => process.stdout.write(n + " " + s.length + " " + /^é+$/.test(s)));`,
			stdout: "2 50000 true"},
		{name: "argv", source: `process.stdout.write(JSON.stringify(process.argv.slice(1)));`, stdout: `["/p.js","--flag"]`},
		{name: "the output bound", source: `for (;;) process.stdout.write("0123456789");`, kind: sandbox.OutputTooLarge, code: -1, maxOutput: 20,
			stdout: "01234567890123456789"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := c.file
			if file == "" {
				file = "p.js"
			}
			path := filepath.Join(t.TempDir(), file)
			require.NoError(t, os.WriteFile(path, []byte(c.source), 0o600))
			b, err := jstool.BundleProgram(path)
			require.NoError(t, err)
			for _, name := range enginetest.JSEngines() {
				var stdout, stderr bytes.Buffer
				prog, err := jstool.NewProgram(engine(t, name), b, sandbox.Manifest{ExecutorID: "p", Version: "1.0.0"}, jstool.ProgramOptions{
					Argv:   []string{"node", "/p.js", "--flag"},
					Stdout: &stdout, Stderr: &stderr,
				})
				require.NoError(t, err)
				stdin := []byte(c.stdin)
				// Fuel bounds the run, never the clock: the interpreter on a
				// loaded machine takes tens of seconds to load a program.
				res, err := prog.Execute(context.Background(), sandbox.Input{Bytes: stdin, Digest: audit.DigestBytes(stdin), Limits: sandbox.Limits{MaxOutputBytes: c.maxOutput, TimeoutMs: 600_000}})
				require.NoError(t, err, name)
				assert.Equal(t, c.kind, res.Kind, "%s: %s", name, res.Message)
				assert.Equal(t, c.code, res.ExitCode, name)
				assert.Equal(t, c.stdout, stdout.String(), name)
				assert.Equal(t, c.stdout, string(res.Output), name)
				if c.stderr != "" {
					assert.Contains(t, stderr.String(), c.stderr, name)
				}
			}
		})
	}
}

// runProgram bundles the program at file and runs it once on wazero with
// stdin, as wasmgate node does: its stdout and stderr, and its exit status.
func runProgram(t *testing.T, file, stdin string) (string, string, int) {
	t.Helper()
	b, err := jstool.BundleProgram(file)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	prog, err := jstool.NewProgram(engine(t, sandbox.EngineWazero), b, sandbox.Manifest{ExecutorID: "p", Version: "1.0.0"},
		jstool.ProgramOptions{Argv: []string{"node", b.Main}, Stdout: &stdout, Stderr: &stderr})
	require.NoError(t, err)
	res, err := prog.Execute(context.Background(), sandbox.Input{Bytes: []byte(stdin), Digest: audit.DigestBytes([]byte(stdin)), Limits: sandbox.Limits{TimeoutMs: 600_000}})
	require.NoError(t, err)
	return stdout.String(), stderr.String(), res.ExitCode
}

// writeTree makes the files (slash-separated names) under a new directory
// and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		file := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
	}
	return dir
}

// TestProgramMissingIsNotOutside: a require() of a file the program's tree
// does not have bundles and throws MODULE_NOT_FOUND when it runs, wherever
// the path points; a require() of a file that exists outside the tree is
// refused before anything runs (issue 23), in a try block or not, and so is
// a static import of a missing module (node refuses that program before it
// starts). A require() of a computed name cannot be bundled: it says so,
// with node's code.
func TestProgramMissingIsNotOutside(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"secret.json":      `{"secret":1}`,
		"app/package.json": `{"name":"app"}`,
		"app/missing.js": `const show = (e) => console.log(e.code, e.message.split("\n")[0], e.requireStack);
try { require("../secret-that-is-not-there.json"); } catch (e) { show(e); }
try { require("/no/such/file.js"); } catch (e) { show(e); }
try { require("./nope"); } catch (e) { show(e); }
try { require("no-such-package"); } catch (e) { show(e); }
const computed = "./nope";
try { require(computed); } catch (e) { show(e); }`,
		"app/outside.js":        `try { require("../secret.json"); } catch (e) {}`,
		"app/outside_abs.js":    `function later() { return require(` + strconv.Quote(filepath.Join("DIR", "secret.json")) + `); }`,
		"app/static_missing.js": `import x from "./nope.js"; console.log(x);`,
	})
	for _, name := range []string{"outside_abs.js"} {
		file := filepath.Join(dir, "app", name)
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, bytes.ReplaceAll(src, []byte("DIR"), []byte(dir)), 0o644))
	}

	stdout, stderr, code := runProgram(t, filepath.Join(dir, "app", "missing.js"), "")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, `MODULE_NOT_FOUND Cannot find module '../secret-that-is-not-there.json' [ '/app/missing.js' ]
MODULE_NOT_FOUND Cannot find module '/no/such/file.js' [ '/app/missing.js' ]
MODULE_NOT_FOUND Cannot find module './nope' [ '/app/missing.js' ]
MODULE_NOT_FOUND Cannot find module 'no-such-package' [ '/app/missing.js' ]
MODULE_NOT_FOUND Dynamic require of "./nope" is not supported undefined
`, stdout)

	for _, c := range []struct{ file, want string }{
		{"outside.js", `imports must stay inside the program's tree`},
		{"outside_abs.js", `imports must stay inside the program's tree`},
		{"static_missing.js", `Could not resolve "./nope.js"`},
	} {
		_, err := jstool.BundleProgram(filepath.Join(dir, "app", c.file))
		var be *jstool.BundleError
		require.ErrorAs(t, err, &be, c.file)
		assert.Contains(t, be.Error(), c.want, c.file)
	}
}

// TestProgramFormats: a file's format is node's (the extension, then the
// nearest package.json's "type", then the syntax); a file without an
// extension is JavaScript, and a "#!" line is not code. Each format sees
// its own names: __dirname in CommonJS, import.meta in ES modules.
func TestProgramFormats(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"cjs/package.json":   `{"name":"c"}`,
		"cjs/bin/run":        "#!/usr/bin/env node\nconsole.log(typeof __dirname, typeof require, require.main === module, __filename);\n",
		"esm/package.json":   `{"name":"e","type":"module"}`,
		"esm/bin/run":        "#!/usr/bin/env node\nconsole.log(typeof __dirname, typeof require, typeof module, import.meta.filename, import.meta.url);\n",
		"sniff/package.json": `{"name":"s"}`,
		"sniff/run.js":       "import path from \"node:path\";\nconsole.log(typeof __filename, path.basename(import.meta.dirname));\n",
		"typed/package.json": `{"name":"t","type":"commonjs"}`,
		"typed/run.mjs":      "console.log(typeof exports, import.meta.dirname);\n",
		"ts/main.cts":        "const n: number = 2;\nconsole.log(n, typeof __dirname, require.main === module);\n",
	})
	for _, c := range []struct{ file, want string }{
		{"cjs/bin/run", "string function true /app/bin/run\n"},
		{"esm/bin/run", "undefined undefined undefined /app/bin/run file:///app/bin/run\n"},
		{"sniff/run.js", "undefined app\n"},
		{"typed/run.mjs", "undefined /app\n"},
		{"ts/main.cts", "2 string true\n"},
	} {
		stdout, stderr, code := runProgram(t, filepath.Join(dir, filepath.FromSlash(c.file)), "")
		assert.Equal(t, 0, code, "%s: %s", c.file, stderr)
		assert.Equal(t, c.want, stdout, c.file)
	}
}

// TestProgramFileSystemStaysClosed: fs reads the program's stdin (fd 0,
// /dev/stdin) and the package.json files bundling embedded, and refuses
// every other file, its own source included, naming the path and what a
// program may read; fd 1 is refused as before.
func TestProgramFileSystemStaysClosed(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"p.js": `const fs = require("fs");
for (const f of ["/etc/passwd", "p.js", "/dev/stdin", 0, "/dev/tty", 1]) {
  try { console.log(JSON.stringify(f), JSON.stringify(fs.readFileSync(f, "utf8"))); } catch (e) { console.log(JSON.stringify(f), e.code, e.message); }
}
try { fs.existsSync("p.js"); } catch (e) { console.log(e.code); }`,
	})
	stdout, stderr, code := runProgram(t, filepath.Join(dir, "p.js"), "in")
	assert.Equal(t, 0, code, stderr)
	why := " (a program reads only the files of its tree that wasmgate embedded in it when bundling it: the package.json files of its packages, and the files its code names with require.resolve)"
	assert.Equal(t, `"/etc/passwd" ERR_ACCESS_DENIED Access to this API has been restricted: fs.readFileSync("/etc/passwd")`+why+`
"p.js" ERR_ACCESS_DENIED Access to this API has been restricted: fs.readFileSync("/app/p.js")`+why+`
"/dev/stdin" "in"
0 ""
"/dev/tty" ERR_ACCESS_DENIED Access to this API has been restricted: fs.readFileSync("/dev/tty")`+why+`
1 ERR_ACCESS_DENIED Access to this API has been restricted: fs.readFileSync() (wasmgate runs code without network, file system or processes)
ERR_ACCESS_DENIED
`, stdout)
}

// TestReadlineInATool: a tool's readline reads any stream, and refuses its
// process.stdin, as process.stdin itself refuses.
func TestReadlineInATool(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), filepath.Join("..", "node", "readline_tool.mjs"), "", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"lines":["one","two","three"],"stdin":"ERR_ACCESS_DENIED: Access to this API has been restricted: readline.createInterface() over process.stdin (a tool's input is execute's params) (wasmgate runs code without network, file system or processes)"}`, string(res.Output))
}
