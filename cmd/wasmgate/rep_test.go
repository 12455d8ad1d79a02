package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive `wasmgate rep` as TraceMind's orchestrator does, and
// check what it answers against REP v0.1 and Flow IR 1.0.0
// (../shared/seeds/001_9bbe6fb852bdaa67.txt, ../shared/specs/tracemind-flow-ir).

// repClient drives `wasmgate rep` as a client would: stdin stays open,
// requests are written one per line, responses read one per line.
type repClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	nextID int
	exited bool
}

// repWait bounds every wait for the runtime; nothing in these tests should
// come near it.
const repWait = 30 * time.Second

func startRep(t *testing.T, env []string, args ...string) *repClient {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"rep"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c := &repClient{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 64), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if !c.exited {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// repConfig is the registry of the fixtures of testdata/rep.
func repConfig() string { return filepath.Join("..", "..", "testdata", "rep", "registry.json") }

// repTraceMindConfig registers TraceMind's step kinds (guests/js/tracemind).
func repTraceMindConfig() string {
	return filepath.Join("..", "..", "testdata", "rep", "tracemind.json")
}

type repResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *repError       `json:"error"`
}

type repError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// repErrorData is REP's error data (§6).
type repErrorData struct {
	StepID    string         `json:"step_id"`
	Attempt   int            `json:"attempt"`
	Retriable bool           `json:"retriable"`
	Details   map[string]any `json:"details"`
}

func (e *repError) data(t *testing.T) repErrorData {
	t.Helper()
	var d repErrorData
	require.NoError(t, json.Unmarshal(e.Data, &d), string(e.Data))
	return d
}

// next reads the next response line.
func (c *repClient) next() string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		require.True(c.t, ok, "wasmgate rep closed its stdout")
		return l
	case <-time.After(repWait):
		c.t.Fatalf("no response from wasmgate rep within %s", repWait)
	}
	return ""
}

// send writes one raw line and reads the response to it: one JSON object
// on one line (REP §4).
func (c *repClient) send(line string) repResponse {
	c.t.Helper()
	c.write(line)
	raw := c.next()
	var r repResponse
	require.NoError(c.t, json.Unmarshal([]byte(raw), &r), raw)
	require.Equal(c.t, "2.0", r.JSONRPC, raw)
	return r
}

func (c *repClient) write(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.stdin, line+"\n")
	require.NoError(c.t, err)
}

// call sends a request with the next numeric id, as REP's orchestrator
// numbers them (§4), and checks the id echoed.
func (c *repClient) call(method string, params any) repResponse {
	c.t.Helper()
	c.nextID++
	req := map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	require.NoError(c.t, err)
	r := c.send(string(b))
	require.Equal(c.t, fmt.Sprint(c.nextID), string(r.ID))
	return r
}

// result calls method and decodes its result into dst, failing on an error.
func (c *repClient) result(method string, params, dst any) json.RawMessage {
	c.t.Helper()
	r := c.call(method, params)
	require.Nil(c.t, r.Error, "%s: %+v", method, r.Error)
	require.NoError(c.t, json.Unmarshal(r.Result, dst))
	return r.Result
}

// fail calls method and returns its error, failing on a result.
func (c *repClient) fail(method string, params any) *repError {
	c.t.Helper()
	r := c.call(method, params)
	require.NotNil(c.t, r.Error, "%s answered %s", method, r.Result)
	require.Nil(c.t, r.Result)
	return r.Error
}

// startRun starts a run and returns its id.
func (c *repClient) startRun(params any) string {
	c.t.Helper()
	var res struct {
		RunID   string `json:"run_id"`
		TraceID string `json:"trace_id"`
	}
	c.result("Runtime.StartRun", params, &res)
	require.NotEmpty(c.t, res.RunID)
	require.Regexp(c.t, repUUIDRE, res.TraceID)
	return res.RunID
}

type repPoll struct {
	Status  string     `json:"status"`
	Events  []repEvent `json:"events"`
	Summary struct {
		CompletedSteps int                        `json:"completed_steps"`
		FailedSteps    int                        `json:"failed_steps"`
		SkippedSteps   int                        `json:"skipped_steps"`
		TotalSteps     int                        `json:"total_steps"`
		Attempts       int                        `json:"attempts"`
		Outputs        map[string]json.RawMessage `json:"outputs"`
		StartedAt      string                     `json:"started_at"`
		FinishedAt     string                     `json:"finished_at"`
	} `json:"summary"`
	RunID    string          `json:"run_id"`
	TraceID  string          `json:"trace_id"`
	LastSeq  int             `json:"last_seq"`
	Error    *repError       `json:"error"`
	Metadata json.RawMessage `json:"metadata"`
	raw      json.RawMessage
}

type repEvent struct {
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Seq       int             `json:"seq"`
	Level     string          `json:"level"`
	Message   string          `json:"message"`
	StepID    string          `json:"step_id"`
	State     string          `json:"state"`
	Kind      string          `json:"kind"`
	Attempt   *int            `json:"attempt"`
	Retriable *bool           `json:"retriable"`
	WillRetry *bool           `json:"will_retry"`
	Result    json.RawMessage `json:"result"`
}

func (c *repClient) poll(runID string, since int) repPoll {
	c.t.Helper()
	var p repPoll
	p.raw = c.result("Runtime.Poll", map[string]any{"run_id": runID, "since": since}, &p)
	// REP's four statuses, and nothing else, at every poll.
	require.Contains(c.t, []string{"pending", "running", "completed", "failed"}, p.Status)
	return p
}

// await polls runID until done(poll) holds.
func (c *repClient) await(runID string, done func(repPoll) bool) repPoll {
	c.t.Helper()
	deadline := time.Now().Add(repWait)
	for {
		p := c.poll(runID, 0)
		if done(p) {
			return p
		}
		require.True(c.t, time.Now().Before(deadline), "run %s is still %s", runID, p.Status)
		time.Sleep(10 * time.Millisecond)
	}
}

// finish polls runID until it has finished.
func (c *repClient) finish(runID string) repPoll {
	c.t.Helper()
	return c.await(runID, func(p repPoll) bool { return p.Status == "completed" || p.Status == "failed" })
}

// running polls runID until its step stepID has started.
func (c *repClient) running(runID, stepID string) repPoll {
	c.t.Helper()
	return c.await(runID, func(p repPoll) bool {
		for _, e := range p.Events {
			if e.Type == "step" && e.StepID == stepID && e.State == "started" {
				return true
			}
		}
		return false
	})
}

// close ends stdin and returns the exit code once the command has exited.
func (c *repClient) close() int {
	c.t.Helper()
	require.NoError(c.t, c.stdin.Close())
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		c.exited = true
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(c.t, err)
		return 0
	case <-time.After(repWait):
		c.t.Fatalf("wasmgate rep did not exit after end of input")
	}
	return -1
}

