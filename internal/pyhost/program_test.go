package pyhost

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// eachEngine runs f on the compiled engines of the build (wazero's
// compiler, and wasmtime in builds with it): CPython on wazero's
// interpreter is what the cross-engine suite covers, ten times slower.
func eachEngine(t *testing.T, f func(t *testing.T, e sandbox.Engine)) {
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) { f(t, enginetest.Engine(t, name)) })
	}
}

// programRun is what a run of a program showed its caller.
type programRun struct {
	out            sandbox.Outcome
	stdout, stderr string
}

// writeTree writes files (by path relative to a new directory) and
// returns the path of main there.
func writeTree(t *testing.T, files map[string]string, main string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return filepath.Join(dir, main)
}

// runProgram loads file as a program with args and runs it once on stdin
// under lim.
func runProgram(t *testing.T, e sandbox.Engine, file string, args []string, stdin string, lim sandbox.Limits) programRun {
	t.Helper()
	ctx := context.Background()
	c, err := ProgramCode(file)
	require.NoError(t, err)
	var stdout, stderr lockedBuffer
	p, err := NewProgram(ctx, e, c, sandbox.Manifest{ExecutorID: "python", Version: PythonVersion}, ProgramOptions{Args: args, Stdout: &stdout, Stderr: &stderr})
	require.NoError(t, err)
	in := []byte(stdin)
	out, err := p.Execute(ctx, sandbox.Input{Bytes: in, Digest: blake3.Sum256(in), Limits: lim})
	require.NoError(t, err)
	return programRun{out: out, stdout: stdout.String(), stderr: stderr.String()}
}

