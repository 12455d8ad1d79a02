package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/protocol/jsonrpc/flow"
)

func known(kind string) bool { return strings.HasPrefix(kind, "act.") }

// doc is a Flow IR document with these nodes and edges.
func doc(nodes, edges string) string {
	return `{"version":"1.0.0","flow":{"name":"t"},"graph":{"nodes":` + nodes + `,"edges":` + edges + `}}`
}

func mustParse(t *testing.T, ir string) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(ir), known)
	require.NoError(t, err)
	return f
}

func TestParseRefuses(t *testing.T) {
	a := `{"id":"a","type":"act.x"}`
	b := `{"id":"b","type":"act.x"}`
	sw := func(with string) string { return `{"id":"s","type":"switch","with":` + with + `}` }
	tests := []struct {
		name, ir string
		kind     error
		msg      string
		stepID   string
	}{
		{"not an object", `[]`, flow.ErrSchema, "ir must be a JSON object", ""},
		{"no version", `{"graph":{"nodes":[` + a + `]}}`, flow.ErrVersion, "ir.version is missing; this runtime reads Flow IR 1.0.0", ""},
		{"other version", `{"version":"1.0.1","graph":{"nodes":[` + a + `]}}`, flow.ErrVersion, `Flow IR version "1.0.1" is not supported`, ""},
		{"version of the wrong type", `{"version":1}`, flow.ErrVersion, `ir.version must be the string "1.0.0", not 1`, ""},
		{"null version", `{"version":null}`, flow.ErrVersion, "ir.version is missing", ""},
		{"unknown kind", doc(`[`+a+`,{"id":"z","type":"net.fetch"}]`, `[]`), flow.ErrUnknownStepKind, `node "z": step kind "net.fetch" is not an action of this runtime`, "z"},
		{"schema before kinds", doc(`[{"id":"z","type":"net.fetch"},{"id":"z","type":"act.x"}]`, `[]`), flow.ErrSchema, `node id "z" is used twice`, "z"},
		{"unknown top-level field", `{"version":"1.0.0","graph":{"nodes":[` + a + `]},"extra":1}`, flow.ErrSchema, `unknown field "extra"`, ""},
		{"no nodes", doc(`[]`, `[]`), flow.ErrSchema, "graph.nodes is empty", ""},
		{"no id", doc(`[{"type":"act.x"}]`, `[]`), flow.ErrSchema, "graph.nodes[0] has no id", ""},
		{"bad id", doc(`[{"id":"a.b","type":"act.x"}]`, `[]`), flow.ErrSchema, `node id "a.b" must be`, "a.b"},
		{"no type", doc(`[{"id":"a"}]`, `[]`), flow.ErrSchema, `node "a" has no type`, "a"},
		{"negative timeout", doc(`[{"id":"a","type":"act.x","timeout_ms":-1}]`, `[]`), flow.ErrSchema, "timeout_ms must not be negative", "a"},
		{"negative flow timeout", `{"version":"1.0.0","flow":{"timeout_ms":-5},"graph":{"nodes":[` + a + `]}}`, flow.ErrSchema, "flow.timeout_ms must not be negative", ""},
		{"retry.max", doc(`[{"id":"a","type":"act.x","retry":{"max":-1}}]`, `[]`), flow.ErrSchema, "retry.max must be 0 to 10", "a"},
		{"retry.backoff_ms", doc(`[{"id":"a","type":"act.x","retry":{"max":1,"backoff_ms":60001}}]`, `[]`), flow.ErrSchema, "retry.backoff_ms must be 0 to 60000", "a"},
		{"edge from nowhere", doc(`[`+a+`]`, `[{"from":"q","to":"a"}]`), flow.ErrSchema, `graph.edges[0]: from "q" is not a node`, ""},
		{"self loop", doc(`[`+a+`]`, `[{"from":"a","to":"a"}]`), flow.ErrSchema, "the graph has a cycle among nodes a", "a"},
		{"cycle", doc(`[`+a+`,`+b+`,{"id":"c","type":"act.x"}]`, `[{"from":"a","to":"b"},{"from":"b","to":"c"},{"from":"c","to":"b"}]`), flow.ErrSchema, "the graph has a cycle among nodes b, c", "b"},
		{"repeated edge", doc(`[`+a+`,`+b+`]`, `[{"from":"a","to":"b"},{"from":"a","to":"b","on":"success"}]`), flow.ErrSchema, "graph.edges[1] repeats the edge a -> b", "a"},
		{"failure edge", doc(`[`+a+`,`+b+`]`, `[{"from":"a","to":"b","on":"failure"}]`), flow.ErrSchema, `is "success", not "failure"`, "a"},
		{"success edge from a switch", doc(`[`+sw(`{"value":1}`)+`,`+b+`]`, `[{"from":"s","to":"b"}]`), flow.ErrSchema, `an edge from switch "s" is "case:LABEL" or "default", not "success"`, "s"},
		{"two defaults", doc(`[`+sw(`{"value":1}`)+`,`+a+`,`+b+`]`, `[{"from":"s","to":"a","on":"default"},{"from":"s","to":"b","on":"default"}]`), flow.ErrSchema, `switch "s" has two "default" edges`, "s"},
		{"switch without edges", doc(`[`+sw(`{"value":1}`)+`]`, `[]`), flow.ErrSchema, `switch "s" has no outgoing edge`, "s"},
		{"switch without value", doc(`[`+sw(`{"v":1}`)+`,`+a+`]`, `[{"from":"s","to":"a","on":"default"}]`), flow.ErrSchema, `with must be {"value": ...}`, "s"},
		{"switch with retry", doc(`[{"id":"s","type":"switch","with":{"value":1},"retry":{"max":1}},`+a+`]`, `[{"from":"s","to":"a","on":"default"}]`), flow.ErrSchema, "retry and timeout_ms do not apply", "s"},
		{"duplicate keys in with", doc(`[{"id":"a","type":"act.x","with":{"k":1,"k":2}}]`, `[]`), flow.ErrSchema, `node "a": with:`, "a"},
		{"integer beyond 2^53 in with", doc(`[{"id":"a","type":"act.x","with":{"k":18014398509481985}}]`, `[]`), flow.ErrSchema, `node "a": with:`, "a"},
		{"interpolation", doc(`[{"id":"a","type":"act.x","with":{"k":"id-${inputs.id}"}}]`, `[]`), flow.ErrSchema, "a reference must be the whole string", "a"},
		{"empty reference", doc(`[{"id":"a","type":"act.x","with":"${}"}]`, `[]`), flow.ErrSchema, "${}: empty path segment", "a"},
		{"unknown root", doc(`[{"id":"a","type":"act.x","with":"${env.HOME}"}]`, `[]`), flow.ErrSchema, "${env.HOME}: a reference is ${inputs.PATH} or ${steps.ID.output.PATH}", "a"},
		{"step without output", doc(`[`+a+`,{"id":"b","type":"act.x","with":"${steps.a}"}]`, `[{"from":"a","to":"b"}]`), flow.ErrSchema, "a reference is", "b"},
		{"unknown step", doc(`[{"id":"a","type":"act.x","with":"${steps.q.output}"}]`, `[]`), flow.ErrSchema, `refers to step "q", which is not a node`, "a"},
		{"itself", doc(`[{"id":"a","type":"act.x","with":"${steps.a.output}"}]`, `[]`), flow.ErrSchema, "refers to the node itself", "a"},
		{"a sibling", doc(`[`+a+`,`+b+`,{"id":"c","type":"act.x","with":"${steps.b.output}"}]`, `[{"from":"a","to":"b"},{"from":"a","to":"c"}]`), flow.ErrSchema, `refers to step "b", which does not run before it`, "c"},
		{"too many nodes", doc(`[`+strings.Repeat(a+`,`, flow.MaxNodes)+a+`]`, `[]`), flow.ErrSchema, "graph has 1001 nodes; at most 1000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := flow.Parse([]byte(tt.ir), known)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), tt.msg)
			var fe *flow.Error
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.stepID, fe.StepID)
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for name, ir := range map[string]string{
		"one node, nothing else":       `{"version":"1.0.0","graph":{"nodes":[{"id":"a","type":"act.x"}]}}`,
		"a reference to a grandparent": doc(`[{"id":"a","type":"act.x"},{"id":"b","type":"act.x"},{"id":"c","type":"act.x","with":["${steps.a.output.x.0}"]}]`, `[{"from":"a","to":"b"},{"from":"b","to":"c"}]`),
		"a diamond":                    doc(`[{"id":"a","type":"act.x"},{"id":"b","type":"act.x"},{"id":"c","type":"act.x"},{"id":"d","type":"act.x"}]`, `[{"from":"a","to":"b"},{"from":"a","to":"c"},{"from":"b","to":"d"},{"from":"c","to":"d"}]`),
		"a literal ${":                 doc(`[{"id":"a","type":"act.x","with":{"k":"$${inputs.x} costs $5"}}]`, `[]`),
		"null with and retry":          doc(`[{"id":"a","type":"act.x","with":null,"retry":null}]`, `[]`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := flow.Parse([]byte(ir), known)
			assert.NoError(t, err)
		})
	}
}