const repUUIDRE = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`

// repIR is a Flow IR document with every member the schema requires, as
// TraceMind's compiler writes one, and these nodes and edges.
func repIR(nodes, edges string) json.RawMessage { return repIRWith(0, `{}`, nodes, edges) }

// repIRWith is repIR with a flow.timeout_ms and an inputs_schema.
func repIRWith(timeoutMs int, inputsSchema, nodes, edges string) json.RawMessage {
	return json.RawMessage(`{"version":"1.0.0","flow":{"name":"test","timeout_ms":` + fmt.Sprint(timeoutMs) + `},` +
		`"constants":{"policyRef":"test.policy","policy":{"limit":3}},"inputs_schema":` + inputsSchema + `,` +
		`"graph":{"nodes":` + nodes + `,"edges":` + edges + `},` +
		`"metadata":{"generated_at":"2026-11-24T00:00:00Z","source_file":"test.wdl"}}`)
}

// repNode is a node with zero timeout_ms and retry, as the compiler emits.
func repNode(id, typ, with string) string { return repNodeT(id, typ, with, 0, 0, 0) }

// repNodeT is a node with a timeout_ms and a retry policy.
func repNodeT(id, typ, with string, timeoutMs, retries, backoffMs int) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"with":%s,"timeout_ms":%d,"retry":{"max":%d,"backoff_ms":%d}}`, id, typ, with, timeoutMs, retries, backoffMs)
}

