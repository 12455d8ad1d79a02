package jstool_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/runtime"
)

func TestProgram(t *testing.T) {
	cases := []struct {
		name, source, file string
		stdin              string
		maxOutput          int64
		kind               runtime.OutcomeKind
		code               int
		stdout, stderr     string
	}{
		{name: "the end of work is status 0", source: `process.stdout.write("hi\n");`, stdout: "hi\n"},
		{name: "exitCode", source: `process.exitCode = 2; console.log("x", 1);`, kind: runtime.Failed, code: 2, stdout: "x 1\n"},
		{name: "exit cannot be caught", kind: runtime.Failed, code: 7,
			source: `Promise.resolve().then(() => { try { process.exit(7); } catch (e) { process.stdout.write("caught"); } process.stdout.write("after"); });`},
		{name: "exit 0 from a timer stops the timers", source: `setTimeout(() => process.exit(0), 5); setTimeout(() => console.log("late"), 10);`},
		{name: "an uncaught exception in a timer", kind: runtime.Failed, code: 1,
			source: `setTimeout(() => { throw new RangeError("boom"); }, 1);`, stderr: "\nRangeError: boom\n    at "},
		{name: "a throwing ES module", file: "p.mjs", kind: runtime.Failed, code: 1,
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
		{name: "the output bound", source: `for (;;) process.stdout.write("0123456789");`, kind: runtime.OutputTooLarge, code: -1, maxOutput: 20,
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
				prog, err := jstool.NewProgram(engine(t, name), b, runtime.Manifest{ExecutorID: "p", Version: "1.0.0"}, jstool.ProgramOptions{
					Argv:   []string{"node", "/p.js", "--flag"},
					Stdout: &stdout, Stderr: &stderr,
				})
				require.NoError(t, err)
				stdin := []byte(c.stdin)
				res, err := prog.Execute(context.Background(), runtime.Input{Bytes: stdin, Digest: audit.DigestBytes(stdin), Limits: runtime.Limits{MaxOutputBytes: c.maxOutput}})
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
