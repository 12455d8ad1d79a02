package py_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/py"
)

// writeTree writes files (path relative to a new directory: contents) and
// returns the directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// registry loads a registry file written into dir (actions and executors
// as JSON) on engine, with the Python kind.
func registry(t *testing.T, engine sandbox.Engine, dir, config string) *pipeline.Registry {
	t.Helper()
	path := filepath.Join(dir, "registry.json")
	require.NoError(t, os.WriteFile(path, []byte(config), 0o644))
	reg, err := pipeline.LoadRegistry(context.Background(), path, engine, py.Kind())
	require.NoError(t, err)
	return reg
}

func execute(t *testing.T, reg *pipeline.Registry, action, payload string) pipeline.ActionResult {
	t.Helper()
	res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(context.Background(),
		pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload),
			TraceID: "6f1c2c1e-8a43-4a55-9f7e-0d9a3c2b1e10", TsUTC: "2026-11-27T10:00:00Z"})
	require.NoError(t, err)
	return res
}

// functionTool is a module with execute(input) that reaches every way a
// call can end.
const functionTool = `
import json

def execute(x):
    op = x.get("op")
    if op == "raise":
        raise ValueError("bad value: %r" % x.get("v"))
    if op == "none":
        return None
    if op == "set":
        return {1, 2}
    if op == "nan":
        return float("nan")
    if op == "print":
        print("to stderr, not the output")
        return {"printed": True}
    if op == "exit":
        raise SystemExit(4)
    return {"echo": x, "upper": str(x.get("v", "")).upper()}
`

// TestFunctionExecutor: a module's execute(input) gets the payload and its
// return value is the output; None is no output; an exception is FAILED
// EXECUTOR_EXCEPTION with its type and message; a value JSON cannot carry
// is OUTPUT_NOT_JSON; print() does not reach the output.
func TestFunctionExecutor(t *testing.T) {
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := writeTree(t, map[string]string{"tool.py": functionTool})
			reg := registry(t, enginetest.Engine(t, name), dir, `{
				"executors": {"tool": {"python": "tool.py"}},
				"actions": {"tool.run": {"executor": "tool", "version": "*"}}}`)

			res := execute(t, reg, "tool.run", `{"op":"echo","v":"abc"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.JSONEq(t, `{"echo":{"op":"echo","v":"abc"},"upper":"ABC"}`, string(res.Output))
			assert.Equal(t, "0.0.0", res.ExecutorVersion)
			assert.Positive(t, res.FuelUsed)

			res = execute(t, reg, "tool.run", `{"op":"none"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.Nil(t, res.OutputDigest)
			assert.Empty(t, res.Output)

			res = execute(t, reg, "tool.run", `{"op":"raise","v":7}`)
			assert.Equal(t, pipeline.StatusFailed, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorException}, res.ReasonCodes)
			assert.Equal(t, "ValueError: bad value: 7", res.Message)

			res = execute(t, reg, "tool.run", `{"op":"exit"}`)
			assert.Equal(t, pipeline.StatusFailed, res.Status)
			assert.Equal(t, "SystemExit: 4", res.Message)

			for _, op := range []string{"set", "nan"} {
				res = execute(t, reg, "tool.run", `{"op":"`+op+`"}`)
				assert.Equal(t, pipeline.StatusFailed, res.Status, op)
				assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorException, pipeline.OutputNotJSON}, res.ReasonCodes, op)
			}
			res = execute(t, reg, "tool.run", `{"op":"set"}`)
			assert.Contains(t, res.Message, "TypeError: Object of type set is not JSON serializable")

			res = execute(t, reg, "tool.run", `{"op":"print"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.JSONEq(t, `{"printed":true}`, string(res.Output))
		})
	}
}

// contractTree is an executor class written to the executor contract, in
// a package of its own that imports a helper module and a dependency from
// a site-packages directory given as python_path.
var contractTree = map[string]string{
	"app/stats_exec.py": `
from textkit import words
from textkit.scoring import score

class TextStats:
    executor_id = "text_stats"
    version = "1.2.0"
    capabilities = ["text", "stats"]
    limits = {"timeout_ms": 5000, "max_payload_bytes": 256, "max_depth": 4, "max_list_items": 10}

    def execute(self, req):
        ws = words(req.payload["text"])
        if req.payload.get("big"):
            return {"many": ["x"] * 50}
        return {"words": len(ws), "score": score(ws), "action": req.action,
                "trace_id": req.trace_id, "ts_utc": req.ts_utc, "payload_key": req["payload"]["text"][:3]}
`,
	"app/textkit/__init__.py": `
import re
from .tokens import pattern

def words(text):
    return re.findall(pattern(), text.lower())
`,
	"app/textkit/tokens.py": "def pattern():\n    return r\"[a-z']+\"\n",
	"app/textkit/scoring.py": `
import wordfreq_stub

def score(ws):
    return sum(wordfreq_stub.weight(w) for w in ws)
`,
	"site/wordfreq_stub/__init__.py": "from .table import WEIGHTS\n\ndef weight(w):\n    return WEIGHTS.get(w, 1)\n",
	"site/wordfreq_stub/table.py":    "WEIGHTS = {'the': 0, 'a': 0}\n",
	// Not importable: outside both roots.
	"secret.py": "TOKEN = 'host secret'\n",
}

// TestContractClassExecutor: an executor class's attributes are its
// manifest (capabilities upper-cased, limits enforced by the pipeline
// before and after the run); execute(self, req) gets the request's action,
// payload, trace id and time; its own package and python_path are
// importable, nothing else.
func TestContractClassExecutor(t *testing.T) {
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := writeTree(t, contractTree)
			reg := registry(t, enginetest.Engine(t, name), dir, `{
				"executors": {"text_stats": {"python": "app/stats_exec.py", "python_path": ["site"], "class": "TextStats"}},
				"actions": {"text.stats": {"executor": "text_stats", "version": "^1.2.0", "capabilities": ["TEXT", "STATS"]}}}`)

			e, ok := reg.Executor("text_stats")
			require.True(t, ok)
			m := e.Manifest()
			assert.Equal(t, "text_stats", m.ExecutorID)
			assert.Equal(t, "1.2.0", m.Version)
			assert.Equal(t, []string{"STATS", "TEXT"}, m.Capabilities, "upper-cased and sorted")
			assert.Equal(t, int64(256), m.Limits.MaxPayloadBytes)

			res := execute(t, reg, "text.stats", `{"text":"The cat and a hat"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.JSONEq(t, `{"words":5,"score":3,"action":"text.stats","trace_id":"6f1c2c1e-8a43-4a55-9f7e-0d9a3c2b1e10",
				"ts_utc":"2026-11-27T10:00:00Z","payload_key":"The"}`, string(res.Output))
			assert.Equal(t, "1.2.0", res.ExecutorVersion)

			// The class's limits, enforced on the input before anything runs
			// and on the output after.
			res = execute(t, reg, "text.stats", `{"text":"`+strings.Repeat("a ", 200)+`"}`)
			assert.Equal(t, pipeline.StatusBlocked, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.PayloadTooLarge}, res.ReasonCodes)
			assert.Zero(t, res.FuelUsed, "nothing ran")
			res = execute(t, reg, "text.stats", `{"text":"x","big":true}`)
			assert.Equal(t, pipeline.StatusBlocked, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.ListTooLong}, res.ReasonCodes)
		})
	}
}