func repEdge(from, to string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"on":"success"}`, from, to)
}
func repFailEdge(from, to string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"on":"failure"}`, from, to)
}
func repCaseEdge(from, to, c string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"on":"success","case":%q}`, from, to, c)
}
func repList(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

// repExample is one of TraceMind's compiled IRs, copied from
// ../shared/specs/tracemind-flow-ir/examples.
func repExample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "rep", name))
	require.NoError(t, err)
	return b
}

// stepEvents lists a poll's step events as "step_id state attempt".
func stepEvents(p repPoll) []string {
	var out []string
	for _, e := range p.Events {
		if e.Type != "step" {
			continue
		}
		s := e.StepID + " " + e.State
		if e.Attempt != nil {
			s += fmt.Sprintf(" %d", *e.Attempt)
		}
		out = append(out, s)
	}
	return out
}

// logMessages lists a poll's log messages.
func logMessages(p repPoll) []string {
	var out []string
	for _, e := range p.Events {
		if e.Type == "log" {
			out = append(out, e.Message)
		}
	}
	return out
}

var repTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// assertREPEvents checks every event of a poll against REP §7, on the
// bytes: type and timestamp (RFC 3339) always; step_id and state (started,
// succeeded or failed) on step events; level and message on log events.
func assertREPEvents(t *testing.T, p repPoll) {
	t.Helper()
	var res struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	require.NoError(t, json.Unmarshal(p.raw, &res))
	require.NotEmpty(t, res.Events)
	str := func(e map[string]json.RawMessage, k string) string {
		var s string
		require.Contains(t, e, k, "event %v has no %s", e, k)
		require.NoError(t, json.Unmarshal(e[k], &s), "%s of %v", k, e)
		return s
	}
	for i, e := range res.Events {
		ts := str(e, "timestamp")
		_, err := time.Parse(time.RFC3339, ts)
		assert.NoError(t, err, ts)
		assert.Regexp(t, repTimestamp, ts)
		assert.Equal(t, json.RawMessage(fmt.Sprint(i+1)), e["seq"])
		switch typ := str(e, "type"); typ {
		case "step":
			assert.NotEmpty(t, str(e, "step_id"))
			assert.Contains(t, []string{"started", "succeeded", "failed"}, str(e, "state"))
		case "log":
			assert.NotEmpty(t, str(e, "level"))
			assert.NotEmpty(t, str(e, "message"))
		default:
			t.Errorf("event type %q is neither log nor step", typ)
		}
	}
}

func TestRepHandshake(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "3")
	type caps struct {
		Version   string   `json:"version"`
		StepKinds []string `json:"step_kinds"`
		Limits    struct {
			Concurrency int `json:"concurrency"`
		} `json:"limits"`
		IRVersion        string   `json:"ir_version"`
		Compatible       bool     `json:"compatible"`
		MissingStepKinds []string `json:"missing_step_kinds"`
	}
	allKinds := []string{"math.sort", "math.sum", "test.echo", "test.fail", "test.fuel", "test.hang", "text.upper", "switch"}

	t.Run("as REP's orchestrator asks", func(t *testing.T) {
		var got caps
		raw := c.result("Runtime.Capabilities", map[string]any{}, &got)
		// REP §5.1's required fields: version (semver), step_kinds,
		// limits.concurrency.
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &fields))
		for _, k := range []string{"version", "step_kinds", "limits"} {
			assert.Contains(t, fields, k)
		}
		assert.Regexp(t, `^\d+\.\d+\.\d+$`, got.Version)
		assert.Equal(t, "0.1.0", got.Version)
		assert.Equal(t, "1.0.0", got.IRVersion)
		assert.Equal(t, allKinds, got.StepKinds)
		assert.Equal(t, 3, got.Limits.Concurrency)
		assert.True(t, got.Compatible)
		assert.Equal(t, []string{}, got.MissingStepKinds)
	})
	t.Run("without params", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", nil, &got)
		assert.Equal(t, allKinds, got.StepKinds)
	})
	t.Run("with params a later REP adds", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", map[string]any{"plugin_family": "wasm", "version": "0.1.0"}, &got)
		assert.Equal(t, allKinds, got.StepKinds)
		assert.True(t, got.Compatible)
	})
	t.Run("match", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", map[string]any{"version": "0.1.4", "step_kinds": []string{"math.sort", "switch"}}, &got)
		assert.True(t, got.Compatible)
		assert.Equal(t, []string{}, got.MissingStepKinds)
	})
	t.Run("missing step kinds", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", map[string]any{"version": "0.1.0", "step_kinds": []string{"math.sort", "net.fetch", "shell.exec", "net.fetch"}}, &got)
		assert.False(t, got.Compatible)
		assert.Equal(t, []string{"net.fetch", "shell.exec"}, got.MissingStepKinds)
	})
	for _, v := range []string{"1.0.0", "0.2.0"} {
		t.Run("incompatible version "+v, func(t *testing.T) {
			e := c.fail("Runtime.Capabilities", map[string]any{"version": v})
			assert.Equal(t, -32602, e.Code)
			assert.Equal(t, "protocol version "+v+" is incompatible with this runtime's 0.1.0", e.Message)
			assert.JSONEq(t, `{"version":"0.1.0"}`, string(e.Data))
		})
	}
	t.Run("malformed version", func(t *testing.T) {
		e := c.fail("Runtime.Capabilities", map[string]any{"version": "v1"})
		assert.Equal(t, -32602, e.Code)
		assert.Contains(t, e.Message, `"v1" is not a semantic version`)
	})
	assert.Equal(t, 0, c.close())
}

// TestRepTraceMindExamples runs the two IRs TraceMind's compiler emitted
// (../shared/specs/tracemind-flow-ir/examples) as they are, with executors
// for their step kinds.
func TestRepTraceMindExamples(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repTraceMindConfig())
	var caps struct {
		StepKinds []string `json:"step_kinds"`
	}
	c.result("Runtime.Capabilities", map[string]any{}, &caps)
	assert.Equal(t, []string{"dsl.emit", "finish", "opcua.read", "opcua.write", "policy.apply", "switch"}, caps.StepKinds)
	plant := repExample(t, "plant-monitor.ir.json")
	metadata := `{"generated_at":"2026-11-24T00:34:07Z","source_file":"plant/dsl/plant.wdl"}`

	t.Run("plant-monitor, a hot plant: the policy writes back", func(t *testing.T) {
		// TraceMind's own inputs for this flow (examples/dsl/opcua/input.json).
		inputs := map[string]any{"endpoint": "opc.tcp://localhost:4840", "nodes": []string{"ns=2;i=2", "ns=2;i=5001"}}
		p := c.finish(c.startRun(map[string]any{"ir": plant, "inputs": inputs, "options": map[string]any{"run_id": "plant-hot"}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.Nil(t, p.Error)
		assertREPEvents(t, p)
		assert.Equal(t, []string{
			"read started 1", "read succeeded 1",
			"decide started 1", "decide succeeded 1",
			"when_0 started 1", "when_0 succeeded 1",
			"write started 1", "write succeeded 1",
			"emit_1 started 1", "emit_1 succeeded 1",
			"finish_2 started 1", "finish_2 succeeded 1",
		}, stepEvents(p))
		decision := `{"action":"WRITE_BACK","policy_id":"plant","reason":{"temp":80,"threshold":"75.0"},"target_node":"ns=2;i=5001","value":1}`
		out := p.Summary.Outputs
		assert.JSONEq(t, `{"endpoint":"opc.tcp://localhost:4840","simulated":true,"values":{"ns=2;i=2":80,"ns=2;i=5001":80}}`, string(out["read"]))
		assert.JSONEq(t, decision, string(out["decide"]))
		assert.JSONEq(t, `{"case":"WRITE_BACK","value":"WRITE_BACK"}`, string(out["when_0"]))
		assert.JSONEq(t, `{"endpoint":"opc.tcp://localhost:4840","node_id":"ns=2;i=5001","simulated":true,"status":"ok","value":1}`, string(out["write"]))
		assert.JSONEq(t, `{"decision":`+decision+`}`, string(out["emit_1"]))
		assert.Equal(t, "null", string(out["finish_2"]))
		assert.Equal(t, 6, p.Summary.CompletedSteps)
		assert.Equal(t, 0, p.Summary.FailedSteps)
		assert.Equal(t, 6, p.Summary.TotalSteps)
		assert.JSONEq(t, metadata, string(p.Metadata), "the IR's metadata is kept on the run")
	})
	t.Run("plant-monitor, a cool plant: the switch takes its default", func(t *testing.T) {
		inputs := map[string]any{"endpoint": "opc.tcp://localhost:4840?value=70", "nodes": []string{"ns=2;i=2"}}
		p := c.finish(c.startRun(map[string]any{"ir": plant, "inputs": inputs}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assertREPEvents(t, p)
		assert.Equal(t, []string{
			"read started 1", "read succeeded 1",
			"decide started 1", "decide succeeded 1",
			"when_0 started 1", "when_0 succeeded 1",
			"emit_1 started 1", "emit_1 succeeded 1",
			"finish_2 started 1", "finish_2 succeeded 1",
		}, stepEvents(p))
		assert.JSONEq(t, `{"case":"_DEFAULT","value":"NONE"}`, string(p.Summary.Outputs["when_0"]))
		assert.Contains(t, string(p.Summary.Outputs["emit_1"]), `"action":"NONE"`)
		assert.Contains(t, logMessages(p), `step "write" skipped: no edge into it was taken`)
		assert.Equal(t, 1, p.Summary.SkippedSteps)
	})
	t.Run("plant-monitor without its inputs: an unresolvable reference", func(t *testing.T) {
		// inputs_schema is TraceMind's metadata, not a JSON Schema: the
		// inputs are not checked against it, and the first reference to a
		// missing input fails its step.
		p := c.finish(c.startRun(map[string]any{"ir": plant, "inputs": map[string]any{}}))
		require.Equal(t, "failed", p.Status)
		assert.Equal(t, 2001, p.Error.Code)
		assert.Equal(t, `step "read": unresolvable reference "$input.endpoint": no field "endpoint" in the run's inputs`, p.Error.Message)
		d := p.Error.data(t)
		assert.Equal(t, "read", d.StepID)
		assert.Equal(t, 0, d.Attempt)
		assert.Equal(t, "unresolved_reference", d.Details["reason"])
		assert.Equal(t, []string{"read failed 0"}, stepEvents(p))
	})
	t.Run("sample", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": repExample(t, "sample.ir.json"), "inputs": map[string]any{}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assertREPEvents(t, p)
		decision := `{"action":"PASS","policy_id":"sample"}`
		assert.JSONEq(t, decision, string(p.Summary.Outputs["decide"]))
		assert.JSONEq(t, `{"decision":`+decision+`}`, string(p.Summary.Outputs["emit"]))
		assert.JSONEq(t, `{"result":`+decision+`}`, string(p.Summary.Outputs["emit_0"]))
		assert.Equal(t, 4, p.Summary.CompletedSteps)
		assert.JSONEq(t, `{"generated_at":"2026-11-24T00:32:01Z","source_file":"sample/dsl/sample.wdl"}`, string(p.Metadata))
	})
	assert.Equal(t, 0, c.close())
}

