package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
)

func pyProg(name string) string { return td(filepath.Join("pyprog", name)) }

// pythonCases are the programs of testdata/pyprog, each with its stdin,
// arguments, and what python3 gives: stdout, exit status and stderr (its
// last line only where python3 prints the host's paths in a traceback).
var pythonCases = []struct {
	name, file, stdin string
	args              []string
	stdout, stderr    string
	code              int
	// lastLine: stderr is compared by its last line (a traceback names
	// /app/FILE in wasmgate, the host's path in python3).
	lastLine bool
}{
	{name: "a CSV summed, a row skipped", file: "csvsum.py",
		stdin:  "name,qty,price\nwidget,3,2.50\ngadget,10,0.99\nwidget,1,2.50\nbroken,x,1\n",
		stdout: "gadget       9.90\nwidget      10.00\n{\"gadget\": \"9.90\", \"widget\": \"10.00\"}\n",
		stderr: "skipped 1 row(s)\n", code: 1},
	{name: "a CSV summed", file: "csvsum.py", stdin: "name,qty,price\nbolt,100,0.05\n",
		stdout: "bolt       5.00\n{\"bolt\": \"5.00\"}\n"},
	{name: "argparse and a package beside the program", file: "wordfreq.py", args: []string{"--top", "3"},
		stdin:  "The cat and the dog. THE end, the ﬁn.\n",
		stdout: "  4 the\n  1 and\n  1 cat\n"},
	{name: "argparse refuses missing arguments", file: "wordfreq.py", code: 2,
		stderr: "usage: wordfreq.py [-h] --top TOP [--min-length MIN_LENGTH]\nwordfreq.py: error: the following arguments are required: --top\n"},
	{name: "statistics and dates", file: "stats.py", args: []string{"2024-02-29", "1999-12-31"}, stdin: "1\n2\n3\n4.5\n",
		stdout: "n 4\nmean 2.625\nmedian 2.5\nstdev 1.493039\n2024-02-29 Thursday 8825\n1999-12-31 Friday -1\n"},
	{name: "an uncaught exception", file: "fails.py", stdin: `{"a":1}`,
		stdout: "loaded ['a']\n", stderr: "KeyError: 'limit'\n", code: 1, lastLine: true},
}

// TestPythonMatchesPython3: each program gives what the table says, and
// python3 (where the machine has it) gives the same.
func TestPythonMatchesPython3(t *testing.T) {
	python3, lookErr := exec.LookPath("python3")
	for _, c := range pythonCases {
		t.Run(c.name, func(t *testing.T) {
			r := wasmgate(t, c.stdin, append([]string{"python", pyProg(c.file)}, c.args...)...)
			assert.Equal(t, c.code, r.code, r.stderr)
			assert.Equal(t, c.stdout, r.stdout)
			stderr := r.stderr
			if c.lastLine {
				stderr = lastLine(stderr)
			}
			assert.Equal(t, c.stderr, stderr)

			if lookErr != nil {
				return
			}
			cmd := exec.Command(python3, append([]string{pyProg(c.file)}, c.args...)...)
			cmd.Stdin = strings.NewReader(c.stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			// The tree must not gain a __pycache__ from python3's imports.
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, code, r.code, "python3's exit status")
			assert.Equal(t, out.String(), r.stdout, "python3's stdout")
			want := errb.String()
			if c.lastLine {
				want = lastLine(want)
			}
			assert.Equal(t, want, stderr, "python3's stderr")
		})
	}
}

func lastLine(s string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// TestPythonSyntaxError: a program that does not compile is run, as
// python3 runs it: its SyntaxError on stderr, exit status 1, one audited
// action that fails.
func TestPythonSyntaxError(t *testing.T) {
	prog := writeFile(t, "bad.py", "print('never')\ndef f(:\n    pass\n")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgate(t, "", "python", "--audit", log, prog)
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "  File \"/app/bad.py\", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax\n", r.stderr)
	assert.Empty(t, r.stdout)
	v := readRecords(t, log)
	require.Len(t, v, 1)
	assert.Equal(t, "FAILED", v[0].Status)
	require.NotNil(t, v[0].ExitCode)
	assert.Equal(t, 1, *v[0].ExitCode)
}

// TestPythonAudit: one attempt and one verdict per run; the input digest
// is the BLAKE3 digest of the stdin bytes, the output digest that of the
// stdout bytes; a non-zero exit status is FAILED, with the status.
func TestPythonAudit(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	in := "name,qty,price\nbolt,100,0.05\n"
	r := wasmgate(t, in, "python", "--audit", log, pyProg("csvsum.py"))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	in2 := in + "nut,x,1\n"
	r2 := wasmgate(t, in2, "python", "--audit", log, pyProg("csvsum.py"))
	require.Equal(t, 1, r2.code, r2.stderr)

	recs := allRecords(t, log)
	require.Len(t, recs, 4)
	for i, want := range []struct {
		in, out, status string
		codes           []string
		exit            int
	}{{in, r.stdout, "SUCCESS", []string{}, 0}, {in2, r2.stdout, "FAILED", []string{"EXECUTOR_EXCEPTION"}, 1}} {
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
		assert.Equal(t, "python", v.Action)
		assert.Equal(t, "python", v.ExecutorID)
		assert.Equal(t, "3.12.0", v.ExecutorVersion)
		assert.NotZero(t, v.FuelUsed)
		assert.Equal(t, recs[1].ModuleDigest, v.ModuleDigest, "the same program is the same module")
	}
	verify := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitSuccess, verify.code, verify.stderr)
}