// TestClassFoundWithoutItsName: a module with no execute function and one
// executor class is that class; a module with neither is refused, saying
// what it needs.
func TestClassFoundWithoutItsName(t *testing.T) {
	engine := enginetest.Engine(t, enginetest.JSEngines()[0])
	dir := writeTree(t, map[string]string{
		"one.py": "class Upper:\n    executor_id = 'upper'\n    version = '2.0.0'\n    capabilities = []\n" +
			"    limits = {'timeout_ms': 1000, 'max_payload_bytes': 1000, 'max_depth': 4, 'max_list_items': 10}\n" +
			"    def execute(self, req):\n        return req.payload.upper()\n",
		"none.py": "X = 1\n",
	})
	reg := registry(t, engine, dir, `{
		"executors": {"upper": {"python": "one.py"}, "none": {"python": "none.py"}},
		"actions": {"up": {"executor": "upper", "version": "^2.0.0"}, "none": {"executor": "none", "version": "*"}}}`)
	res := execute(t, reg, "up", `"abc"`)
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.Equal(t, `"ABC"`, string(res.Output))

	res = execute(t, reg, "none", `{}`)
	assert.Equal(t, pipeline.StatusBlocked, res.Status)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorInvalid}, res.ReasonCodes)
	assert.Contains(t, res.Message, "none defines no function execute(input); define one, or name the executor class")
}