func TestRepFlowCompletes(t *testing.T) {
	t.Parallel()
	// Every reference form: the compiler's ($input, $step, $.vars,
	// $.inputs), the ${...} ones, and the constants.
	c := startRep(t, nil, "--config", repConfig())
	id := c.startRun(map[string]any{
		"ir": repIR(repList(
			repNode("sort", "math.sort", `{"numbers":"$input.numbers"}`),
			repNode("sum", "math.sum", `{"numbers":"$step.sort.sorted"}`),
			repNode("echo", "test.echo", `{"a":"$.vars.sum.sum","b":"${steps.sort.output.count}","c":"${inputs.meta.title}","d":"$.inputs.meta",`+
				`"e":"$constants.policyRef","f":"$.constants.policy.limit","g":"${constants.policy}","h":" $step.sort.sorted.0 ",`+
				`"lit":"costs $5 for ${x} $inputs","esc":"$$input.numbers"}`),
			repNode("title", "text.upper", `{"text":"$input.meta.title"}`)),
			repList(repEdge("sort", "sum"), repEdge("sum", "echo"), repEdge("echo", "title"))),
		"inputs":  map[string]any{"numbers": []int{3, 1, 2}, "meta": map[string]any{"title": "governed"}},
		"options": map[string]any{"run_id": "flow-1"},
	})
	assert.Equal(t, "flow-1", id)
	p := c.finish(id)
	require.Equal(t, "completed", p.Status, "%+v", p.Error)
	assert.Nil(t, p.Error)
	assertREPEvents(t, p)
	assert.Equal(t, []string{
		"sort started 1", "sort succeeded 1",
		"sum started 1", "sum succeeded 1",
		"echo started 1", "echo succeeded 1",
		"title started 1", "title succeeded 1",
	}, stepEvents(p))
	assert.JSONEq(t, `{"count":3,"max":3,"min":1,"sorted":[1,2,3]}`, string(p.Summary.Outputs["sort"]))
	assert.JSONEq(t, `{"sum":6}`, string(p.Summary.Outputs["sum"]))
	assert.JSONEq(t, `{"a":6,"b":3,"c":"governed","d":{"title":"governed"},"e":"test.policy","f":3,"g":{"limit":3},"h":1,`+
		`"lit":"costs $5 for ${x} $inputs","esc":"$input.numbers"}`, string(p.Summary.Outputs["echo"]))
	assert.JSONEq(t, `{"text":"GOVERNED"}`, string(p.Summary.Outputs["title"]))
	assert.Equal(t, 4, p.Summary.TotalSteps)
	assert.Equal(t, 4, p.Summary.CompletedSteps)
	assert.Equal(t, 4, p.Summary.Attempts)
	assert.Regexp(t, repTimestamp, p.Summary.FinishedAt)

	// The log opens and closes the run.
	assert.Equal(t, "log", p.Events[0].Type)
	assert.Equal(t, `run of flow "test" started: 4 steps`, p.Events[0].Message)
	last := p.Events[len(p.Events)-1]
	assert.Equal(t, "log", last.Type)
	assert.Equal(t, "run completed", last.Message)
	assert.Equal(t, len(p.Events), p.LastSeq)

	// A succeeded step event carries the step's audited verdict.
	var verdict struct {
		Action       string   `json:"action"`
		ExecutorID   string   `json:"executor_id"`
		Status       string   `json:"status"`
		ReasonCodes  []string `json:"reason_codes"`
		OutputDigest string   `json:"output_digest"`
		TraceID      string   `json:"trace_id"`
	}
	require.NoError(t, json.Unmarshal(p.Events[2].Result, &verdict))
	assert.Equal(t, "math.sort", verdict.Action)
	assert.Equal(t, "sort", verdict.ExecutorID)
	assert.Equal(t, "SUCCESS", verdict.Status)
	assert.Equal(t, []string{}, verdict.ReasonCodes)
	assert.Len(t, verdict.OutputDigest, 64)
	assert.Equal(t, p.TraceID, verdict.TraceID)

	// Polling since the last seq returns nothing new.
	again := c.poll(id, p.LastSeq)
	assert.Equal(t, []repEvent{}, again.Events)
	assert.Equal(t, p.LastSeq, again.LastSeq)
	assert.Equal(t, 0, c.close())
}

func TestRepSwitch(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	// As TraceMind's compiler emits a `when`: key_from, cases to nodes, a
	// default case, edges carrying the cases, zero timeout_ms and retry.
	flowIR := func(keyFrom string) json.RawMessage {
		return repIR(repList(
			repNode("sort", "math.sort", `{"numbers":"$input.numbers"}`),
			repNode("size", "switch", `{"key_from":"`+keyFrom+`","cases":{"2":"pair","_DEFAULT":"other"},"default":"_DEFAULT"}`),
			repNode("pair", "math.sum", `{"numbers":"$step.sort.sorted"}`),
			repNode("other", "text.upper", `{"text":"not a pair"}`),
			repNode("after", "text.upper", `{"text":"$$input"}`)),
			repList(repEdge("sort", "size"), repCaseEdge("size", "pair", "2"), repCaseEdge("size", "other", "_DEFAULT"),
				repEdge("pair", "after"), repEdge("other", "after")))
	}
	t.Run("a case", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR("$.vars.sort.count"), "inputs": map[string]any{"numbers": []int{5, 4}}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assertREPEvents(t, p)
		assert.Equal(t, []string{
			"sort started 1", "sort succeeded 1",
			"size started 1", "size succeeded 1",
			"pair started 1", "pair succeeded 1",
			"after started 1", "after succeeded 1",
		}, stepEvents(p))
		assert.Contains(t, logMessages(p), `step "other" skipped: no edge into it was taken`)
		assert.JSONEq(t, `{"case":"2","value":2}`, string(p.Summary.Outputs["size"]))
		assert.JSONEq(t, `{"sum":9}`, string(p.Summary.Outputs["pair"]))
		assert.JSONEq(t, `{"text":"$INPUT"}`, string(p.Summary.Outputs["after"]))
		assert.Equal(t, 1, p.Summary.SkippedSteps)
	})
	t.Run("the default", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR("$step.sort.count"), "inputs": map[string]any{"numbers": []int{1, 2, 3}}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.JSONEq(t, `{"case":"_DEFAULT","value":3}`, string(p.Summary.Outputs["size"]))
		assert.JSONEq(t, `{"text":"NOT A PAIR"}`, string(p.Summary.Outputs["other"]))
		assert.NotContains(t, p.Summary.Outputs, "pair")
	})
	t.Run("a key from the inputs", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR("$.inputs.mode"), "inputs": map[string]any{"numbers": []int{1}, "mode": 2}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.JSONEq(t, `{"case":"2","value":2}`, string(p.Summary.Outputs["size"]))
	})
	assert.Equal(t, 0, c.close())
}

func TestRepFailureEdges(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	t.Run("taken when the step fails for good", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": repIR(repList(
			repNodeT("boom", "test.fail", `{}`, 0, 1, 5),
			repNode("next", "math.sum", `{"numbers":[1]}`),
			repNode("recover", "text.upper", `{"text":"recovered"}`),
			repNode("done", "text.upper", `{"text":"done"}`)),
			repList(repEdge("boom", "next"), repFailEdge("boom", "recover"), repEdge("next", "done"), repEdge("recover", "done")))}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.Nil(t, p.Error)
		assertREPEvents(t, p)
		assert.Equal(t, []string{
			"boom started 1", "boom failed 1", "boom started 2", "boom failed 2",
			"recover started 1", "recover succeeded 1",
			"done started 1", "done succeeded 1",
		}, stepEvents(p))
		assert.Contains(t, logMessages(p), `step "boom" failed on attempt 2: deliberate failure; taking its failure edges to "recover"`)
		assert.Contains(t, logMessages(p), `step "next" skipped: no edge into it was taken`)
		assert.Equal(t, 1, p.Summary.FailedSteps)
		assert.Equal(t, 2, p.Summary.CompletedSteps)
		assert.Equal(t, 1, p.Summary.SkippedSteps)
	})
	t.Run("not taken when it succeeds", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": repIR(repList(
			repNode("ok", "math.sum", `{"numbers":[1]}`),
			repNode("recover", "text.upper", `{"text":"recovered"}`)),
			repList(repFailEdge("ok", "recover")))}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.Equal(t, []string{"ok started 1", "ok succeeded 1"}, stepEvents(p))
		assert.Contains(t, logMessages(p), `step "recover" skipped: no edge into it was taken`)
	})
	assert.Equal(t, 0, c.close())
}