// script is a StepFunc whose attempts answer in turn, recording the calls.
type script struct {
	mu    sync.Mutex
	calls []flow.Call
	// answer returns the outcome of a call; nil: succeed, echoing the
	// payload.
	answer func(ctx context.Context, c flow.Call) flow.Outcome
}

func (s *script) step(ctx context.Context, c flow.Call) flow.Outcome {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if s.answer != nil {
		return s.answer(ctx, c)
	}
	return flow.Outcome{OK: true, Output: c.Payload}
}

func (s *script) payloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.StepID+" "+string(c.Payload))
	}
	return out
}

// events collects a run's events and summary.
type events struct {
	list    []flow.Event
	summary flow.Summary
}

func run(t *testing.T, ctx context.Context, f *flow.Flow, inputs string, s *script) (flow.Result, *events) {
	t.Helper()
	ev := &events{summary: flow.NewSummary(f)}
	res := f.Execute(ctx, flow.ExecConfig{
		Inputs: json.RawMessage(inputs),
		Step:   s.step,
		Emit: func(e flow.Event) {
			_, err := time.Parse(time.RFC3339Nano, e.Ts)
			assert.NoError(t, err)
			ev.list = append(ev.list, e)
			ev.summary.Apply(e)
		},
	})
	return res, ev
}