// TestLoadRefusals: code that cannot be an executor is EXECUTOR_INVALID
// with what is wrong; code that is not there is EXECUTOR_NOT_FOUND; a class
// whose attributes are not a manifest is refused.
func TestLoadRefusals(t *testing.T) {
	engine := enginetest.Engine(t, enginetest.JSEngines()[0])
	dir := writeTree(t, map[string]string{
		"syntax.py":  "def execute(x)\n    return x\n",
		"imports.py": "import secret\n\ndef execute(x):\n    return x\n",
		"badver.py": "class B:\n    executor_id = 'badver'\n    version = 'one'\n    capabilities = []\n" +
			"    limits = {}\n    def execute(self, req):\n        return None\n",
		"sub/secret.py": "TOKEN = 1\n",
		"json.py":       "def execute(x):\n    return x\n",
	})
	reg := registry(t, engine, dir, `{
		"executors": {"syntax": {"python": "syntax.py"}, "imports": {"python": "imports.py"},
		              "badver": {"python": "badver.py"}, "gone": {"python": "gone.py"}, "json": {"python": "json.py"}},
		"actions": {"syntax": {"executor": "syntax", "version": "*"}, "imports": {"executor": "imports", "version": "*"},
		            "badver": {"executor": "badver", "version": "*"}, "gone": {"executor": "gone", "version": "*"},
		            "json": {"executor": "json", "version": "*"}}}`)
	for _, c := range []struct {
		action, code, msg string
	}{
		{"syntax", "EXECUTOR_INVALID", "SyntaxError: expected ':' (syntax.py, line 1)"},
		{"imports", "EXECUTOR_INVALID", "ModuleNotFoundError: No module named 'secret'"},
		{"badver", "EXECUTOR_INVALID", "the executor class's attributes are not a valid manifest"},
		{"gone", "EXECUTOR_NOT_FOUND", "gone.py"},
		{"json", "EXECUTOR_INVALID", "json.py has the name of the module json, which the interpreter has imported already: rename the file"},
	} {
		res := execute(t, reg, c.action, `{}`)
		assert.Equal(t, pipeline.StatusBlocked, res.Status, c.action)
		assert.Equal(t, []pipeline.ReasonCode{pipeline.ReasonCode(c.code)}, res.ReasonCodes, c.action)
		assert.Contains(t, res.Message, c.msg, c.action)
	}
}

// TestWithoutTheKind: a registry not given py.Kind() says which package to
// import.
func TestWithoutTheKind(t *testing.T) {
	dir := writeTree(t, map[string]string{"tool.py": functionTool})
	_, err := pipeline.LoadExecutor(context.Background(), enginetest.Engine(t, enginetest.JSEngines()[0]),
		pipeline.ExecutorSource{Python: filepath.Join(dir, "tool.py")})
	require.ErrorIs(t, err, pipeline.ErrNoKind)
	assert.Contains(t, err.Error(), "import github.com/wasmgate/wasmgate/py and give py.Kind()")
}

// limitsTool runs until a limit stops it.
const limitsTool = `
def execute(x):
    op = x["op"]
    if op == "loop":
        n = 0
        while True:
            n += 1
    if op == "memory":
        keep = []
        while True:
            keep.append(bytearray(1 << 20))
    if op == "recursion":
        def f(n):
            return f(n + 1)
        return f(0)
    if op == "output":
        return "x" * 100000
    return None
`

// TestLimits: fuel, wall time, memory, recursion and output size end a
// Python call as they end any guest's.
func TestLimits(t *testing.T) {
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := writeTree(t, map[string]string{"limits.py": limitsTool})
			reg := registry(t, enginetest.Engine(t, name), dir, `{
				"executors": {"limits": {"python": "limits.py"}},
				"actions": {
					"fuel": {"executor": "limits", "version": "*", "limits": {"fuel": 50000000, "timeout_ms": 600000}},
					"clock": {"executor": "limits", "version": "*", "limits": {"fuel": 1000000000000000, "timeout_ms": 300}},
					"memory": {"executor": "limits", "version": "*", "limits": {"memory_pages": 1024}},
					"plain": {"executor": "limits", "version": "*"}}}`)
			for _, c := range []struct {
				action, op string
				status     pipeline.Status
				codes      []pipeline.ReasonCode
			}{
				{"fuel", "loop", pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}},
				{"clock", "loop", pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorTimeout}},
				{"memory", "memory", pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.MemoryExhausted}},
				{"plain", "recursion", pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException}},
				{"plain", "output", pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.OutputTooLarge}},
			} {
				res := execute(t, reg, c.action, `{"op":"`+c.op+`"}`)
				assert.Equal(t, c.status, res.Status, "%s %s: %s", c.action, c.op, res.Message)
				assert.Equal(t, c.codes, res.ReasonCodes, "%s %s: %s", c.action, c.op, res.Message)
				if c.op == "recursion" {
					assert.Equal(t, "RecursionError: maximum recursion depth exceeded", res.Message)
				}
				if c.action == "fuel" {
					assert.Equal(t, uint64(50000000), res.FuelUsed)
				}
			}
		})
	}
}