func TestRepStepFailures(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	type failure struct {
		code      int
		stepID    string
		attempt   int
		retriable bool
		reason    string
		cause     string
	}
	tests := []struct {
		name    string
		ir      json.RawMessage
		inputs  map[string]any
		want    failure
		codes   []string
		message string
		steps   []string
	}{
		{
			name: "executor error, retried until retry.max",
			ir: repIR(repList(repNode("ok", "math.sum", `{"numbers":[1]}`), repNodeT("boom", "test.fail", `{}`, 0, 2, 5)),
				repList(repEdge("ok", "boom"))),
			want:  failure{2001, "boom", 3, true, "step_failed", ""},
			codes: []string{"EXECUTOR_EXCEPTION"}, message: `step "boom" failed on attempt 3: deliberate failure`,
			steps: []string{"ok started 1", "ok succeeded 1", "boom started 1", "boom failed 1", "boom started 2", "boom failed 2", "boom started 3", "boom failed 3"},
		},
		{
			name:  "executor error without retry",
			ir:    repIR(repList(repNode("boom", "test.fail", `{}`), repNode("never", "math.sum", `{"numbers":[1]}`)), repList(repEdge("boom", "never"))),
			want:  failure{2001, "boom", 1, true, "step_failed", ""},
			codes: []string{"EXECUTOR_EXCEPTION"}, message: `step "boom" failed on attempt 1: deliberate failure`,
			steps: []string{"boom started 1", "boom failed 1"},
		},
		{
			name:  "governance refusal is not retried",
			ir:    repIR(repList(repNodeT("burn", "test.fuel", `{}`, 0, 3, 0)), `[]`),
			want:  failure{2001, "burn", 1, false, "step_failed", ""},
			codes: []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"},
			steps: []string{"burn started 1", "burn failed 1"},
		},
		{
			name:  "step timeout, retried",
			ir:    repIR(repList(repNodeT("spin", "test.hang", `{}`, 50, 1, 0)), `[]`),
			want:  failure{2001, "spin", 2, true, "step_timeout", ""},
			codes: []string{"EXECUTOR_TIMEOUT"}, message: `step "spin" failed on attempt 2: timed out after 50 ms`,
			steps: []string{"spin started 1", "spin failed 1", "spin started 2", "spin failed 2"},
		},
		{
			name:  "flow timeout",
			ir:    repIRWith(100, `{}`, repList(repNodeT("spin", "test.hang", `{}`, 0, 5, 0)), `[]`),
			want:  failure{3001, "spin", 1, false, "flow_timeout", "Timeout"},
			codes: []string{"EXECUTOR_TIMEOUT"}, message: "the flow timed out after 100 ms",
			steps: []string{"spin started 1", "spin failed 1"},
		},
		{
			name:    "a missing input",
			ir:      repIR(repList(repNode("add", "math.sum", `{"numbers":"$input.missing"}`)), `[]`),
			want:    failure{2001, "add", 0, false, "unresolved_reference", ""},
			message: `step "add": unresolvable reference "$input.missing": no field "missing" in the run's inputs`,
			steps:   []string{"add failed 0"},
		},
		{
			name: "a step that did not run",
			ir: repIR(repList(
				repNode("s", "switch", `{"key_from":"$input.go","cases":{"yes":"a"},"default":"no"}`),
				repNode("a", "math.sum", `{"numbers":[1]}`),
				repNode("b", "math.sum", `{"numbers":"${steps.a.output.sum}"}`)),
				repList(repCaseEdge("s", "a", "yes"), repCaseEdge("s", "b", "no"))),
			inputs:  map[string]any{"go": "no"},
			want:    failure{2001, "b", 0, false, "unresolved_reference", ""},
			message: `step "b": unresolvable reference "${steps.a.output.sum}": step "a" has no output in this run (it has not succeeded: skipped, failed or not run yet)`,
			steps:   []string{"s started 1", "s succeeded 1", "b failed 0"},
		},
		{
			name:    "a step the flow does not have",
			ir:      repIR(repList(repNode("add", "math.sum", `{"numbers":"$step.ghost.numbers"}`)), `[]`),
			want:    failure{2001, "add", 0, false, "unresolved_reference", ""},
			message: `step "add": unresolvable reference "$step.ghost.numbers": the flow has no step "ghost"`,
			steps:   []string{"add failed 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inputs := tt.inputs
			if inputs == nil {
				inputs = map[string]any{}
			}
			p := c.finish(c.startRun(map[string]any{"ir": tt.ir, "inputs": inputs}))
			require.Equal(t, "failed", p.Status)
			require.NotNil(t, p.Error)
			assertREPEvents(t, p)
			assert.Equal(t, tt.want.code, p.Error.Code)
			if tt.message != "" {
				assert.Equal(t, tt.message, p.Error.Message)
			}
			d := p.Error.data(t)
			assert.Equal(t, tt.want, failure{p.Error.Code, d.StepID, d.Attempt, d.Retriable, fmt.Sprint(d.Details["reason"]), strings.TrimPrefix(fmt.Sprint(d.Details["cause"]), "<nil>")})
			if tt.codes != nil {
				result, _ := d.Details["result"].(map[string]any)
				require.NotNil(t, result, string(p.Error.Data))
				assert.Equal(t, fmt.Sprint(tt.codes), fmt.Sprint(result["reason_codes"]))
			} else {
				assert.NotContains(t, d.Details, "result")
			}
			assert.Equal(t, tt.steps, stepEvents(p))
			assert.Equal(t, 1, p.Summary.FailedSteps)

			// Each failed event says whether another attempt follows.
			var willRetry []bool
			for _, e := range p.Events {
				if e.Type == "step" && e.State == "failed" {
					require.NotNil(t, e.WillRetry)
					willRetry = append(willRetry, *e.WillRetry)
				}
			}
			assert.False(t, willRetry[len(willRetry)-1])
			for _, w := range willRetry[:len(willRetry)-1] {
				assert.True(t, w)
			}
		})
	}
	assert.Equal(t, 0, c.close())
}

