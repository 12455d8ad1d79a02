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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// send writes one raw line and reads the response to it.
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

// call sends a request with a fresh numeric id and checks the id echoed.
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
func (c *repClient) result(method string, params, dst any) {
	c.t.Helper()
	r := c.call(method, params)
	require.Nil(c.t, r.Error, "%s: %+v", method, r.Error)
	require.NoError(c.t, json.Unmarshal(r.Result, dst))
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
	require.Regexp(c.t, uuidRE, res.TraceID)
	return res.RunID
}

type repPoll struct {
	RunID   string     `json:"run_id"`
	TraceID string     `json:"trace_id"`
	Status  string     `json:"status"`
	Events  []repEvent `json:"events"`
	LastSeq int        `json:"last_seq"`
	Summary struct {
		StepsTotal     int                        `json:"steps_total"`
		StepsSucceeded int                        `json:"steps_succeeded"`
		StepsFailed    int                        `json:"steps_failed"`
		StepsSkipped   int                        `json:"steps_skipped"`
		Attempts       int                        `json:"attempts"`
		Outputs        map[string]json.RawMessage `json:"outputs"`
		StartedAt      string                     `json:"started_at"`
		FinishedAt     string                     `json:"finished_at"`
	} `json:"summary"`
	Error *repError `json:"error"`
}

type repEvent struct {
	Seq       int             `json:"seq"`
	Type      string          `json:"type"`
	Ts        string          `json:"ts"`
	Level     string          `json:"level"`
	StepID    string          `json:"step_id"`
	Kind      string          `json:"kind"`
	Status    string          `json:"status"`
	Attempt   *int            `json:"attempt"`
	Retriable *bool           `json:"retriable"`
	WillRetry *bool           `json:"will_retry"`
	Message   string          `json:"message"`
	Result    json.RawMessage `json:"result"`
}

func (c *repClient) poll(runID string, since int) repPoll {
	c.t.Helper()
	var p repPoll
	c.result("Runtime.Poll", map[string]any{"run_id": runID, "since": since}, &p)
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
	return c.await(runID, func(p repPoll) bool {
		return p.Status == "completed" || p.Status == "failed" || p.Status == "cancelled"
	})
}