// steps lists the step events as "id status attempt".
func (ev *events) steps() []string {
	var out []string
	for _, e := range ev.list {
		if e.Type != flow.EventStep {
			continue
		}
		s := e.StepID + " " + string(e.Status)
		if e.Attempt != nil {
			s += fmt.Sprintf(" %d", *e.Attempt)
		}
		out = append(out, s)
	}
	return out
}

func TestExecuteOrderAndReferences(t *testing.T) {
	// Declared out of order: execution follows the edges, ties in
	// declaration order.
	f := mustParse(t, doc(`[
		{"id":"d","type":"act.join","with":{"b":"${steps.b.output.n}","c":"${steps.c.output}","first":"${steps.a.output.list.1}"}},
		{"id":"c","type":"act.x","with":{"all":"${inputs}"}},
		{"id":"b","type":"act.x","with":{"n":"${inputs.n}","big":0.1,"deep":{"v":["${inputs.flag}"]}}},
		{"id":"a","type":"act.x","with":{"list":["x","${inputs.obj.k}"]}}]`,
		`[{"from":"a","to":"c"},{"from":"a","to":"b"},{"from":"b","to":"d"},{"from":"c","to":"d"}]`))
	s := &script{}
	res, ev := run(t, context.Background(), f, `{"n":12345678901234,"flag":true,"obj":{"k":null}}`, s)
	require.Equal(t, flow.StatusCompleted, res.Status)
	assert.Nil(t, res.Failure)
	assert.Equal(t, []string{
		`a {"list":["x",null]}`,
		`c {"all":{"flag":true,"n":12345678901234,"obj":{"k":null}}}`,
		`b {"big":0.1,"deep":{"v":[true]},"n":12345678901234}`,
		`d {"b":12345678901234,"c":{"all":{"flag":true,"n":12345678901234,"obj":{"k":null}}},"first":null}`,
	}, s.payloads())
	assert.Equal(t, flow.Summary{StepsTotal: 4, StepsSucceeded: 4, Attempts: 4, Outputs: map[string]json.RawMessage{
		"a": json.RawMessage(`{"list":["x",null]}`),
		"b": json.RawMessage(`{"big":0.1,"deep":{"v":[true]},"n":12345678901234}`),
		"c": json.RawMessage(`{"all":{"flag":true,"n":12345678901234,"obj":{"k":null}}}`),
		"d": json.RawMessage(`{"b":12345678901234,"c":{"all":{"flag":true,"n":12345678901234,"obj":{"k":null}}},"first":null}`),
	}}, ev.summary)
	assert.Equal(t, `run of flow "t" started: 4 steps`, ev.list[0].Message)
	assert.Equal(t, "run completed", ev.list[len(ev.list)-1].Message)
}

