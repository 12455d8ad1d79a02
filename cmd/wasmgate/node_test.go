package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/internal/toolproto"
)

func nodeCLI(name string) string { return td(filepath.Join("nodecli", name)) }

// nodeCLICases are the command-line tools of testdata/nodecli, each with
// its stdin, arguments and the exit status both node and wasmgate node give.
var nodeCLICases = []struct {
	name, file, stdin string
	args              []string
	code              int
	// uncaught: the program ends in an uncaught exception, whose stderr
	// is compared by its "Name: message" line only (Node prints the
	// source line and its own frames and version around it).
	uncaught bool
	// dir, when set, is the program's tree root (below testdata/nodecli),
	// where node runs it from: wasmgate node's process.cwd() is that root
	// (jstool.ProgramRoot) wherever it runs, so paths a program prints
	// relative to its cwd agree.
	dir string
}{
	{name: "data and end events", file: "double.js", stdin: `{"numbers":[1,2,3.5]}`},
	{name: "async iteration, NDJSON out", file: "ndjson.mjs", stdin: "{\"id\":1,\"name\":\"ab\"}\n{\"id\":2,\"name\":\"çé\"}\n"},
	{name: "process.exit in a timer", file: "exit_in_callback.js", code: 4},
	{name: "uncaught exception", file: "uncaught.js", stdin: `{"items":3}`, code: 1, uncaught: true},
	{name: "readable and read()", file: "readable.js", stdin: "the cat The dog\n"},
	{name: "partial writes", file: "partial_writes.js"},
	{name: "stderr and exitCode", file: "stderr_mix.js", code: 2},
	{name: "require and node_modules", file: "wc/cli.js", stdin: "hello world\nsecond line ✓\n"},
	{name: "ES module imports", file: "shapes.mjs", stdin: `[{"kind":"square","side":3},{"kind":"rect","w":2,"h":5}]`},
	{name: "process.exit in a catch", file: "shapes.mjs", stdin: `[{"kind":"circle"}]`, code: 3},
	{name: "exit listeners", file: "exit_event.js", stdin: `{"n":12}`, code: 5},
	{name: "argv flags", file: "args.js", stdin: `{"words":["a","b"]}`, args: []string{"--upper", "--sep", "-"}},
	{name: "argv and exitCode 1", file: "args.js", stdin: `{"words":[]}`, code: 1},
	{name: "event loop order", file: "order.js"},
	{name: "stdin never read", file: "no_stdin.js", args: []string{"12"}},
	{name: "an async main that rejects", file: "rejected_main.js", stdin: `{"path":"/x"}`, code: 1, uncaught: true},
	{name: "a rejection with no handler", file: "unhandled_reason.js", code: 1, uncaught: true},
	{name: "a rejection handled late", file: "handled_late.js"},
	{name: "a bin without extension, with #! and require.main", file: "greet/bin/greet", args: []string{"Ada"}, dir: "greet"},
	{name: "an ES module bin: import.meta and the main check", file: "esm-cli/bin/cli", args: []string{"-n", "2"}, dir: "esm-cli"},
	{name: "fs.readFileSync(0)", file: "read_fd0.js", stdin: "name,qty,price\nwidget,3,2.5\ngadget,10,x\n"},
	{name: "/dev/stdin, fs.promises and a callback", file: "read_dev_stdin.mjs", stdin: "héllo\nwörld ✓\n"},
	{name: "fs.readSync(0) in a loop", file: "read_sync_loop.js", stdin: "héllo\nwörld ✓\n"},
	{name: "readline lines and close", file: "rl_lines.js", stdin: "the cat\r\nThe dog\rthe end\n\nlast line, no end"},
	{name: "readline async iteration", file: "rl_iterate.mjs", stdin: "{\"amount\":3}\n\nnot json\n{\"amount\":4.5}\r\n{\"amount\":1}"},
	{name: "readline question", file: "rl_question.js", stdin: "Ada\n42\nextra\n"},
	{name: "readline/promises question and prompt", file: "rl_promises.mjs", stdin: "Bob\nabc\nxyz\nquit\nignored\n"},
	{name: "readline/promises: the input ends before the answer", file: "rl_promises.mjs", stdin: "Bob", code: 13},
	{name: "optional requires of missing modules", file: "optional_require.js", dir: "."},
	{name: "a require of a missing module that runs", file: "optional_require.js", args: []string{"--load"}, code: 1, uncaught: true, dir: "."},
	{name: "console.log and util.inspect of tricky values", file: "inspect.js"},
	{name: "process.argv spliced, shifted and pushed", file: "argv_splice.js", args: []string{"a", "b", "c"}},
	{name: "a bin importing its CLI in a sideEffects:false package", file: "sidefx/bin/sidefx.js", args: []string{"x", "y"}, dir: "sidefx"},
	{name: "a program reads its own package.json", file: "ownpkg/bin/ownpkg.js", dir: "ownpkg"},
	{name: "util.parseArgs: options, positionals, tokens, errors", file: "parse_args.mjs"},
	{name: "createRequire of a JSON file", file: "jsonreq/main.js", dir: "jsonreq"},
	{name: "a UMD build and a built-in the bundler cannot see", file: "umd/main.js"},
}