// ioTool tries every way out of the sandbox and reports what each raised.
const ioTool = `
import os

def attempt(f):
    try:
        f()
        return "no error"
    except OSError as e:
        return "OSError:" + type(e).__name__
    except BaseException as e:
        return "other:" + type(e).__name__

def execute(x):
    import socket, subprocess
    return {
        "open": attempt(lambda: open("/etc/passwd").read()),
        "write": attempt(lambda: open("/tmp/wasmgate-py-test", "w").write("x")),
        "listdir": attempt(lambda: os.listdir("/home")),
        "mkdir": attempt(lambda: os.mkdir("/tmp/wasmgate-py-dir")),
        "socket": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("127.0.0.1", 80))),
        "subprocess": attempt(lambda: subprocess.run(["ls"])),
        "environ": dict(os.environ),
        "getenv": os.getenv("HOME"),
        "file": __file__,
    }
`

// TestIORefused: every I/O route raises inside Python, as an OSError where
// Python's own API raises one (sockets are not built at all), and there is
// no environment.
func TestIORefused(t *testing.T) {
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := writeTree(t, map[string]string{"iotool.py": ioTool})
			reg := registry(t, enginetest.Engine(t, name), dir, `{
				"executors": {"io": {"python": "iotool.py"}},
				"actions": {"io": {"executor": "io", "version": "*"}}}`)
			res := execute(t, reg, "io", `{}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			var got map[string]any
			require.NoError(t, json.Unmarshal(res.Output, &got))
			for _, k := range []string{"open", "write", "listdir", "mkdir", "subprocess"} {
				assert.True(t, strings.HasPrefix(got[k].(string), "OSError:"), "%s: %v", k, got[k])
			}
			assert.NotEqual(t, "no error", got["socket"])
			assert.Equal(t, map[string]any{}, got["environ"])
			assert.Nil(t, got["getenv"])
			assert.Equal(t, "/app/iotool.py", got["file"], "the code sees its virtual tree, not the host's paths")
		})
	}
	_ = os.Remove("/tmp/wasmgate-py-test")
}

// determinismTool shows what could vary between runs: hash randomization,
// set order, the random module, os.urandom, uuid4, the clock.
const determinismTool = `
import os, random, uuid, time

def execute(x):
    return {"hash": hash("wasmgate"), "set": list({"pear", "apple", "fig", "kiwi"}),
            "random": random.random(), "urandom": os.urandom(8).hex(), "uuid": str(uuid.uuid4()),
            "time": time.time(), "x": x}
`

// TestDeterministicOnEveryEngine: the same code and input give the same
// output, digests and fuel on every run and engine; another input draws
// other random numbers.
func TestDeterministicOnEveryEngine(t *testing.T) {
	dir := writeTree(t, map[string]string{"det.py": determinismTool})
	type run struct {
		out, digest string
		fuel        uint64
	}
	var runs []run
	var other []string
	for _, name := range enginetest.JSEnginesCompared() {
		reg := registry(t, enginetest.Engine(t, name), dir, `{
			"executors": {"det": {"python": "det.py"}},
			"actions": {"det": {"executor": "det", "version": "*"}}}`)
		for range 2 {
			res := execute(t, reg, "det", `{"n":1}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			runs = append(runs, run{string(res.Output), *res.OutputDigest, res.FuelUsed})
		}
		res := execute(t, reg, "det", `{"n":2}`)
		other = append(other, string(res.Output))
	}
	for i := range runs {
		assert.Equal(t, runs[0], runs[i], "run %d", i)
	}
	for i := range other {
		assert.Equal(t, other[0], other[i])
	}
	var a, b map[string]any
	require.NoError(t, json.Unmarshal([]byte(runs[0].out), &a))
	require.NoError(t, json.Unmarshal([]byte(other[0]), &b))
	assert.NotEqual(t, a["random"], b["random"], "the random module draws from the input's stream")
	assert.NotEqual(t, a["uuid"], b["uuid"])
	assert.Equal(t, a["hash"], b["hash"], "hash randomization is fixed for the code")
	assert.Equal(t, 946684800.0, a["time"])
}