// running polls runID until its step stepID has started.
func (c *repClient) running(runID, stepID string) repPoll {
	c.t.Helper()
	return c.await(runID, func(p repPoll) bool {
		for _, e := range p.Events {
			if e.Type == "step" && e.StepID == stepID && e.Status == "started" {
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

const uuidRE = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`

// ir builds a Flow IR document from its nodes and edges (JSON text).
func ir(nodes, edges string) json.RawMessage {
	return json.RawMessage(`{"version":"1.0.0","flow":{"name":"test"},"graph":{"nodes":` + nodes + `,"edges":` + edges + `}}`)
}

// stepEvents lists a poll's step events as "step_id status attempt".
func stepEvents(p repPoll) []string {
	var out []string
	for _, e := range p.Events {
		if e.Type != "step" {
			continue
		}
		s := e.StepID + " " + e.Status
		if e.Attempt != nil {
			s += fmt.Sprintf(" %d", *e.Attempt)
		}
		out = append(out, s)
	}
	return out
}

func TestRepHandshake(t *testing.T) {
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "3")
	type caps struct {
		Version   string   `json:"version"`
		IRVersion string   `json:"ir_version"`
		StepKinds []string `json:"step_kinds"`
		Limits    struct {
			Concurrency int `json:"concurrency"`
		} `json:"limits"`
		Compatible       bool     `json:"compatible"`
		MissingStepKinds []string `json:"missing_step_kinds"`
	}
	allKinds := []string{"math.sort", "math.sum", "test.fail", "test.fuel", "test.hang", "text.upper", "switch"}

	t.Run("no handshake", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", nil, &got)
		assert.Equal(t, "0.1.0", got.Version)
		assert.Equal(t, "1.0.0", got.IRVersion)
		assert.Equal(t, allKinds, got.StepKinds)
		assert.Equal(t, 3, got.Limits.Concurrency)
		assert.True(t, got.Compatible)
		assert.Equal(t, []string{}, got.MissingStepKinds)
	})
	t.Run("match", func(t *testing.T) {
		var got caps
		c.result("Runtime.Capabilities", map[string]any{"version": "0.1.4", "step_kinds": []string{"math.sort", "switch"}}, &got)
		assert.True(t, got.Compatible)
		assert.Equal(t, []string{}, got.MissingStepKinds)
		assert.Equal(t, allKinds, got.StepKinds)
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

func TestRepFlowCompletes(t *testing.T) {
	// Over the main registry of testdata: sort, then sum the sorted
	// numbers, then upper-case a title from the inputs.
	c := startRep(t, nil, "--config", td("registry.json"))
	id := c.startRun(map[string]any{
		"ir": ir(`[
			{"id":"sort","type":"math.sort","with":{"numbers":"${inputs.numbers}"}},
			{"id":"sum","type":"math.sum","with":{"numbers":"${steps.sort.output.sorted}"}},
			{"id":"title","type":"text.upper","with":{"text":"${inputs.meta.title}"}}]`,
			`[{"from":"sort","to":"sum","on":"success"},{"from":"sum","to":"title"}]`),
		"inputs":  map[string]any{"numbers": []int{3, 1, 2}, "meta": map[string]any{"title": "governed"}},
		"options": map[string]any{"run_id": "flow-1"},
	})
	assert.Equal(t, "flow-1", id)
	p := c.finish(id)
	require.Equal(t, "completed", p.Status, "%+v", p)
	assert.Nil(t, p.Error)
	assert.Equal(t, []string{
		"sort started 1", "sort succeeded 1",
		"sum started 1", "sum succeeded 1",
		"title started 1", "title succeeded 1",
	}, stepEvents(p))
	assert.JSONEq(t, `{"count":3,"max":3,"min":1,"sorted":[1,2,3]}`, string(p.Summary.Outputs["sort"]))
	assert.JSONEq(t, `{"sum":6}`, string(p.Summary.Outputs["sum"]))
	assert.JSONEq(t, `{"text":"GOVERNED"}`, string(p.Summary.Outputs["title"]))
	assert.Equal(t, 3, p.Summary.StepsTotal)
	assert.Equal(t, 3, p.Summary.StepsSucceeded)
	assert.Equal(t, 3, p.Summary.Attempts)
	assert.NotEmpty(t, p.Summary.FinishedAt)

	// Events are numbered from 1, stamped in RFC 3339, and the log opens
	// and closes the run.
	for i, e := range p.Events {
		assert.Equal(t, i+1, e.Seq)
		_, err := time.Parse(time.RFC3339Nano, e.Ts)
		assert.NoError(t, err, e.Ts)
	}
	assert.Equal(t, "log", p.Events[0].Type)
	assert.Equal(t, `run of flow "test" started: 3 steps`, p.Events[0].Message)
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
	c := startRep(t, nil, "--config", repConfig())
	flowIR := ir(`[
		{"id":"sort","type":"math.sort","with":{"numbers":"${inputs.numbers}"}},
		{"id":"size","type":"switch","with":{"value":"${steps.sort.output.count}"}},
		{"id":"pair","type":"math.sum","with":{"numbers":"${steps.sort.output.sorted}"}},
		{"id":"other","type":"text.upper","with":{"text":"not a pair"}},
		{"id":"after","type":"text.upper","with":{"text":"$${literal}"}}]`,
		`[{"from":"sort","to":"size"},
		  {"from":"size","to":"pair","on":"case:2"},
		  {"from":"size","to":"other","on":"default"},
		  {"from":"pair","to":"after"},{"from":"other","to":"after"}]`)

	t.Run("a case", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR, "inputs": map[string]any{"numbers": []int{5, 4}}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.Equal(t, []string{
			"sort started 1", "sort succeeded 1",
			"size started 1", "size succeeded 1",
			"pair started 1", "pair succeeded 1",
			"other skipped",
			"after started 1", "after succeeded 1",
		}, stepEvents(p))
		assert.JSONEq(t, `{"case":"2","value":2}`, string(p.Summary.Outputs["size"]))
		assert.JSONEq(t, `{"sum":9}`, string(p.Summary.Outputs["pair"]))
		assert.JSONEq(t, `{"text":"${LITERAL}"}`, string(p.Summary.Outputs["after"]))
		assert.Equal(t, 1, p.Summary.StepsSkipped)
	})
	t.Run("the default", func(t *testing.T) {
		p := c.finish(c.startRun(map[string]any{"ir": flowIR, "inputs": map[string]any{"numbers": []int{1, 2, 3}}}))
		require.Equal(t, "completed", p.Status, "%+v", p.Error)
		assert.JSONEq(t, `{"case":"default","value":3}`, string(p.Summary.Outputs["size"]))
		assert.JSONEq(t, `{"text":"NOT A PAIR"}`, string(p.Summary.Outputs["other"]))
		assert.NotContains(t, p.Summary.Outputs, "pair")
	})
	assert.Equal(t, 0, c.close())
}

func TestRepStepFailures(t *testing.T) {
	c := startRep(t, nil, "--config", repConfig())
	type failure struct {
		StepID    string `json:"step_id"`
		Attempt   int    `json:"attempt"`
		Retriable bool   `json:"retriable"`
		Reason    string `json:"reason"`
		Result    *struct {
			Status      string   `json:"status"`
			ReasonCodes []string `json:"reason_codes"`
		} `json:"result"`
	}
	tests := []struct {
		name    string
		nodes   string
		edges   string
		flow    string // a flow header replacing the default
		want    failure
		codes   []string
		message string
		steps   []string
	}{
		{
			name:  "executor error, retried until retry.max",
			nodes: `[{"id":"ok","type":"math.sum","with":{"numbers":[1]}},{"id":"boom","type":"test.fail","retry":{"max":2,"backoff_ms":5}}]`,
			edges: `[{"from":"ok","to":"boom"}]`,
			want:  failure{StepID: "boom", Attempt: 3, Retriable: true, Reason: "step_failed"},
			codes: []string{"EXECUTOR_EXCEPTION"}, message: `step "boom" failed on attempt 3: deliberate failure`,
			steps: []string{"ok started 1", "ok succeeded 1", "boom started 1", "boom failed 1", "boom started 2", "boom failed 2", "boom started 3", "boom failed 3"},
		},
		{
			name:  "executor error without retry",
			nodes: `[{"id":"boom","type":"test.fail"},{"id":"never","type":"math.sum","with":{"numbers":[1]}}]`,
			edges: `[{"from":"boom","to":"never"}]`,
			want:  failure{StepID: "boom", Attempt: 1, Retriable: true, Reason: "step_failed"},
			codes: []string{"EXECUTOR_EXCEPTION"}, message: `step "boom" failed on attempt 1: deliberate failure`,
			steps: []string{"boom started 1", "boom failed 1"},
		},
		{
			name:  "governance refusal is not retried",
			nodes: `[{"id":"burn","type":"test.fuel","retry":{"max":3}}]`,
			edges: `[]`,
			want:  failure{StepID: "burn", Attempt: 1, Retriable: false, Reason: "step_failed"},
			codes: []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"},
			steps: []string{"burn started 1", "burn failed 1"},
		},
		{
			name:  "step timeout, retried",
			nodes: `[{"id":"spin","type":"test.hang","timeout_ms":50,"retry":{"max":1}}]`,
			edges: `[]`,
			want:  failure{StepID: "spin", Attempt: 2, Retriable: true, Reason: "step_timeout"},
			codes: []string{"EXECUTOR_TIMEOUT"}, message: `step "spin" failed on attempt 2: timed out after 50 ms`,
			steps: []string{"spin started 1", "spin failed 1", "spin started 2", "spin failed 2"},
		},
		{
			name:  "flow timeout",
			flow:  `{"name":"t","timeout_ms":100}`,
			nodes: `[{"id":"spin","type":"test.hang","retry":{"max":5}}]`,
			edges: `[]`,
			want:  failure{StepID: "spin", Attempt: 1, Retriable: false, Reason: "flow_timeout"},
			codes: []string{"EXECUTOR_TIMEOUT"}, message: "the flow timed out after 100 ms",
			steps: []string{"spin started 1", "spin failed 1"},
		},
		{
			name:    "unresolvable reference",
			nodes:   `[{"id":"add","type":"math.sum","with":{"numbers":"${inputs.missing}"}}]`,
			edges:   `[]`,
			want:    failure{StepID: "add", Attempt: 0, Retriable: false, Reason: "input_unresolved"},
			message: `step "add": unresolved reference: ${inputs.missing}: no field "missing" in the run's inputs`,
			steps:   []string{"add failed 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := ir(tt.nodes, tt.edges)
			if tt.flow != "" {
				doc = json.RawMessage(`{"version":"1.0.0","flow":` + tt.flow + `,"graph":{"nodes":` + tt.nodes + `,"edges":` + tt.edges + `}}`)
			}
			p := c.finish(c.startRun(map[string]any{"ir": doc, "inputs": map[string]any{}}))
			require.Equal(t, "failed", p.Status)
			require.NotNil(t, p.Error)
			assert.Equal(t, 2001, p.Error.Code)
			if tt.message != "" {
				assert.Equal(t, tt.message, p.Error.Message)
			}
			var got failure
			require.NoError(t, json.Unmarshal(p.Error.Data, &got), string(p.Error.Data))
			if tt.codes != nil {
				require.NotNil(t, got.Result, string(p.Error.Data))
				assert.Equal(t, tt.codes, got.Result.ReasonCodes)
			} else {
				assert.Nil(t, got.Result)
			}
			got.Result = nil
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.steps, stepEvents(p))
			assert.Equal(t, 1, p.Summary.StepsFailed)

			// Each failed event says whether another attempt follows.
			var willRetry []bool
			for _, e := range p.Events {
				if e.Type == "step" && e.Status == "failed" {
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
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "1")
	hang := map[string]any{"ir": ir(`[{"id":"spin","type":"test.hang"},{"id":"never","type":"math.sum","with":{"numbers":[1]}}]`, `[{"from":"spin","to":"never"}]`)}
	running := c.startRun(hang)
	c.running(running, "spin")
	// With one slot taken, the next run waits.
	pending := c.startRun(map[string]any{"ir": ir(`[{"id":"add","type":"math.sum","with":{"numbers":[1]}}]`, `[]`)})
	assert.Equal(t, "pending", c.poll(pending, 0).Status)

	var health struct {
		Status      string `json:"status"`
		RunsActive  int    `json:"runs_active"`
		RunsPending int    `json:"runs_pending"`
		RunsRunning int    `json:"runs_running"`
	}
	c.result("Runtime.Health", nil, &health)
	assert.Equal(t, "ok", health.Status)
	assert.Equal(t, 2, health.RunsActive)
	assert.Equal(t, 1, health.RunsPending)
	assert.Equal(t, 1, health.RunsRunning)

	type cancelled struct {
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
		Cancelled bool   `json:"cancelled"`
	}
	t.Run("pending", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": pending}, &got)
		assert.Equal(t, cancelled{RunID: pending, Status: "cancelled", Cancelled: true}, got)
		p := c.poll(pending, 0)
		assert.Equal(t, "cancelled", p.Status)
		assert.Equal(t, []string(nil), stepEvents(p))
		assert.Equal(t, "run cancelled before it started", p.Events[len(p.Events)-1].Message)
	})
	t.Run("running", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": running}, &got)
		assert.Equal(t, cancelled{RunID: running, Status: "cancelled", Cancelled: true}, got)
		p := c.poll(running, 0)
		assert.Equal(t, "cancelled", p.Status)
		assert.Nil(t, p.Error)
		assert.Equal(t, []string{"spin started 1", "spin failed 1"}, stepEvents(p))
		assert.Equal(t, "run cancelled", p.Events[len(p.Events)-1].Message)
	})
	t.Run("finished", func(t *testing.T) {
		var got cancelled
		c.result("Runtime.Cancel", map[string]any{"run_id": running}, &got)
		assert.Equal(t, cancelled{RunID: running, Status: "cancelled", Cancelled: false}, got)
	})
	c.result("Runtime.Health", nil, &health)
	assert.Equal(t, 0, health.RunsActive)
	// The slot is free again.
	assert.Equal(t, "completed", c.finish(c.startRun(map[string]any{"ir": ir(`[{"id":"add","type":"math.sum","with":{"numbers":[1]}}]`, `[]`)})).Status)
	assert.Equal(t, 0, c.close())
}

func TestRepErrorCodes(t *testing.T) {
	c := startRep(t, nil, "--config", repConfig())
	c.startRun(map[string]any{"ir": ir(`[{"id":"a","type":"math.sum","with":{"numbers":[1]}}]`, `[]`), "options": map[string]any{"run_id": "taken"}})
	start := func(doc string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"Runtime.StartRun","params":{"ir":` + doc + `}}`
	}
	node := `{"id":"a","type":"math.sum"}`
	graph := func(nodes, edges string) string {
		return start(`{"version":"1.0.0","graph":{"nodes":` + nodes + `,"edges":` + edges + `}}`)
	}
	tests := []struct {
		name, line string
		id         string // the id echoed
		code       int
		message    string // a part of the message
		data       string // the data, when checked
	}{
		{"not json", `{"jsonrpc":"2.0",`, "null", 3001, "parse error", ""},
		{"a number", `42`, "null", -32600, "a request is a JSON object", ""},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"Runtime.Health"}`, "1", -32600, `jsonrpc must be "2.0"`, ""},
		{"no method", `{"jsonrpc":"2.0","id":"x"}`, `"x"`, -32600, "method must be a non-empty string", ""},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{},"method":"Runtime.Health"}`, "null", -32600, "id must be", ""},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Explode"}`, "3", -32601, `method "Runtime.Explode" not found`, ""},
		{"params by position", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Poll","params":["x"]}`, "3", -32602, "params must be an object", ""},
		{"unknown param", `{"jsonrpc":"2.0","id":3,"method":"Runtime.Poll","params":{"run":"x"}}`, "3", -32602, `unknown field "run"`, ""},
		{"no ir", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{}}`, "3", -32602, "ir is required", ""},
		{"allow_shell", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":{},"options":{"allow_shell":true}}}`, "3", -32602, "allow_shell is not supported: executors run in a sandbox that has no shell", ""},
		{"bad trace id", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":{},"options":{"trace_id":"abc"}}}`, "3", -32602, `options.trace_id "abc" is not a UUID`, ""},
		{"run id in use", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":` + string(ir(`[`+node+`]`, `[]`)) + `,"options":{"run_id":"taken"}}}`, "3", -32602, `run id "taken" is already in use`, ""},
		{"inputs not an object", `{"jsonrpc":"2.0","id":3,"method":"Runtime.StartRun","params":{"ir":{},"inputs":[1]}}`, "3", -32602, "inputs must be a JSON object", ""},
		{"ir version", start(`{"version":"2.0.0","graph":{"nodes":[]}}`), "7", 1001, `Flow IR version "2.0.0" is not supported; this runtime reads 1.0.0`, `{"supported":"1.0.0"}`},
		{"ir without version", start(`{"graph":{"nodes":[]}}`), "7", 1001, "ir.version is missing", ""},
		{"unknown step kind", graph(`[`+node+`,{"id":"b","type":"shell.exec"}]`, `[]`), "7", 1002, `node "b": step kind "shell.exec" is not an action of this runtime`, `{"step_id":"b","type":"shell.exec"}`},
		{"ir not an object", start(`"flow"`), "7", 1003, "ir must be a JSON object", ""},
		{"no nodes", graph(`[]`, `[]`), "7", 1003, "graph.nodes is empty", ""},
		{"missing id", graph(`[{"type":"math.sum"}]`, `[]`), "7", 1003, "graph.nodes[0] has no id", ""},
		{"duplicate ids", graph(`[`+node+`,`+node+`]`, `[]`), "7", 1003, `node id "a" is used twice`, `{"step_id":"a"}`},
		{"edge to an unknown node", graph(`[`+node+`]`, `[{"from":"a","to":"z"}]`), "7", 1003, `graph.edges[0]: to "z" is not a node`, ""},
		{"cycle", graph(`[`+node+`,{"id":"b","type":"math.sum"}]`, `[{"from":"a","to":"b"},{"from":"b","to":"a"}]`), "7", 1003, "the graph has a cycle among nodes a, b", ""},
		{"unknown field", graph(`[{"id":"a","type":"math.sum","timeout":5}]`, `[]`), "7", 1003, `unknown field "timeout"`, ""},
		{"reference to a later step", graph(`[{"id":"a","type":"math.sum","with":{"numbers":"${steps.b.output.sorted}"}},{"id":"b","type":"math.sort"}]`, `[{"from":"a","to":"b"}]`), "7", 1003, `refers to step "b", which does not run before it`, ""},
		{"interpolation", graph(`[{"id":"a","type":"text.upper","with":{"text":"hello ${inputs.name}"}}]`, `[]`), "7", 1003, "a reference must be the whole string", ""},
		{"case edge from a step", graph(`[`+node+`,{"id":"b","type":"math.sum"}]`, `[{"from":"a","to":"b","on":"case:x"}]`), "7", 1003, `an edge from step "a" is "success"`, ""},
		{"too many retries", graph(`[{"id":"a","type":"math.sum","retry":{"max":11}}]`, `[]`), "7", 1003, "retry.max must be 0 to 10", ""},
		{"unknown run", `{"jsonrpc":"2.0","id":9,"method":"Runtime.Poll","params":{"run_id":"nope"}}`, "9", 3002, `unknown run id "nope"`, `{"run_id":"nope"}`},
		{"cancel an unknown run", `{"jsonrpc":"2.0","id":"c","method":"Runtime.Cancel","params":{"run_id":"nope"}}`, `"c"`, 3002, `unknown run id "nope"`, ""},
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
		})
	}
	assert.Equal(t, 0, c.close())
}