// TestProgramRunsAsPython3: what a program sees and how it ends, as python3
// runs a file, on every engine, with the same fuel on each.
func TestProgramRunsAsPython3(t *testing.T) {
	cases := []struct {
		name   string
		files  map[string]string
		args   []string
		stdin  string
		stdout string
		stderr string
		exit   int
	}{
		{name: "argv", files: map[string]string{"prog.py": "import sys\nprint(sys.argv, __name__, __file__)\n"},
			args: []string{"-n", "2", "ü"}, stdout: "['/app/prog.py', '-n', '2', 'ü'] __main__ /app/prog.py\n"},
		{name: "sys.stdin.read", files: map[string]string{"prog.py": "import sys\ndata = sys.stdin.read()\nprint(len(data), repr(data))\n"},
			stdin: "héllo\nwörld ✓", stdout: "13 'héllo\\nwörld ✓'\n"},
		{name: "input, to the end of stdin", files: map[string]string{"prog.py": "name = input('name? ')\nprint('hi', name)\nprint(input())\ninput()\n"},
			stdin: "Ada\nsecond\n", stdout: "name? hi Ada\nsecond\n", exit: 1,
			stderr: "Traceback (most recent call last):\n  File \"/app/prog.py\", line 4, in <module>\n    input()\nEOFError: EOF when reading a line\n"},
		{name: "stdout and stderr apart", files: map[string]string{"prog.py": "import sys\nprint('out 1')\nprint('err 1', file=sys.stderr)\nsys.stdout.write('out 2\\n')\n"},
			stdout: "out 1\nout 2\n", stderr: "err 1\n"},
		{name: "sys.exit(3)", files: map[string]string{"prog.py": "import sys\nprint('before')\nsys.exit(3)\nprint('after')\n"},
			stdout: "before\n", exit: 3},
		{name: "sys.exit(0)", files: map[string]string{"prog.py": "import sys\nprint('done')\nsys.exit(0)\n"},
			stdout: "done\n"},
		{name: "sys.exit(msg)", files: map[string]string{"prog.py": "import sys\nsys.exit('no input given')\n"},
			stderr: "no input given\n", exit: 1},
		{name: "an uncaught exception", files: map[string]string{"prog.py": "def f(d):\n    return d['b']\n\nprint('started')\nf({'a': 1})\n"},
			stdout: "started\n", exit: 1,
			stderr: "Traceback (most recent call last):\n  File \"/app/prog.py\", line 5, in <module>\n    f({'a': 1})\n  File \"/app/prog.py\", line 2, in f\n    return d['b']\n           ~^^^^^\nKeyError: 'b'\n"},
		{name: "a syntax error", files: map[string]string{"prog.py": "print('never')\ndef f(:\n    pass\n"},
			exit: 1, stderr: "  File \"/app/prog.py\", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax\n"},
		{name: "atexit functions run at the end", files: map[string]string{"prog.py": "import atexit, sys\natexit.register(print, 'bye')\nprint('main')\nsys.exit(2)\n"},
			stdout: "main\nbye\n", exit: 2},
		{name: "a sibling module and a package", files: map[string]string{
			"prog.py":            "import helper\nfrom pkg.calc import add\nprint(helper.twice(add(1, 2)))\n",
			"helper.py":          "def twice(x):\n    return 2 * x\n",
			"pkg/__init__.py":    "",
			"pkg/calc.py":        "def add(a, b):\n    return a + b\n",
			"notes/unrelated.py": "raise SystemExit('not importable: not a package')\n",
		}, stdout: "6\n"},
		{name: "a traceback through a sibling module", files: map[string]string{
			"prog.py":   "import helper\nhelper.check(-1)\n",
			"helper.py": "def check(n):\n    if n < 0:\n        raise ValueError(f'negative: {n}')\n",
		}, exit: 1,
			stderr: "Traceback (most recent call last):\n  File \"/app/prog.py\", line 2, in <module>\n    helper.check(-1)\n  File \"/app/helper.py\", line 3, in check\n    raise ValueError(f'negative: {n}')\nValueError: negative: -1\n"},
		{name: "no file outside the tree", files: map[string]string{"prog.py": "try:\n    open('/etc/passwd')\nexcept OSError as e:\n    print(type(e).__name__, isinstance(e, OSError))\n"},
			stdout: "FileNotFoundError True\n"},
		{name: "no file written", files: map[string]string{"prog.py": "try:\n    open('/app/out.txt', 'w')\nexcept OSError as e:\n    print(isinstance(e, OSError))\n"},
			stdout: "True\n"},
		{name: "no environment", files: map[string]string{"prog.py": "import os\nprint(dict(os.environ))\n"},
			stdout: "{}\n"},
		{name: "the fixed clock", files: map[string]string{"prog.py": "import time, datetime\nprint(time.time())\nprint(datetime.datetime.now(datetime.timezone.utc).isoformat())\n"},
			stdout: "946684800.0\n2000-01-01T00:00:00+00:00\n"},
		{name: "the interpreter's version", files: map[string]string{"prog.py": "import sys\nprint('%d.%d.%d' % sys.version_info[:3])\n"},
			stdout: PythonVersion + "\n"},
	}
	fuel := map[string]uint64{}
	eachEngine(t, func(t *testing.T, e sandbox.Engine) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := runProgram(t, e, writeTree(t, c.files, "prog.py"), c.args, c.stdin, sandbox.Limits{})
				assert.Equal(t, c.stdout, r.stdout)
				assert.Equal(t, c.stderr, r.stderr)
				assert.Equal(t, c.exit, r.out.ExitCode)
				assert.Equal(t, c.stdout, string(r.out.Output), "the Outcome's output is what reached stdout")
				if c.exit == 0 {
					assert.Equal(t, sandbox.Completed, r.out.Kind, r.out.Message)
				} else {
					assert.Equal(t, sandbox.Failed, r.out.Kind)
					assert.Equal(t, "exit status "+strconv.Itoa(c.exit), r.out.Message)
				}
				if f, ok := fuel[c.name]; ok {
					assert.Equal(t, f, r.out.FuelUsed, "the same fuel on every engine")
				}
				fuel[c.name] = r.out.FuelUsed
			})
		}
	})
}

// lockedBuffer is a strings.Builder that, like the standard streams, may
// be written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestProgramIsDeterministic: random numbers come from a stream seeded
// from the stdin, hashes are fixed: the same stdin gives the same output on
// every run, another stdin other numbers.
func TestProgramIsDeterministic(t *testing.T) {
	file := writeTree(t, map[string]string{"prog.py": "import random, os, uuid, sys\nsys.stdin.read()\nprint(random.random(), os.urandom(4).hex(), uuid.uuid4(), hash('abc'), sorted({'b', 'a', 'c'}))\n"}, "prog.py")
	eachEngine(t, func(t *testing.T, e sandbox.Engine) {
		a := runProgram(t, e, file, nil, "one", sandbox.Limits{})
		b := runProgram(t, e, file, nil, "one", sandbox.Limits{})
		c := runProgram(t, e, file, nil, "two", sandbox.Limits{})
		require.Equal(t, sandbox.Completed, a.out.Kind, a.stderr)
		assert.Equal(t, a.stdout, b.stdout)
		assert.Equal(t, a.out.FuelUsed, b.out.FuelUsed)
		assert.NotEqual(t, strings.Fields(a.stdout)[0], strings.Fields(c.stdout)[0], "another stdin, other random numbers")
	})
}