func TestExecuteRetries(t *testing.T) {
	fail := func(retriable bool) func(context.Context, flow.Call) flow.Outcome {
		return func(_ context.Context, c flow.Call) flow.Outcome {
			return flow.Outcome{Retriable: retriable, Message: fmt.Sprintf("no (%d)", c.Attempt), Result: "verdict"}
		}
	}
	t.Run("until success", func(t *testing.T) {
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","retry":{"max":5,"backoff_ms":1}}]`, `[]`))
		s := &script{answer: func(ctx context.Context, c flow.Call) flow.Outcome {
			if c.Attempt < 3 {
				return fail(true)(ctx, c)
			}
			return flow.Outcome{OK: true}
		}}
		res, ev := run(t, context.Background(), f, ``, s)
		require.Equal(t, flow.StatusCompleted, res.Status)
		assert.Equal(t, []string{"a started 1", "a failed 1", "a started 2", "a failed 2", "a started 3", "a succeeded 3"}, ev.steps())
		assert.Equal(t, 3, ev.summary.Attempts)
		assert.Equal(t, 0, ev.summary.StepsFailed)
		assert.Equal(t, json.RawMessage("null"), ev.summary.Outputs["a"], "no output is null")
	})
	t.Run("exhausted", func(t *testing.T) {
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","retry":{"max":2}},{"id":"b","type":"act.x"}]`, `[{"from":"a","to":"b"}]`))
		res, ev := run(t, context.Background(), f, ``, &script{answer: fail(true)})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 3, Retriable: true, Reason: flow.ReasonStepFailed, Result: "verdict",
			Message: `step "a" failed on attempt 3: no (3)`}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1", "a started 2", "a failed 2", "a started 3", "a failed 3"}, ev.steps())
		assert.Equal(t, 1, ev.summary.StepsFailed)
	})
	t.Run("not retriable", func(t *testing.T) {
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","retry":{"max":2}}]`, `[]`))
		res, ev := run(t, context.Background(), f, ``, &script{answer: fail(false)})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, 1, res.Failure.Attempt)
		assert.False(t, res.Failure.Retriable)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
		last := ev.list[2]
		assert.False(t, *last.Retriable)
		assert.False(t, *last.WillRetry)
		assert.Equal(t, "no (1)", last.Message)
	})
}

// hang is a step that runs until its context is done.
func hang(ctx context.Context, _ flow.Call) flow.Outcome {
	<-ctx.Done()
	return flow.Outcome{Message: "interrupted", Result: "blocked"}
}

func TestExecuteTimeouts(t *testing.T) {
	t.Run("step", func(t *testing.T) {
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","timeout_ms":5,"retry":{"max":1}}]`, `[]`))
		res, ev := run(t, context.Background(), f, ``, &script{answer: hang})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 2, Retriable: true, Reason: flow.ReasonStepTimeout, Result: "blocked",
			Message: `step "a" failed on attempt 2: timed out after 5 ms`}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1", "a started 2", "a failed 2"}, ev.steps())
	})
	t.Run("flow", func(t *testing.T) {
		f := mustParse(t, `{"version":"1.0.0","flow":{"timeout_ms":20},"graph":{"nodes":[{"id":"a","type":"act.x","retry":{"max":3}}]}}`)
		res, ev := run(t, context.Background(), f, ``, &script{answer: hang})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 1, Reason: flow.ReasonFlowTimeout, Result: "blocked",
			Message: "the flow timed out after 20 ms"}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
	})
	t.Run("default flow timeout", func(t *testing.T) {
		f := mustParse(t, doc(`[{"id":"a","type":"act.x"}]`, `[]`))
		res := f.Execute(context.Background(), flow.ExecConfig{Step: hang, DefaultTimeout: 10 * time.Millisecond})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, flow.ReasonFlowTimeout, res.Failure.Reason)
		assert.Equal(t, "the flow timed out after 10 ms", res.Failure.Message)
	})
}