func TestRepBrokenInput(t *testing.T) {
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

	// Garbage, then a line that is JSON but not a request: each answered
	// with its error, and the session goes on.
	for _, line := range []string{"hello", "{\"jsonrpc\":", "\x00\x01", "}{"} {
		r := c.send(line)
		assert.Equal(t, "null", string(r.ID))
		require.NotNil(t, r.Error)
		assert.Equal(t, 3001, r.Error.Code, line)
	}
	for _, line := range []string{`"Runtime.Health"`, `null`, `{"id":2}`, `[]`} {
		r := c.send(line)
		require.NotNil(t, r.Error, line)
		assert.Equal(t, -32600, r.Error.Code, line)
	}

	// A batch is answered with an array, in order, without notifications.
	c.write(`[{"jsonrpc":"2.0","id":"a","method":"Runtime.Health"},{"jsonrpc":"2.0","method":"Runtime.Health"},1,{"jsonrpc":"2.0","id":"b","method":"Nope"}]`)
	var batch []repResponse
	require.NoError(t, json.Unmarshal([]byte(c.next()), &batch))
	require.Len(t, batch, 3)
	assert.Equal(t, `"a"`, string(batch[0].ID))
	assert.Nil(t, batch[0].Error)
	assert.Equal(t, "null", string(batch[1].ID))
	assert.Equal(t, -32600, batch[1].Error.Code)
	assert.Equal(t, `"b"`, string(batch[2].ID))
	assert.Equal(t, -32601, batch[2].Error.Code)

	r = c.send(`{"jsonrpc":"2.0","id":2,"method":"Runtime.Health"}`)
	assert.Equal(t, "2", string(r.ID))
	assert.Nil(t, r.Error)
	assert.Equal(t, 0, c.close())
}