// TestPythonLimits: each limit stops a program with exit 3 and a one-line
// reason naming its flag, after what the program wrote before; a stdin
// beyond --max-payload-bytes runs nothing.
func TestPythonLimits(t *testing.T) {
	spin := writeFile(t, "spin.py", "print('before', flush=True)\nwhile True:\n    pass\n")
	big := writeFile(t, "big.py", "import sys\nfor i in range(100):\n    print('x' * 99, file=sys.stderr)\n")
	for _, c := range []struct {
		name   string
		prog   string
		stdin  string
		flags  []string
		reason string
		stdout string
		codes  []string
	}{
		// 2 billion units: about a second of the fastest loop measured,
		// far within the default clock (1,250 s).
		{"fuel", spin, "", []string{"--fuel", "2000000000"}, "wasmgate python: the program ran out of fuel (--fuel 2000000000)\n", "before\n", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}},
		// The fuel is beyond reach: over 300 times what the fastest loop
		// measured (2.6 billion units a second) burns in the 3 s, and the
		// clock may end the program before its first line.
		{"time", spin, "", []string{"--fuel", "3000000000000", "--timeout-ms", "3000"}, "wasmgate python: the program ran out of time (--timeout-ms 3000)\n", "", []string{"EXECUTOR_TIMEOUT"}},
		{"memory", writeFile(t, "grow.py", "xs = [0] * 100_000_000\n"), "", []string{"--memory-pages", "700"}, "wasmgate python: the program ran out of memory (--memory-pages 700)\n", "", []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}},
		{"stderr output", big, "", []string{"--max-output-bytes", "1000"}, "wasmgate python: the program wrote more than --max-output-bytes 1000 to stdout or stderr\n", "", []string{"LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"}},
		{"stdin", spin, "12345678901", []string{"--max-payload-bytes", "10"}, "wasmgate python: stdin is larger than --max-payload-bytes 10\n", "", []string{"LIMIT_EXCEEDED", "PAYLOAD_TOO_LARGE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r := wasmgate(t, c.stdin, append(append([]string{"python", "--audit", log}, c.flags...), c.prog)...)
			assert.Equal(t, exitBlocked, r.code)
			stderr := r.stderr
			switch c.name {
			case "stderr output":
				// What the program wrote to stderr, up to the bound, comes
				// first: ten whole lines.
				prefix := strings.Repeat(strings.Repeat("x", 99)+"\n", 10)
				assert.True(t, strings.HasPrefix(stderr, prefix), stderr)
				stderr = strings.TrimPrefix(stderr, prefix)
			case "memory":
				// The MemoryError's traceback comes first, as python3
				// writes it.
				prefix := "Traceback (most recent call last):\n  File \"/app/grow.py\", line 1, in <module>\n    xs = [0] * 100_000_000\n         ~~~~^~~~~~~~~~~~~\nMemoryError\n"
				assert.True(t, strings.HasPrefix(stderr, prefix), stderr)
				stderr = strings.TrimPrefix(stderr, prefix)
			}
			if c.name == "time" && strings.HasPrefix(r.stdout, "before\n") {
				// Whether the program got to its first line before the
				// clock ran out depends on the machine's load.
				r.stdout = ""
			}
			assert.Equal(t, c.reason, stderr)
			assert.Equal(t, c.stdout, r.stdout)
			v := readRecords(t, log)
			require.Len(t, v, 1)
			assert.Equal(t, "BLOCKED", v[0].Status)
			assert.Equal(t, c.codes, v[0].ReasonCodes)
			assert.Nil(t, v[0].ExitCode, "a program a limit stopped has no exit status of its own")
		})
	}
}

// TestPythonUsage: no program, one that is not there or not a .py file,
// and bad flags are usage errors, which run nothing and audit nothing.
func TestPythonUsage(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no program", nil, "wasmgate python: want a program FILE (a .py file), then its arguments\n"},
		{"a missing file", []string{"missing.py"}, "wasmgate python: cannot open missing.py: no such file\n"},
		{"not a .py file", []string{writeFile(t, "tool", "print(1)\n")}, "is not a .py file"},
		{"a limit of zero", []string{"--fuel", "0", pyProg("stats.py")}, "--fuel"},
		{"an unknown engine", []string{"--engine", "v8", pyProg("stats.py")}, "--engine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"python", "--audit", log}, c.args...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, c.stderr)
			assert.Empty(t, r.stdout)
		})
	}
	assert.NoFileExists(t, log, "nothing ran, nothing was audited")
}

// TestPythonIsTheSameOnEveryEngine: the same program, arguments and stdin
// give the same output, digests and fuel on every compiled engine of the
// build (the random numbers too: they are seeded from the stdin).
func TestPythonIsTheSameOnEveryEngine(t *testing.T) {
	prog := writeFile(t, "rand.py", "import random, sys\nrows = sys.stdin.read().split()\nrandom.shuffle(rows)\nprint(rows, random.random(), sys.argv[1:])\n")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	var outs []string
	for _, name := range enginetest.JSEngines() {
		r := wasmgate(t, "a b c d e", "python", "--engine", string(name), "--audit", log, prog, "x")
		require.Equal(t, exitSuccess, r.code, r.stderr)
		outs = append(outs, r.stdout)
	}
	v := readRecords(t, log)
	require.Len(t, v, len(outs))
	for i := range v {
		assert.Equal(t, outs[0], outs[i])
		assert.Equal(t, v[0].FuelUsed, v[i].FuelUsed)
		assert.Equal(t, v[0].ModuleDigest, v[i].ModuleDigest)
		assert.Equal(t, v[0].OutputDigest, v[i].OutputDigest)
	}
	assert.False(t, strings.HasPrefix(outs[0], "['a', 'b', 'c', 'd', 'e']"), "shuffled: %s", outs[0])
}