func TestRepCancel(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "1")
	hang := map[string]any{"ir": repIR(repList(repNode("spin", "test.hang", `{}`), repNode("never", "math.sum", `{"numbers":[1]}`)),
		repList(repEdge("spin", "never"), repFailEdge("spin", "never")))}
	running := c.startRun(hang)
	assert.Equal(t, "running", c.running(running, "spin").Status)
	// With one slot taken, the next run waits.
	add := map[string]any{"ir": repIR(repList(repNode("add", "math.sum", `{"numbers":[1]}`)), `[]`)}
	pending := c.startRun(add)
	assert.Equal(t, "pending", c.poll(pending, 0).Status)

	type health struct {
		OK      bool `json:"ok"`
		Details struct {
			RunsActive  int `json:"runs_active"`
			RunsPending int `json:"runs_pending"`
			RunsRunning int `json:"runs_running"`
		} `json:"details"`
	}
	var h health
	c.result("Runtime.Health", nil, &h)
	assert.True(t, h.OK)
	assert.Equal(t, 2, h.Details.RunsActive)
	assert.Equal(t, 1, h.Details.RunsPending)
	assert.Equal(t, 1, h.Details.RunsRunning)

	type cancelled struct {
		OK        bool   `json:"ok"`
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
		Cancelled bool   `json:"cancelled"`
	}
	assertCancelled := func(t *testing.T, p repPoll) {
		t.Helper()
		assert.Equal(t, "failed", p.Status)
		require.NotNil(t, p.Error)
		assert.Equal(t, "the run was cancelled (Runtime.Cancel)", p.Error.Message)
		assert.Equal(t, 3001, p.Error.Code)
		d := p.Error.data(t)
		assert.Equal(t, "Cancelled", d.Details["cause"])
		assert.Equal(t, "cancelled", d.Details["reason"])
	}
	t.Run("pending", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": pending}, &got)
		assert.Equal(t, cancelled{OK: true, RunID: pending, Status: "failed", Cancelled: true}, got)
		p := c.poll(pending, 0)
		assertCancelled(t, p)
		assertREPEvents(t, p)
		assert.Equal(t, []string(nil), stepEvents(p))
		assert.Equal(t, "run failed before it started: the run was cancelled (Runtime.Cancel)", p.Events[len(p.Events)-1].Message)
	})
	t.Run("running", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": running}, &got)
		assert.Equal(t, cancelled{OK: true, RunID: running, Status: "failed", Cancelled: true}, got)
		p := c.poll(running, 0)
		assertCancelled(t, p)
		assertREPEvents(t, p)
		assert.Equal(t, []string{"spin started 1", "spin failed 1"}, stepEvents(p), "a cancelled run takes no failure edge")
		assert.Equal(t, "run failed: the run was cancelled (Runtime.Cancel)", p.Events[len(p.Events)-1].Message)
	})
	t.Run("finished", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": running}, &got)
		assert.Equal(t, cancelled{OK: true, RunID: running, Status: "failed", Cancelled: false}, got)
	})
	c.result("Runtime.Health", nil, &h)
	assert.Equal(t, 0, h.Details.RunsActive)
	// The slot is free again.
	assert.Equal(t, "completed", c.finish(c.startRun(add)).Status)
	assert.Equal(t, 0, c.close())
}