// TestNodeReadsOnlyItsEmbeddedFiles: a program reads the files of its tree
// that bundling embedded (its package.json files); another file of its
// tree, which node would read, is refused as node's permission model
// refuses a path it was not granted: ERR_ACCESS_DENIED, FileSystemRead,
// the path as the resource, and a message saying what a program may read.
func TestNodeReadsOnlyItsEmbeddedFiles(t *testing.T) {
	got := wasmgate(t, "", "node", nodeCLI("ownpkg/bin/ownpkg.js"), "--other")
	assert.Equal(t, 2, got.code, "stderr: %s", got.stderr)
	assert.Equal(t, "ownpkg v3.4.5\nexists: true file: true dir: true\nbytes: true\n"+
		"callback: null reads its own package.json, as CLIs do for --version\npromise: 3.4.5\n"+
		"ERR_ACCESS_DENIED FileSystemRead true\n", got.stdout)

	prog := writeFile(t, "secret.js", `try { require("fs").readFileSync("/etc/hostname") } catch (e) { console.log(e.message) }`)
	got = wasmgate(t, "", "node", prog)
	assert.Equal(t, 0, got.code, "stderr: %s", got.stderr)
	assert.Equal(t, "Access to this API has been restricted: fs.readFileSync(\"/etc/hostname\") (a program reads only "+
		"the files of its tree that wasmgate embedded in it when bundling it: the package.json files of its packages, "+
		"and the files its code names with require.resolve)\n", got.stdout)
}

// errorLine is the first "Name: message" line of an uncaught exception's
// report (UnhandledPromiseRejection's for a rejection with no handler whose
// reason is not an Error).
var errorLine = regexp.MustCompile(`(?m)^[A-Za-z]*(Error|Rejection): .*$`)

// TestNodeMatchesNode runs each tool under wasmgate node and, when node is
// on PATH, under node, with the same stdin and arguments: the same stdout,
// stderr and exit status (for an uncaught exception, the same
// "Name: message" line of stderr).
func TestNodeMatchesNode(t *testing.T) {
	testenv.GuestOnly(t)
	nodeBin, _ := exec.LookPath("node")
	for _, c := range nodeCLICases {
		t.Run(c.name, func(t *testing.T) {
			got := wasmgate(t, c.stdin, append([]string{"node", nodeCLI(c.file)}, c.args...)...)
			require.Equal(t, c.code, got.code, "stderr: %s", got.stderr)
			if c.uncaught {
				assert.Regexp(t, errorLine, got.stderr)
			}
			if nodeBin == "" {
				return
			}
			cmd := exec.Command(nodeBin, append([]string{nodeCLI(c.file)}, c.args...)...)
			if c.dir != "" {
				rel, err := filepath.Rel(c.dir, c.file)
				require.NoError(t, err)
				cmd = exec.Command(nodeBin, append([]string{rel}, c.args...)...)
				cmd.Dir = nodeCLI(c.dir)
			}
			cmd.Stdin = strings.NewReader(c.stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			code := 0
			var ee *exec.ExitError
			if err := cmd.Run(); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, code, got.code, "exit status")
			assert.Equal(t, out.String(), got.stdout, "stdout")
			if c.uncaught {
				assert.Equal(t, errorLine.FindString(errb.String()), errorLine.FindString(got.stderr), "stderr's error line")
			} else {
				assert.Equal(t, errb.String(), got.stderr, "stderr")
			}
		})
	}
}

// TestNodeStreamsAsWritten: what a program writes reaches stdout while it
// still runs. The program writes a line and then never ends; the line is
// read from the pipe before the run is stopped.
func TestNodeStreamsAsWritten(t *testing.T) {
	prog := writeFile(t, "forever.js", `process.stdout.write("first\n"); for (;;) {}`)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan int)
	go func() {
		code := run(ctx, []string{"node", "--fuel", "1000000000000", "--timeout-ms", "600000", prog}, strings.NewReader(""), pw, &errb)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	select {
	case code := <-done:
		t.Fatalf("the program ended (exit %d) before its first line was read: %s", code, errb.String())
	default:
	}
	cancel()
	go io.Copy(io.Discard, pr)
	assert.NotEqual(t, exitSuccess, <-done)
}