// TestProgramLimits: each limit stops a program as it stops any guest, with
// no exit status of its own, after what it wrote before.
func TestProgramLimits(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		lim    sandbox.Limits
		kind   sandbox.OutcomeKind
		stdout string
	}{
		// 2 billion units: about a second of the fastest loop measured,
		// far within the default clock (1,250 s).
		{"fuel", "print('before', flush=True)\nwhile True:\n    pass\n", sandbox.Limits{Fuel: 2_000_000_000}, sandbox.FuelExhausted, "before\n"},
		{"memory, as a MemoryError", "print('before', flush=True)\nxs = [0] * 100_000_000\n", sandbox.Limits{MemoryPages: 700}, sandbox.MemoryExhausted, "before\n"},
		{"stdout", "for i in range(100):\n    print('x' * 99)\n", sandbox.Limits{MaxOutputBytes: 1000}, sandbox.OutputTooLarge, ""},
		{"stderr, at the output bound too", "import sys\nfor i in range(100):\n    print('x' * 99, file=sys.stderr)\n", sandbox.Limits{MaxOutputBytes: 1000}, sandbox.OutputTooLarge, ""},
	}
	eachEngine(t, func(t *testing.T, e sandbox.Engine) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := runProgram(t, e, writeTree(t, map[string]string{"prog.py": c.src}, "prog.py"), nil, "", c.lim)
				assert.Equal(t, c.kind, r.out.Kind, r.out.Message)
				assert.Equal(t, -1, r.out.ExitCode)
				assert.Equal(t, c.stdout, r.stdout)
				assert.LessOrEqual(t, len(r.stderr), 1000)
			})
		}
	})
}

// TestProgramStreamsAsWritten: what a program writes reaches the caller's
// writer while it still runs. The program writes a line and never ends; the
// line is read before the run is stopped.
func TestProgramStreamsAsWritten(t *testing.T) {
	file := writeTree(t, map[string]string{"prog.py": "print('first', flush=True)\nwhile True:\n    pass\n"}, "prog.py")
	c, err := ProgramCode(file)
	require.NoError(t, err)
	e := enginetest.Engine(t, enginetest.JSEngines()[0])
	pr, pw := io.Pipe()
	p, err := NewProgram(context.Background(), e, c, sandbox.Manifest{ExecutorID: "python", Version: PythonVersion}, ProgramOptions{Stdout: pw})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() {
		_, err := p.Execute(ctx, sandbox.Input{Limits: sandbox.Limits{Fuel: 1 << 62, TimeoutMs: 600_000}})
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	select {
	case err := <-done:
		t.Fatalf("the program ended (%v) before its first line was read", err)
	default:
	}
	cancel()
	go io.Copy(io.Discard, pr)
	assert.True(t, errors.Is(<-done, context.Canceled))
}

// TestProgramCode: a program's tree is its directory, its main module
// AppRoot/NAME; what is not a program is refused by name.
func TestProgramCode(t *testing.T) {
	file := writeTree(t, map[string]string{"tool.py": "", "lib.py": "", "data.txt": "x"}, "tool.py")
	c, err := ProgramCode(file)
	require.NoError(t, err)
	assert.Equal(t, "/app/tool.py", c.Main)
	assert.Equal(t, ModeProgram, c.Mode)
	assert.Equal(t, []string{"/app"}, c.Roots)
	assert.Contains(t, c.Files, "/app/lib.py")
	assert.NotContains(t, c.Files, "/app/data.txt", "only what Python imports")

	_, err = ProgramCode(filepath.Join(t.TempDir(), "missing.py"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = ProgramCode(writeTree(t, map[string]string{"tool": ""}, "tool"))
	assert.ErrorIs(t, err, ErrTree)

	_, err = NewProgram(context.Background(), nil, Code{Mode: ModeExecutor}, sandbox.Manifest{}, ProgramOptions{})
	assert.EqualError(t, err, `pyhost: NewProgram wants code of mode "program", not "executor"`)
}