func TestRepErrorCodes(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	one := repList(repNode("a", "math.sum", `{"numbers":[1]}`))
	c.startRun(map[string]any{"ir": repIR(one, `[]`), "options": map[string]any{"run_id": "taken"}})
	start := func(doc string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"Runtime.StartRun","params":{"ir":` + doc + `}}`
	}
	graph := func(nodes, edges string) string { return start(string(repIR(nodes, edges))) }
	valid := string(repIR(repList(repNode("a", "math.sum", `{}`), repNode("b", "math.sum", `{}`)), repList(repEdge("a", "b"))))
	edit := func(old, new string) string {
		require.Contains(t, valid, old)
		return start(strings.Replace(valid, old, new, 1))
	}
	a, b := repNode("a", "math.sum", `{}`), repNode("b", "math.sum", `{}`)
	tests := []struct {
		name, line string
		id         string // the id echoed
		code       int
		message    string // a part of the message
		data       string // the data (JSON), when checked
	}{
		// REP §4: invalid JSON and protocol mismatches are 3001.
		{"not json", `{"jsonrpc":"2.0",`, "null", 3001, "invalid JSON", ""},
		{"a number", `42`, "null", 3001, "protocol mismatch: a request is a JSON-RPC 2.0 request object", ""},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"Runtime.Health"}`, "1", 3001, `protocol mismatch: jsonrpc must be "2.0"`, ""},
		{"no method", `{"jsonrpc":"2.0","id":"x"}`, `"x"`, 3001, "protocol mismatch: method must be a non-empty string", ""},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{},"method":"Runtime.Health"}`, "null", 3001, "protocol mismatch: id must be", ""},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Explode"}`, "3", -32601, `method "Runtime.Explode" not found`, ""},
		{"params by position", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Poll","params":["x"]}`, "3", -32602, "params must be an object", ""},
		// Unknown params are ignored (REP grows additively), so a misspelt
		// run_id is a missing one.
		{"misspelt param", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Poll","params":{"run":"x"}}`, "3", -32602, `run_id is required`, ""},
		{"no ir", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{}}`, "3", -32602, "ir is required", ""},
		{"bad trace id", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":{},"options":{"trace_id":"abc"}}}`, "3", -32602, `options.trace_id "abc" is not a UUID`, ""},
		{"run id in use", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":` + string(repIR(one, `[]`)) + `,"options":{"run_id":"taken"}}}`, "3", -32602, `run id "taken" is already in use`, ""},
		{"inputs not an object", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":{},"inputs":[1]}}`, "3", -32602, "inputs must be a JSON object", ""},
		// An unknown run id is a parameter error, not 3002.
		{"unknown run", `{"jsonrpc":"2.0","id":9,"method":"Runtime.Poll","params":{"run_id":"nope"}}`, "9", -32602, `unknown run id "nope"`, `{"run_id":"nope"}`},
		{"cancel an unknown run", `{"jsonrpc":"2.0","id":"c","method":"Runtime.Cancel","params":{"run_id":"nope"}}`, `"c"`, -32602, `unknown run id "nope"`, `{"run_id":"nope"}`},
		// REP §5.2: the version first (1001), with §6's data.
		{"ir version", edit(`"version":"1.0.0"`, `"version":"2.0.0"`), "7", 1001, `Flow IR version "2.0.0" is not supported; this runtime reads 1.0.0`,
			`{"attempt":0,"retriable":false,"details":{"expected":"1.0.0","received":"2.0.0","pointer":"/version"}}`},
		{"version before the schema", start(`{"version":"3.0.0","graph":7}`), "7", 1001, `"3.0.0" is not supported`, ""},
		{"ir without version", start(`{"graph":{"nodes":[]}}`), "7", 1001, "ir.version is missing",
			`{"attempt":0,"retriable":false,"details":{"expected":"1.0.0","received":null,"pointer":"/version"}}`},
		// The spec's JSON Schema and rules (1003), naming the pointer.
		{"ir not an object", start(`"flow"`), "7", 1003, "ir must be a JSON object", `{"attempt":0,"retriable":false,"details":{"in":"ir","pointer":""}}`},
		{"a member missing", edit(`,"retry":{"max":0,"backoff_ms":0}}`, `}`), "7", 1003, `the IR does not match the Flow IR schema at "/graph/nodes/0": missing property 'retry'`, ""},
		{"an unknown on", edit(`"on":"success"`, `"on":"always"`), "7", 1003, `at "/graph/edges/0/on": value must be one of 'success', 'failure'`, ""},
		{"generated_at", edit(`"2026-11-24T00:00:00Z"`, `"2026-11-24"`), "7", 1003, `at "/metadata/generated_at"`, ""},
		{"duplicate ids", graph(repList(a, a), `[]`), "7", 1003, `node id "a" is used twice`,
			`{"step_id":"a","attempt":0,"retriable":false,"details":{"in":"ir","pointer":"/graph/nodes/1/id"}}`},
		{"edge to an unknown node", graph(repList(a), repList(repEdge("a", "z"))), "7", 1003, `graph.edges[0]: to "z" is not a node id`, ""},
		{"cycle", graph(repList(a, b), repList(repEdge("a", "b"), repEdge("b", "a"))), "7", 1003, "the graph has a cycle: a -> b -> a", ""},
		{"a switch without key_from", graph(repList(repNode("s", "switch", `{"cases":{"x":"a"}}`), a), repList(repCaseEdge("s", "a", "x"))), "7", 1003, `switch "s": with.key_from must be a reference`, ""},
		// Step kinds (1002).
		{"unknown step kind", graph(repList(a, repNode("b", "shell.exec", `{}`)), `[]`), "7", 1002, `node "b": step kind "shell.exec" is not supported by this runtime`,
			`{"step_id":"b","attempt":0,"retriable":false,"details":{"type":"shell.exec","pointer":"/graph/nodes/1/type"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.send(tt.line)
			require.NotNil(t, r.Error, "answered %s", r.Result)
			assert.Nil(t, r.Result)
			assert.Equal(t, tt.id, string(r.ID))
			assert.Equal(t, tt.code, r.Error.Code)
			assert.Contains(t, r.Error.Message, tt.message)
			if tt.data != "" {
				assert.JSONEq(t, tt.data, string(r.Error.Data))
			}
			if tt.code == 1003 {
				d := r.Error.data(t)
				assert.Equal(t, "ir", d.Details["in"])
				assert.Contains(t, r.Error.Message, fmt.Sprint(d.Details["pointer"]))
			}
		})
	}
	assert.Equal(t, 0, c.close())
}

func TestRepInputsSchema(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["numbers"],` +
		`"properties":{"numbers":{"type":"array","items":{"type":"integer"}}}}`
	flowIR := repIRWith(0, schema, repList(repNode("add", "math.sum", `{"numbers":"$input.numbers"}`)), `[]`)
	t.Run("inputs that match", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR, "inputs": map[string]any{"numbers": []int{1, 2}}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.JSONEq(t, `{"sum":3}`, string(p.Summary.Outputs["add"]))
	})
	t.Run("inputs that do not", func(t *testing.T) {
		e := c.fail("Runtime.StartRun", map[string]any{"ir": flowIR, "inputs": map[string]any{"numbers": []any{1, "two"}}})
		assert.Equal(t, 1003, e.Code)
		assert.Equal(t, `inputs do not match the IR's inputs_schema at "/numbers/1": got string, want integer`, e.Message)
		d := e.data(t)
		assert.Equal(t, "inputs", d.Details["in"])
		assert.Equal(t, "/numbers/1", d.Details["pointer"])
	})
	t.Run("no inputs", func(t *testing.T) {
		e := c.fail("Runtime.StartRun", map[string]any{"ir": flowIR})
		assert.Equal(t, 1003, e.Code)
		assert.Contains(t, e.Message, "missing property 'numbers'")
	})
	t.Run("TraceMind's inputs metadata is passed through", func(t *testing.T) {
		meta := repIRWith(0, `{"numbers":{"type":"list<int>"}}`, repList(repNode("add", "math.sum", `{"numbers":[4]}`)), `[]`)
		p := c.finish(c.startRun(map[string]any{"ir": meta, "inputs": map[string]any{"numbers": "not a list"}}))
		assert.Equal(t, "completed", p.Status)
	})
	assert.Equal(t, 0, c.close())
}

func TestRepBrokenInput(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig())
	// Blank lines and notifications (no id) get no answer; the next
	// response is the Health call's.
	c.write("")
	c.write("   ")
	c.write(`{"jsonrpc":"2.0","method":"Runtime.Health"}`)
	c.write(`{"jsonrpc":"2.0","method":"Runtime.Nothing"}`)
	r := c.send(`{"jsonrpc":"2.0","id":1,"method":"Runtime.Health"}`)
	assert.Equal(t, "1", string(r.ID))
	assert.Nil(t, r.Error)
	assert.JSONEq(t, `{"ok":true,"details":{"version":"0.1.0","runs_active":0,"runs_pending":0,"runs_running":0,"runs_retained":0}}`, string(r.Result))

	// Garbage, then lines that are JSON but not requests: each answered
	// 3001 (REP §4), and the session goes on.
	for line, id := range map[string]string{"hello": "null", "{\"jsonrpc\":": "null", "\x00\x01": "null", "}{": "null",
		`"Runtime.Health"`: "null", `null`: "null", `{"id":2}`: "2", `[]`: "null"} {
		r := c.send(line)
		assert.Equal(t, id, string(r.ID), line)
		require.NotNil(t, r.Error, line)
		assert.Equal(t, 3001, r.Error.Code, line)
	}

	// A batch is a protocol mismatch: REP's responses are single objects
	// (§4), and none of its requests is run.
	r = c.send(`[{"jsonrpc":"2.0","id":"a","method":"Runtime.StartRun","params":{"ir":` + string(repIR(repList(repNode("a", "math.sum", `{"numbers":[1]}`)), `[]`)) + `}}]`)
	assert.Equal(t, "null", string(r.ID))
	require.NotNil(t, r.Error)
	assert.Equal(t, 3001, r.Error.Code)
	assert.Equal(t, "protocol mismatch: a batch (a JSON array); REP v0.1 requests are single objects, one per line", r.Error.Message)

	r = c.send(`{"jsonrpc":"2.0","id":2,"method":"Runtime.Health"}`)
	assert.Equal(t, "2", string(r.ID))
	assert.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), `"runs_active":0`, "the batch started no run")

	// A last request cut off by the end of input is invalid JSON: 3001.
	_, err := io.WriteString(c.stdin, `{"jsonrpc":"2.0","id":3,"method":"Runt`)
	require.NoError(t, err)
	assert.Equal(t, 0, c.close())
	var last repResponse
	require.NoError(t, json.Unmarshal([]byte(c.next()), &last))
	assert.Equal(t, 3001, last.Error.Code)
	assert.Contains(t, last.Error.Message, "invalid JSON")
}