// TestNodeStdinBound: stdin beyond --max-payload-bytes is refused before
// anything runs (BLOCKED, PAYLOAD_TOO_LARGE); stdin at the limit is read.
func TestNodeStdinBound(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	in := `{"numbers":[1,2]}` // 17 bytes
	r := wasmgate(t, in+" ", "node", "--max-payload-bytes", "17", "--audit", log, nodeCLI("double.js"))
	assert.Equal(t, exitBlocked, r.code)
	assert.Equal(t, "wasmgate node: stdin is larger than --max-payload-bytes 17\n", r.stderr)
	assert.Empty(t, r.stdout)

	r = wasmgate(t, in, "node", "--max-payload-bytes", "17", "--audit", log, nodeCLI("double.js"))
	assert.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, "{\"doubled\":[2,4],\"count\":2}\n", r.stdout)

	recs := allRecords(t, log)
	require.Len(t, recs, 3, "a refusal (a verdict alone), then an attempt and its verdict")
	assert.Equal(t, "BLOCKED", recs[0].Status)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "PAYLOAD_TOO_LARGE"}, recs[0].ReasonCodes)
	assert.Nil(t, recs[0].AttemptHash)
	assert.Equal(t, "SUCCESS", recs[2].Status)
}

// TestNodeOutputBound: a program that writes more than --max-output-bytes
// is stopped: BLOCKED, exit 3, one line on stderr; what reached stdout is
// within the bound.
func TestNodeOutputBound(t *testing.T) {
	prog := writeFile(t, "big.js", `for (let i = 0; i < 100; i++) process.stdout.write("x".repeat(99) + "\n");`)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgate(t, "", "node", "--max-output-bytes", "1000", "--audit", log, prog)
	assert.Equal(t, exitBlocked, r.code)
	assert.Equal(t, "wasmgate node: the program wrote more than --max-output-bytes 1000 to stdout or stderr\n", r.stderr)
	assert.Equal(t, strings.Repeat(strings.Repeat("x", 99)+"\n", 10), r.stdout, "the writes that fit, whole")
	v := readRecords(t, log)
	require.Len(t, v, 1)
	assert.Equal(t, "BLOCKED", v[0].Status)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"}, v[0].ReasonCodes)
	require.NotNil(t, v[0].OutputDigest)
	assert.Equal(t, audit.Digest([]byte(r.stdout)), *v[0].OutputDigest)
}

// TestNodeLimits: fuel and time stop a program with exit 3 and a one-line
// reason, after what it wrote before.
func TestNodeLimits(t *testing.T) {
	prog := writeFile(t, "spin.js", `process.stdout.write("before\n"); for (;;) {}`)
	// The clock runs while the program loads, so a program cut by it may
	// not have written anything yet on a loaded machine: the time case
	// spins from its first line, and its output is empty whenever the
	// clock ends it.
	spin := writeFile(t, "spin_at_once.js", `for (;;) {}`)
	for _, c := range []struct {
		name   string
		prog   string
		flags  []string
		reason string
		stdout string
		codes  []string
	}{
		// 300 million units: a second at the slowest rate measured, a
		// thirtieth of the default clock (30 s).
		{"fuel", prog, []string{"--fuel", "300000000"}, "wasmgate node: the program ran out of fuel (--fuel 300000000)\n", "before\n", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}},
		// The fuel is beyond reach: 55 times what the fastest loop
		// measured (6 billion units a second) burns in the 3 s.
		{"time", spin, []string{"--fuel", "1000000000000", "--timeout-ms", "3000"}, "wasmgate node: the program ran out of time (--timeout-ms 3000)\n", "", []string{"EXECUTOR_TIMEOUT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r := wasmgate(t, "", append(append([]string{"node", "--audit", log}, c.flags...), c.prog)...)
			assert.Equal(t, exitBlocked, r.code)
			assert.Equal(t, c.reason, r.stderr)
			assert.Equal(t, c.stdout, r.stdout)
			v := readRecords(t, log)
			require.Len(t, v, 1)
			assert.Equal(t, "BLOCKED", v[0].Status)
			assert.Equal(t, c.codes, v[0].ReasonCodes)
			assert.Nil(t, v[0].ExitCode, "a program a limit stopped has no exit status of its own")
		})
	}
}