func TestRepConcurrentRuns(t *testing.T) {
	c := startRep(t, nil, "--config", repConfig(), "--concurrency", "2")
	flowIR := ir(`[
		{"id":"sort","type":"math.sort","with":{"numbers":"${inputs.numbers}"}},
		{"id":"sum","type":"math.sum","with":{"numbers":"${steps.sort.output.sorted}"}}]`,
		`[{"from":"sort","to":"sum"}]`)
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
		RunsActive   int `json:"runs_active"`
		RunsRetained int `json:"runs_retained"`
	}
	c.result("Runtime.Health", nil, &health)
	assert.Equal(t, 0, health.RunsActive)
	assert.Equal(t, n, health.RunsRetained)
	assert.Equal(t, 0, c.close())
}

func TestRepAuditTraceID(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	c := startRep(t, nil, "--config", repConfig(), "--audit", log)
	const trace = "0b5e7c4e-8a43-4d0c-9a55-6f1e1c2b3a4d"
	given := c.startRun(map[string]any{
		"ir": ir(`[{"id":"sort","type":"math.sort","with":{"numbers":[2,1]}},{"id":"boom","type":"test.fail","retry":{"max":1}}]`,
			`[{"from":"sort","to":"boom"}]`),
		"options": map[string]any{"trace_id": trace},
	})
	random := c.startRun(map[string]any{
		"ir": ir(`[{"id":"a","type":"math.sum","with":{"numbers":[1]}},{"id":"b","type":"text.upper","with":{"text":"x"}}]`, `[{"from":"a","to":"b"}]`),
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
			Action  string `json:"action"`
			Status  string `json:"status"`
			TraceID string `json:"trace_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
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
	const trace = "6f0c9a0e-1111-4222-8333-944455556666"
	c := startRep(t, []string{"TRACE_MIND_RUN_ID=orchestrated", "TRACE_MIND_TRACE_ID=" + trace, "TRACE_MIND_ENGINE_TIMEOUT=100"},
		"--config", repConfig())
	// The first run without a run_id takes TRACE_MIND_RUN_ID; a flow
	// without timeout_ms is capped by TRACE_MIND_ENGINE_TIMEOUT.
	first := c.startRun(map[string]any{"ir": ir(`[{"id":"spin","type":"test.hang"}]`, `[]`)})
	assert.Equal(t, "orchestrated", first)
	p := c.finish(first)
	assert.Equal(t, trace, p.TraceID)
	assert.Equal(t, "failed", p.Status)
	assert.Contains(t, string(p.Error.Data), `"reason":"flow_timeout"`)
	assert.Equal(t, "the flow timed out after 100 ms", p.Error.Message)
	// Later ones get random ids, and the same trace id.
	second := c.startRun(map[string]any{"ir": ir(`[{"id":"a","type":"math.sum","with":{"numbers":[1]}}]`, `[]`)})
	assert.Regexp(t, uuidRE, second)
	assert.Equal(t, trace, c.finish(second).TraceID)
	assert.Equal(t, 0, c.close())
}

func TestRepEndOfInputWaitsForRuns(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	c := startRep(t, nil, "--config", repConfig(), "--audit", log)
	// A step that times out after 300 ms: the command must still be there
	// to record it after its input ended.
	c.startRun(map[string]any{"ir": ir(`[{"id":"spin","type":"test.hang","timeout_ms":300}]`, `[]`)})
	assert.Equal(t, 0, c.close())
	assert.Contains(t, c.stderr.String(), "end of input: every run has finished")
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"reason_codes":["EXECUTOR_TIMEOUT"]`)
}

func TestRepUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"no config", []string{"rep"}, "", "--config FILE is required"},
		{"bad concurrency", []string{"rep", "--config", repConfig(), "--concurrency", "0"}, "", "--concurrency must be at least 1"},
		{"bad trace id", []string{"rep", "--config", repConfig()}, "TRACE_MIND_TRACE_ID=nope", `default trace id "nope" is not a UUID`},
		{"bad timeout", []string{"rep", "--config", repConfig()}, "TRACE_MIND_ENGINE_TIMEOUT=soon", "TRACE_MIND_ENGINE_TIMEOUT must be a positive number of milliseconds"},
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
		for _, s := range []string{"Runtime.Capabilities", "Runtime.StartRun", "Runtime.Poll", "Runtime.Cancel", "Runtime.Health", "allow_shell", "missing_step_kinds", "${steps.ID.output.PATH}", "case:LABEL", "TRACE_MIND_ENGINE_TIMEOUT"} {
			assert.Contains(t, r.stderr, s)
		}
	})
}