func TestRepConcurrentRuns(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "2")
	flowIR := repIR(repList(
		repNode("sort", "math.sort", `{"numbers":"$input.numbers"}`),
		repNode("sum", "math.sum", `{"numbers":"$step.sort.sorted"}`)),
		repList(repEdge("sort", "sum")))
	const n = 8
	ids := make([]string, n)
	for i := range n {
		ids[i] = c.startRun(map[string]any{"ir": flowIR, "inputs": map[string]any{"numbers": []int{i, 10, 100}}})
	}
	for i, id := range ids {
		p := c.finish(id)
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.JSONEq(t, fmt.Sprintf(`{"sum":%d}`, i+110), string(p.Summary.Outputs["sum"]))
	}
	var health struct {
		Details struct {
			RunsActive   int `json:"runs_active"`
			RunsRetained int `json:"runs_retained"`
		} `json:"details"`
	}
	c.result("Runtime.Health", nil, &health)
	assert.Equal(t, 0, health.Details.RunsActive)
	assert.Equal(t, n, health.Details.RunsRetained)
	assert.Equal(t, 0, c.close())
}

func TestRepAuditTraceID(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	c := startRep(t, nil, "--config", repConfig(), "--audit", log)
	const trace = "0b5e7c4e-8a43-4d0c-9a55-6f1e1c2b3a4d"
	given := c.startRun(map[string]any{
		"ir": repIR(repList(repNode("sort", "math.sort", `{"numbers":[2,1]}`), repNodeT("boom", "test.fail", `{}`, 0, 1, 0)),
			repList(repEdge("sort", "boom"))),
		// As Python's uuid4().hex writes it: no dashes.
		"options": map[string]any{"trace_id": strings.ReplaceAll(trace, "-", ""), "allow_shell": true},
	})
	random := c.startRun(map[string]any{
		"ir": repIR(repList(repNode("a", "math.sum", `{"numbers":[1]}`), repNode("b", "text.upper", `{"text":"x"}`)), repList(repEdge("a", "b"))),
	})
	p1, p2 := c.finish(given), c.finish(random)
	assert.Equal(t, "failed", p1.Status)
	assert.Equal(t, trace, p1.TraceID)
	assert.Equal(t, "completed", p2.Status)
	assert.NotEqual(t, trace, p2.TraceID)
	assert.Equal(t, 0, c.close())

	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	byTrace := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec struct {
			EventType string `json:"event_type"`
			Action    string `json:"action"`
			Status    string `json:"status"`
			TraceID   string `json:"trace_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		if rec.EventType == "action_attempt" {
			continue // each step's verdict is compared; its attempt carries the same trace id
		}
		byTrace[rec.TraceID] = append(byTrace[rec.TraceID], rec.Action+" "+rec.Status)
	}
	assert.Equal(t, map[string][]string{
		trace:      {"math.sort SUCCESS", "test.fail FAILED", "test.fail FAILED"},
		p2.TraceID: {"math.sum SUCCESS", "text.upper SUCCESS"},
	}, byTrace)
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
}

func TestRepEnvironment(t *testing.T) {
	t.Parallel()
	const trace = "6f0c9a0e-1111-4222-8333-944455556666"
	// REP §8: TRACE_MIND_ENGINE_TIMEOUT is in seconds.
	c := startRep(t, []string{"TRACE_MIND_RUN_ID=orchestrated", "TRACE_MIND_TRACE_ID=" + trace, "TRACE_MIND_ENGINE_TIMEOUT=0.1", "TRACE_MIND_LOG_JSON=1"},
		"--config", repConfig())
	// The first run without a run_id takes TRACE_MIND_RUN_ID; the engine
	// timeout caps a flow without timeout_ms, and one whose timeout_ms is
	// longer.
	for i, timeoutMs := range []int{0, 60000} {
		id := c.startRun(map[string]any{"ir": repIRWith(timeoutMs, `{}`, repList(repNode("spin", "test.hang", `{}`)), `[]`)})
		if i == 0 {
			assert.Equal(t, "orchestrated", id)
		} else {
			assert.Regexp(t, repUUIDRE, id)
		}
		p := c.finish(id)
		assert.Equal(t, trace, p.TraceID)
		assert.Equal(t, "failed", p.Status)
		assert.Equal(t, 3001, p.Error.Code)
		assert.Equal(t, "the flow timed out after 100 ms", p.Error.Message)
		assert.Equal(t, "Timeout", p.Error.data(t).Details["cause"])
	}
	assert.Equal(t, 0, c.close())
	// TRACE_MIND_LOG_JSON=1: the log is JSON lines, on stderr.
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	require.NotEmpty(t, lines)
	for _, l := range lines {
		var rec map[string]any
		assert.NoError(t, json.Unmarshal([]byte(l), &rec), l)
	}
}

func TestRepEndOfInputWaitsForRuns(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	c := startRep(t, nil, "--config", repConfig(), "--audit", log)
	// A step that times out after 300 ms: the command must still be there
	// to record it after its input ended.
	c.startRun(map[string]any{"ir": repIR(repList(repNodeT("spin", "test.hang", `{}`, 300, 0, 0)), `[]`)})
	assert.Equal(t, 0, c.close())
	assert.Contains(t, c.stderr.String(), "end of input: every run has finished")
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"reason_codes":["EXECUTOR_TIMEOUT"]`)
}

func TestRepUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"no config", []string{"rep"}, "", "--config FILE (or --nats URL) is required"},
		{"bad concurrency", []string{"rep", "--config", repConfig(), "--concurrency", "0"}, "", "--concurrency must be at least 1"},
		{"bad trace id", []string{"rep", "--config", repConfig()}, "TRACE_MIND_TRACE_ID=nope", `default trace id "nope" is not a UUID`},
		{"bad timeout", []string{"rep", "--config", repConfig()}, "TRACE_MIND_ENGINE_TIMEOUT=soon", "TRACE_MIND_ENGINE_TIMEOUT must be a positive number of seconds"},
		{"bad log setting", []string{"rep", "--config", repConfig()}, "TRACE_MIND_LOG_JSON=yes", `TRACE_MIND_LOG_JSON must be "0" or "1"`},
		{"missing config", []string{"rep", "--config", "no_such.json"}, "", "--config: registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, tt.args...)
			cmd.Env = append(os.Environ(), tt.env)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 2, ee.ExitCode())
			assert.Contains(t, errb.String(), tt.want)
			assert.Empty(t, out.String(), "stdout holds responses only")
		})
	}
	t.Run("help", func(t *testing.T) {
		r := wasmgate(t, "", "rep", "-h")
		assert.Equal(t, 2, r.code)
		for _, s := range []string{"Runtime.Capabilities", "Runtime.StartRun", "Runtime.Poll", "Runtime.Cancel", "Runtime.Health", "allow_shell",
			"$step.ID.PATH", "$.vars.ID.PATH", "${steps.ID.output.PATH}", "key_from", `"failure"`, "inputs_schema", "TRACE_MIND_ENGINE_TIMEOUT (seconds)"} {
			assert.Contains(t, r.stderr, s)
		}
	})
}