// TestNodeAudit: one attempt and one verdict per run; the input digest is
// the BLAKE3 digest of the stdin bytes, the output digest that of the
// stdout bytes; a non-zero exit status is FAILED.
func TestNodeAudit(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	in := "{\"n\":3}\n"
	r := wasmgate(t, in, "node", "--audit", log, nodeCLI("exit_event.js"))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	in2 := `{"n":11}`
	r2 := wasmgate(t, in2, "node", "--audit", log, nodeCLI("exit_event.js"))
	require.Equal(t, 5, r2.code, r2.stderr)

	recs := allRecords(t, log)
	require.Len(t, recs, 4)
	for i, want := range []struct {
		in, out, status string
		codes           []string
		exit            int
	}{{in, r.stdout, "SUCCESS", []string{}, 0}, {in2, r2.stdout, "FAILED", []string{"EXECUTOR_EXCEPTION"}, 5}} {
		a, v := recs[2*i], recs[2*i+1]
		assert.Equal(t, audit.EventActionAttempt, a.EventType)
		assert.Equal(t, audit.EventActionAudit, v.EventType)
		assert.Equal(t, a.Hash, *v.AttemptHash)
		assert.Equal(t, audit.Digest([]byte(want.in)), v.InputDigest)
		require.NotNil(t, v.OutputDigest)
		assert.Equal(t, audit.Digest([]byte(want.out)), *v.OutputDigest)
		assert.Equal(t, want.status, v.Status)
		assert.Equal(t, want.codes, v.ReasonCodes)
		require.NotNil(t, v.ExitCode, "the exit status is in the verdict")
		assert.Equal(t, want.exit, *v.ExitCode)
		assert.Nil(t, a.ExitCode, "an attempt has none")
		assert.Equal(t, "node", v.Action)
		assert.NotZero(t, v.FuelUsed)
		assert.Equal(t, recs[1].ModuleDigest, v.ModuleDigest, "the same program is the same module")
	}
	verify := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitSuccess, verify.code, verify.stderr)
}

// TestNodeUsage: no program, or one that does not bundle, is a usage
// error and runs nothing.
func TestNodeUsage(t *testing.T) {
	r := wasmgate(t, "", "node")
	assert.Equal(t, exitUsage, r.code)
	r = wasmgate(t, "", "node", nodeCLI("missing.js"))
	assert.Equal(t, exitUsage, r.code)
	bad := writeFile(t, "bad.js", "let x = ;\n")
	r = wasmgate(t, "", "node", bad)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "bad.js")
}

// TestNodeRunsAProtocolTool: a tool of the NDJSON tool protocol written
// for Node runs under wasmgate node as a runner would spawn it (request on
// stdin, events on stdout): its own events, each one the protocol's.
func TestNodeRunsAProtocolTool(t *testing.T) {
	r := wasmgate(t, `{"context":{"toolId":"hello-node"},"input":{"name":"Ada"}}`, "node", filepath.Join(protoTools, "hello-node", "index.js"))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	var types []string
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		ev, err := toolproto.ParseEvent([]byte(line), "hello-node")
		require.NoError(t, err, line)
		types = append(types, string(ev.Type))
		if ev.Type == toolproto.EventResult {
			assert.JSONEq(t, `{"message":"Hello, Ada!"}`, string(ev.Payload))
		}
	}
	assert.Equal(t, []string{"started", "log", "result"}, types)
}

// TestNodeArgvIsTheVirtualPath: process.argv[1] is, as in node, the
// program's absolute path and its __filename, but in the program's virtual
// tree (its root at jstool.ProgramRoot), whether the path was given
// relative or absolute: the host's absolute path would tell the program
// where it lives (a home directory, a server's layout). process.cwd() is
// the tree's root.
func TestNodeArgvIsTheVirtualPath(t *testing.T) {
	file := nodeCLI("argv_path.js")
	abs, err := filepath.Abs(file)
	require.NoError(t, err)
	for _, given := range []string{file, abs} {
		got := wasmgate(t, "", "node", given)
		require.Equal(t, 0, got.code, "stderr: %s", got.stderr)
		assert.Equal(t, "/app/argv_path.js\n/app\n", got.stdout, given)
	}
	// The tree's root is the nearest directory up holding package.json.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"p"}`), 0o644))
	prog := filepath.Join(dir, "src", "deep", "x.js")
	require.NoError(t, os.WriteFile(prog, []byte(`console.log(process.argv[1], __dirname, process.cwd(), require.main.paths.join(","))`), 0o644))
	got := wasmgate(t, "", "node", prog)
	require.Equal(t, 0, got.code, "stderr: %s", got.stderr)
	assert.Equal(t, "/app/src/deep/x.js /app/src/deep /app /app/src/deep/node_modules,/app/src/node_modules,/app/node_modules,/node_modules\n", got.stdout)
	assert.NotContains(t, got.stdout, dir)
}