func TestExecuteCancel(t *testing.T) {
	t.Run("during a step", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","retry":{"max":3}},{"id":"b","type":"act.x"}]`, `[{"from":"a","to":"b"}]`))
		s := &script{answer: func(ctx context.Context, c flow.Call) flow.Outcome {
			cancel()
			return hang(ctx, c)
		}}
		res, ev := run(t, ctx, f, ``, s)
		assert.Equal(t, flow.Result{Status: flow.StatusCancelled}, res)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
		assert.Equal(t, "the run was cancelled", ev.list[2].Message)
		assert.Equal(t, "run cancelled", ev.list[3].Message)
	})
	t.Run("during a backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := mustParse(t, doc(`[{"id":"a","type":"act.x","retry":{"max":3,"backoff_ms":60000}}]`, `[]`))
		s := &script{answer: func(context.Context, flow.Call) flow.Outcome {
			cancel()
			return flow.Outcome{Retriable: true, Message: "no"}
		}}
		res, ev := run(t, ctx, f, ``, s)
		assert.Equal(t, flow.StatusCancelled, res.Status)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
	})
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := &script{}
		res, _ := run(t, ctx, mustParse(t, doc(`[{"id":"a","type":"act.x"}]`, `[]`)), ``, s)
		assert.Equal(t, flow.StatusCancelled, res.Status)
		assert.Empty(t, s.payloads())
	})
}

func TestExecuteSwitch(t *testing.T) {
	f := mustParse(t, doc(`[
		{"id":"s","type":"switch","with":{"value":"${inputs.v}"}},
		{"id":"one","type":"act.x","with":"one"},
		{"id":"yes","type":"act.x","with":"yes"},
		{"id":"nul","type":"act.x","with":"null"},
		{"id":"obj","type":"act.x","with":"obj"},
		{"id":"str","type":"act.x","with":"str"},
		{"id":"after_one","type":"act.x","with":"${steps.one.output}"},
		{"id":"join","type":"act.x","with":"join"}]`,
		`[{"from":"s","to":"one","on":"case:1"},{"from":"s","to":"yes","on":"case:true"},
		  {"from":"s","to":"nul","on":"case:null"},{"from":"s","to":"obj","on":"case:{\"a\":1,\"b\":2}"},
		  {"from":"s","to":"str","on":"case:1.5"},
		  {"from":"one","to":"after_one"},
		  {"from":"one","to":"join"},{"from":"yes","to":"join"},{"from":"str","to":"join"}]`))
	tests := []struct {
		inputs string
		ran    []string
		output string
	}{
		{`{"v":1.0}`, []string{"one", "after_one", "join"}, `{"case":"1","value":1.0}`},
		{`{"v":true}`, []string{"yes", "join"}, `{"case":"true","value":true}`},
		{`{"v":null}`, []string{"nul"}, `{"case":"null","value":null}`},
		{`{"v":{"b":2,"a":1}}`, []string{"obj"}, `{"case":"{\"a\":1,\"b\":2}","value":{"a":1,"b":2}}`},
		{`{"v":"1.5"}`, []string{"str", "join"}, `{"case":"1.5","value":"1.5"}`},
		{`{"v":"other"}`, nil, `{"case":null,"value":"other"}`},
	}
	for _, tt := range tests {
		t.Run(tt.inputs, func(t *testing.T) {
			s := &script{}
			res, ev := run(t, context.Background(), f, tt.inputs, s)
			require.Equal(t, flow.StatusCompleted, res.Status, "%+v", res.Failure)
			var ran []string
			for _, p := range s.payloads() {
				ran = append(ran, strings.Fields(p)[0])
			}
			assert.Equal(t, tt.ran, ran)
			assert.JSONEq(t, tt.output, string(ev.summary.Outputs["s"]))
			assert.Equal(t, 7-len(tt.ran), ev.summary.StepsSkipped)
			if tt.ran == nil {
				assert.Contains(t, ev.list[2].Message, `switch "s": no case matches "other" and there is no default: no edge is taken`)
			}
		})
	}
}

func TestExecuteUnresolved(t *testing.T) {
	f := mustParse(t, doc(`[
		{"id":"s","type":"switch","with":{"value":"${inputs.v}"}},
		{"id":"a","type":"act.x"},
		{"id":"b","type":"act.x","with":{"x":"${steps.a.output}"}}]`,
		`[{"from":"s","to":"a","on":"case:go"},{"from":"s","to":"b","on":"default"},{"from":"a","to":"b"}]`))
	tests := []struct{ inputs, msg string }{
		{`{"v":"stop"}`, `step "b": unresolved reference: ${steps.a.output}: step "a" has not succeeded in this run (it was skipped)`},
		{`{}`, `step "s": unresolved reference: ${inputs.v}: no field "v" in the run's inputs`},
	}
	for _, tt := range tests {
		res, ev := run(t, context.Background(), f, tt.inputs, &script{})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, tt.msg, res.Failure.Message)
		assert.Equal(t, 0, res.Failure.Attempt)
		assert.Equal(t, flow.ReasonInputUnresolved, res.Failure.Reason)
		assert.False(t, res.Failure.Retriable)
		assert.Equal(t, 1, ev.summary.StepsFailed)
	}

	g := mustParse(t, doc(`[{"id":"a","type":"act.x"},{"id":"b","type":"act.x","with":["${steps.a.output.list.2}","${steps.a.output.n.k}"]}]`, `[{"from":"a","to":"b"}]`))
	for output, msg := range map[string]string{
		`{"list":[1,2]}`:           `${steps.a.output.list.2}: no element "list.2" in the output of step "a"`,
		`{"list":[1,2,3],"n":5}`:   `${steps.a.output.n.k}: field "n" in the output of step "a" is not an object or array`,
		`{"list":[1,2,3]}`:         `${steps.a.output.n.k}: no field "n" in the output of step "a"`,
		`{"list":{"2":"a key"}}`:   `${steps.a.output.n.k}: no field "n"`,
		`["not","an","object"]`:    `${steps.a.output.list.2}: no element "list" in the output of step "a"`,
		`{"list":[1,2,3],"n":[1]}`: `${steps.a.output.n.k}: no element "n.k" in the output of step "a"`,
	} {
		s := &script{answer: func(_ context.Context, c flow.Call) flow.Outcome {
			return flow.Outcome{OK: true, Output: json.RawMessage(output)}
		}}
		res, _ := run(t, context.Background(), g, ``, s)
		require.Equal(t, flow.StatusFailed, res.Status, output)
		assert.Contains(t, res.Failure.Message, msg, output)
	}
}

func TestErrorKinds(t *testing.T) {
	_, err := flow.Parse([]byte(`{"version":"0.9.0"}`), known)
	assert.True(t, errors.Is(err, flow.ErrVersion))
	assert.False(t, errors.Is(err, flow.ErrSchema))
}

// ExampleFlow_Execute runs a two-step flow whose second step reads the first
// one's output, with a StepFunc that answers for the executors.
func ExampleFlow_Execute() {
	f, err := flow.Parse([]byte(`{
		"version": "1.0.0",
		"flow": {"name": "demo"},
		"graph": {
			"nodes": [
				{"id": "count", "type": "text.count", "with": {"text": "${inputs.text}"}},
				{"id": "check", "type": "math.positive", "with": {"n": "${steps.count.output.n}"}}
			],
			"edges": [{"from": "count", "to": "check", "on": "success"}]
		}}`), func(kind string) bool { return kind == "text.count" || kind == "math.positive" })
	if err != nil {
		panic(err)
	}
	step := func(_ context.Context, c flow.Call) flow.Outcome {
		fmt.Printf("%s(%s)\n", c.Kind, c.Payload)
		if c.Kind == "text.count" {
			return flow.Outcome{OK: true, Output: json.RawMessage(`{"n":3}`)}
		}
		return flow.Outcome{OK: true, Output: json.RawMessage(`true`)}
	}
	res := f.Execute(context.Background(), flow.ExecConfig{
		Inputs: json.RawMessage(`{"text":"abc"}`),
		Step:   step,
		Emit: func(e flow.Event) {
			if e.Type == flow.EventStep && e.Status != flow.StepStarted {
				fmt.Println(" ", e.StepID, e.Status)
			}
		},
	})
	fmt.Println(res.Status)
	// Output:
	// text.count({"text":"abc"})
	//   count succeeded
	// math.positive({"n":3})
	//   check succeeded
	// completed
}
