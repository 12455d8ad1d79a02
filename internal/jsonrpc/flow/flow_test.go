package flow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/jsonrpc/flow"
)

func known(kind string) bool {
	return strings.HasPrefix(kind, "act.") || strings.HasPrefix(kind, "policy.")
}

// node is a node as TraceMind's compiler writes it: every required member,
// zero timeout and retry.
func node(id, typ, with string) string { return nodeT(id, typ, with, 0, 0, 0) }

// nodeT is a node with a timeout_ms and a retry policy.
func nodeT(id, typ, with string, timeoutMs, retries, backoffMs int) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"with":%s,"timeout_ms":%d,"retry":{"max":%d,"backoff_ms":%d}}`, id, typ, with, timeoutMs, retries, backoffMs)
}

func edge(from, to string) string { return fmt.Sprintf(`{"from":%q,"to":%q,"on":"success"}`, from, to) }
func failEdge(from, to string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"on":"failure"}`, from, to)
}
func caseEdge(from, to, c string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"on":"success","case":%q}`, from, to, c)
}

func list(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

// document is a whole IR; flowTimeout and inputsSchema as given.
func document(flowTimeout int, inputsSchema, nodes, edges string) string {
	return `{"version":"1.0.0","flow":{"name":"t","timeout_ms":` + fmt.Sprint(flowTimeout) + `},` +
		`"constants":{"policyRef":"p","policy":{"limit":3}},"inputs_schema":` + inputsSchema + `,` +
		`"graph":{"nodes":` + nodes + `,"edges":` + edges + `},` +
		`"metadata":{"generated_at":"2026-11-24T00:00:00Z","source_file":"t.wdl"}}`
}

// doc is an IR with these nodes and edges, no timeout, inputs_schema {}.
func doc(nodes, edges string) string { return document(0, `{}`, nodes, edges) }

func mustParse(t *testing.T, ir string) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(ir), known)
	require.NoError(t, err)
	return f
}

// replace rewrites a document with old replaced by new, once.
func replace(t *testing.T, doc, old, new string) string {
	t.Helper()
	require.Contains(t, doc, old)
	return strings.Replace(doc, old, new, 1)
}

func TestSchemaIsTheSpecs(t *testing.T) {
	spec := filepath.Join("..", "..", "..", "..", "shared", "specs", "tracemind-flow-ir", "schema.json")
	want, err := os.ReadFile(spec)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("../shared is not there: nothing to compare with")
	}
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, flow.SchemaJSON), "internal/jsonrpc/flow/schema.json differs from %s", spec)
}

func TestParseTraceMindExamples(t *testing.T) {
	for _, name := range []string{"plant-monitor.ir.json", "sample.ir.json"} {
		t.Run(name, func(t *testing.T) {
			ir, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "rep", name))
			require.NoError(t, err)
			kinds := map[string]bool{"opcua.read": true, "opcua.write": true, "policy.apply": true, "dsl.emit": true, "finish": true}
			f, err := flow.Parse(ir, func(k string) bool { return kinds[k] })
			require.NoError(t, err)
			assert.False(t, f.ValidatesInputs(), "neither example's inputs_schema is a JSON Schema")
			assert.Contains(t, string(f.Metadata()), `"generated_at":"2026-11-24T`)
		})
	}
}

func TestParseRefuses(t *testing.T) {
	a, b := node("a", "act.x", `{}`), node("b", "act.x", `{}`)
	ok := doc(list(a, b), list(edge("a", "b")))
	sw := func(with string, edges ...string) string {
		return doc(list(node("s", "switch", with), a, b), list(edges...))
	}
	tests := []struct {
		name, ir string
		kind     error
		pointer  string
		msg      string
		stepID   string
	}{
		{"not an object", `[]`, flow.ErrSchema, "", "ir must be a JSON object (a Flow IR 1.0.0 document), not an array", ""},
		{"not json", `{"version":`, flow.ErrSchema, "", "ir is not JSON", ""},
		{"no version", `{"graph":{}}`, flow.ErrVersion, "/version", "ir.version is missing; this runtime reads Flow IR 1.0.0", ""},
		{"other version", replace(t, ok, `"1.0.0"`, `"2.0.0"`), flow.ErrVersion, "/version", `Flow IR version "2.0.0" is not supported; this runtime reads 1.0.0`, ""},
		{"a minor the schema refuses", replace(t, ok, `"1.0.0"`, `"1.1.0"`), flow.ErrVersion, "/version", `Flow IR version "1.1.0" is not supported`, ""},
		{"version of the wrong type", `{"version":1}`, flow.ErrVersion, "/version", `ir.version must be the string "1.0.0", not 1`, ""},
		{"version before the schema", `{"version":"0.9.0","graph":7}`, flow.ErrVersion, "/version", `"0.9.0" is not supported`, ""},
		// The spec's JSON Schema.
		{"missing members", `{"version":"1.0.0"}`, flow.ErrSchema, "", `the IR does not match the Flow IR schema at "" (the top level): missing properties 'flow', 'constants', 'inputs_schema', 'graph', 'metadata'`, ""},
		{"a node without retry", replace(t, ok, `,"retry":{"max":0,"backoff_ms":0}}`, `}`), flow.ErrSchema, "/graph/nodes/0", `at "/graph/nodes/0": missing property 'retry'`, "a"},
		{"an unknown on", replace(t, ok, `"on":"success"`, `"on":"maybe"`), flow.ErrSchema, "/graph/edges/0/on", `at "/graph/edges/0/on": value must be one of 'success', 'failure'`, ""},
		{"an unknown flow member", replace(t, ok, `"timeout_ms":0},`, `"timeout_ms":0,"owner":"x"},`), flow.ErrSchema, "/flow", `additional properties 'owner' not allowed`, ""},
		{"an id the pattern refuses", replace(t, ok, `"id":"a"`, `"id":"a b"`), flow.ErrSchema, "/graph/nodes/0/id", `at "/graph/nodes/0/id": 'a b' does not match pattern`, "a b"},
		{"a negative timeout", replace(t, ok, `"timeout_ms":0,"retry"`, `"timeout_ms":-1,"retry"`), flow.ErrSchema, "/graph/nodes/0/timeout_ms", "minimum", "a"},
		{"a fractional retry", replace(t, ok, `"max":0`, `"max":0.5`), flow.ErrSchema, "/graph/nodes/0/retry/max", "want integer", "a"},
		{"no nodes", doc(`[]`, `[]`), flow.ErrSchema, "/graph/nodes", "minItems", ""},
		{"an empty policyRef", replace(t, ok, `"policyRef":"p"`, `"policyRef":""`), flow.ErrSchema, "/constants/policyRef", "minLength", ""},
		{"generated_at not a date-time", replace(t, ok, `"2026-11-24T00:00:00Z"`, `"yesterday"`), flow.ErrSchema, "/metadata/generated_at", "is not valid date-time", ""},
		{"with not an object", replace(t, ok, `"with":{}`, `"with":"x"`), flow.ErrSchema, "/graph/nodes/0/with", "want object", "a"},
		// The spec's rules the schema cannot express.
		{"generated_at not UTC", replace(t, ok, `"2026-11-24T00:00:00Z"`, `"2026-11-24T02:00:00+02:00"`), flow.ErrSchema, "/metadata/generated_at", `must be a UTC timestamp`, ""},
		{"duplicate ids", doc(list(a, b, a), `[]`), flow.ErrSchema, "/graph/nodes/2/id", `node id "a" is used twice (graph.nodes[0] and graph.nodes[2]); node ids must be unique`, "a"},
		{"an edge from nowhere", doc(list(a), list(edge("q", "a"))), flow.ErrSchema, "/graph/edges/0/from", `graph.edges[0]: from "q" is not a node id`, ""},
		{"an edge to nowhere", doc(list(a), list(edge("a", "z"))), flow.ErrSchema, "/graph/edges/0/to", `graph.edges[0]: to "z" is not a node id`, ""},
		{"a self loop", doc(list(a), list(edge("a", "a"))), flow.ErrSchema, "/graph/edges/0", "the graph has a cycle: a -> a", "a"},
		{"a cycle", doc(list(a, b, node("c", "act.x", `{}`)), list(edge("a", "b"), edge("b", "c"), failEdge("c", "b"))), flow.ErrSchema, "/graph/edges/1", `the graph has a cycle: b -> c -> b; a flow is a directed acyclic graph (at "/graph/edges/1")`, "b"},
		// What the runtime validates in with.
		{"a switch without key_from", sw(`{"cases":{}}`, caseEdge("s", "a", "x")), flow.ErrSchema, "/graph/nodes/0/with/key_from", `switch "s": with.key_from must be a reference such as "$step.ID.PATH" or "$input.PATH", not missing`, "s"},
		{"a key_from that is no reference", sw(`{"key_from":"decide.action"}`, caseEdge("s", "a", "x")), flow.ErrSchema, "/graph/nodes/0/with/key_from", `with.key_from "decide.action" is not a reference`, "s"},
		{"cases not an object", sw(`{"key_from":"$input.k","cases":["a"]}`, caseEdge("s", "a", "x")), flow.ErrSchema, "/graph/nodes/0/with/cases", "with.cases must be an object", "s"},
		{"a case to no node", sw(`{"key_from":"$input.k","cases":{"x/y":"q"}}`, caseEdge("s", "a", "x/y")), flow.ErrSchema, "/graph/nodes/0/with/cases/x~1y", `with.cases["x/y"] names "q", which is not a node id`, "s"},
		{"a case without its edge", sw(`{"key_from":"$input.k","cases":{"x":"a","y":"b"}}`, caseEdge("s", "a", "x"), edge("s", "b")), flow.ErrSchema, "/graph/nodes/0/with/cases/y", `with.cases["y"] sends the case to "b", but graph.edges has no edge from "s" to "b" with "case": "y"`, "s"},
		{"a default that is no string", sw(`{"key_from":"$input.k","default":1}`, caseEdge("s", "a", "x")), flow.ErrSchema, "/graph/nodes/0/with/default", "with.default must be a case value (a string), not 1", "s"},
		{"an empty path segment", doc(list(node("a", "act.x", `{"k":["$input..x"]}`)), `[]`), flow.ErrSchema, "/graph/nodes/0/with/k/0", `node "a": "$input..x" is a malformed reference: a path segment is empty`, "a"},
		{"a step reference without an id", doc(list(node("a", "act.x", `{"k":"$step"}`)), `[]`), flow.ErrSchema, "/graph/nodes/0/with/k", `"$step" is a malformed reference: $step needs a step id`, "a"},
		{"a ${steps} reference without output", doc(list(node("a", "act.x", `{"k":"${steps.a}"}`)), `[]`), flow.ErrSchema, "/graph/nodes/0/with/k", `"${steps.a}" is a malformed reference: a step's output is ${steps.ID.output.PATH}`, "a"},
		{"an inputs_schema that says it is one and is not", document(0, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"list<string>"}`, list(a), `[]`), flow.ErrSchema, "/inputs_schema/type", `inputs_schema declares $schema but is not a valid JSON Schema`, ""},
		// Step kinds come last.
		{"an unknown step kind", doc(list(a, node("z", "net.fetch", `{}`)), `[]`), flow.ErrUnknownStepKind, "/graph/nodes/1/type", `node "z": step kind "net.fetch" is not supported by this runtime`, "z"},
		{"the schema before kinds", doc(list(node("z", "net.fetch", `{}`), node("z", "act.x", `{}`)), `[]`), flow.ErrSchema, "/graph/nodes/1/id", `node id "z" is used twice`, "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := flow.Parse([]byte(tt.ir), known)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.kind)
			var fe *flow.Error
			require.ErrorAs(t, err, &fe)
			assert.Contains(t, fe.Msg, tt.msg)
			assert.Equal(t, tt.pointer, fe.Pointer)
			assert.Equal(t, tt.stepID, fe.StepID)
		})
	}
}

func TestParseAccepts(t *testing.T) {
	a, b := node("a", "act.x", `{}`), node("b", "act.x", `{}`)
	for name, ir := range map[string]string{
		"unknown members wherever the schema allows them": `{"version":"1.0.0","x-extra":1,"flow":{"name":"t","timeout_ms":0},` +
			`"constants":{"policyRef":"p","policy":{}},"inputs_schema":{},` +
			`"graph":{"nodes":[{"id":"a","type":"act.x","with":{},"timeout_ms":0,"retry":{"max":0,"backoff_ms":0},"labels":["x"]}],` +
			`"edges":[{"from":"a","to":"a.b","on":"success","weight":2}]},` +
			`"metadata":{"generated_at":"2026-11-24T00:00:00Z","source_file":"t.wdl","compiler":"tm 0.4"}}`,
		"integers written as 1.0 and 1e3": doc(list(`{"id":"a","type":"act.x","with":{},"timeout_ms":1e3,"retry":{"max":1.0,"backoff_ms":0}}`), `[]`),
		"any retry the schema admits":     doc(list(nodeT("a", "act.x", `{}`, 0, 2147483647, 2147483647)), `[]`),
		"ids with dots and a reference to one": doc(list(node("read.1", "act.x", `{}`), node("b", "act.x", `{"v":"$step.read.1.values.0","w":"${steps.read.1.output}"}`)),
			list(edge("read.1", "b"))),
		"a repeated edge":                                       doc(list(a, b), list(edge("a", "b"), edge("a", "b"))),
		"a case on a step's edge":                               doc(list(a, b), list(caseEdge("a", "b", "x"))),
		"strings that are no references":                        doc(list(node("a", "act.x", `{"k":"hello ${inputs.name}","p":"$5","q":"$inputs.x","r":"$$input.x","s":"${HOME}","t":"${env.PATH}"}`)), `[]`),
		"references to unknown steps (they fail when they run)": doc(list(node("a", "act.x", `{"k":"$step.ghost.x"}`)), `[]`),
		"an inputs_schema with a keyword that is not a schema":  document(0, `{"type":{"type":"string"}}`, list(a), `[]`),
		"generated_at with +00:00":                              replace(t, doc(list(a), `[]`), `"2026-11-24T00:00:00Z"`, `"2026-11-24T00:00:00+00:00"`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ir := ir
			if name == "unknown members wherever the schema allows them" {
				ir = strings.Replace(ir, `"to":"a.b"`, `"to":"a"`, 1)
				ir = strings.Replace(ir, `"from":"a","to":"a"`, `"from":"a","to":"z"`, 1)
				ir = strings.Replace(ir, `"labels":["x"]}]`, `"labels":["x"]},{"id":"z","type":"act.x","with":{},"timeout_ms":0,"retry":{"max":0,"backoff_ms":0}}]`, 1)
			}
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

func (s *script) ran() []string {
	var out []string
	for _, p := range s.payloads() {
		out = append(out, strings.Fields(p)[0])
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
			_, err := time.Parse(time.RFC3339, e.Timestamp)
			assert.NoError(t, err)
			assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, e.Timestamp)
			ev.list = append(ev.list, e)
			ev.summary.Apply(e)
		},
	})
	return res, ev
}

// steps lists the step events as "id state attempt".
func (ev *events) steps() []string {
	var out []string
	for _, e := range ev.list {
		if e.Type != flow.EventStep {
			continue
		}
		s := e.StepID + " " + string(e.State)
		if e.Attempt != nil {
			s += fmt.Sprintf(" %d", *e.Attempt)
		}
		out = append(out, s)
	}
	return out
}

// logs lists the log events' messages.
func (ev *events) logs() []string {
	var out []string
	for _, e := range ev.list {
		if e.Type == flow.EventLog {
			out = append(out, e.Message)
		}
	}
	return out
}

func TestExecuteOrderAndReferences(t *testing.T) {
	// Declared out of order: execution follows the edges, ties in
	// declaration order. Every reference form is used.
	f := mustParse(t, doc(list(
		node("d", "act.join", `{"b":"$step.b.n","c":"${steps.c.output}","first":"$.vars.a.list.1","whole":"$step.a"}`),
		node("c", "act.x", `{"all":"${inputs}","same":"$input","again":"$.inputs"}`),
		node("b", "act.x", `{"n":"$input.n","big":0.1,"deep":{"v":[" ${inputs.flag} "]},"limit":"$constants.policy.limit","ref":"$.constants.policyRef","c":"${constants}"}`),
		node("a", "act.x", `{"list":["x","$.inputs.obj.k"],"text":"costs $5 for ${inputs.n}","escaped":"$$step.a","placeholder":"${HOME}"}`)),
		list(edge("a", "c"), edge("a", "b"), edge("b", "d"), edge("c", "d"))))
	s := &script{}
	res, ev := run(t, context.Background(), f, `{"n":12345678901234,"flag":true,"obj":{"k":null}}`, s)
	require.Equal(t, flow.StatusCompleted, res.Status)
	assert.Nil(t, res.Failure)
	inputs := `{"flag":true,"n":12345678901234,"obj":{"k":null}}`
	a := `{"escaped":"$step.a","list":["x",null],"placeholder":"${HOME}","text":"costs $5 for ${inputs.n}"}`
	b := `{"big":0.1,"c":{"policy":{"limit":3},"policyRef":"p"},"deep":{"v":[true]},"limit":3,"n":12345678901234,"ref":"p"}`
	c := `{"again":` + inputs + `,"all":` + inputs + `,"same":` + inputs + `}`
	d := `{"b":12345678901234,"c":` + c + `,"first":null,"whole":` + a + `}`
	assert.Equal(t, []string{"a " + a, "c " + c, "b " + b, "d " + d}, s.payloads())
	assert.Equal(t, flow.Summary{TotalSteps: 4, CompletedSteps: 4, Attempts: 4, Outputs: map[string]json.RawMessage{
		"a": json.RawMessage(a), "b": json.RawMessage(b), "c": json.RawMessage(c), "d": json.RawMessage(d),
	}}, ev.summary)
	assert.Equal(t, `run of flow "t" started: 4 steps`, ev.list[0].Message)
	assert.Equal(t, "run completed", ev.list[len(ev.list)-1].Message)
	for _, e := range ev.list {
		if e.Type == flow.EventStep {
			assert.NotEmpty(t, e.StepID)
			assert.Contains(t, []flow.StepState{flow.StepStarted, flow.StepSucceeded, flow.StepFailed}, e.State)
		} else {
			assert.NotEmpty(t, e.Level)
			assert.NotEmpty(t, e.Message)
		}
	}
}

func TestExecuteConstantsForPolicySteps(t *testing.T) {
	f := mustParse(t, doc(list(
		node("decide", "policy.apply", `{"values":"$input.v"}`),
		node("own", "policy.apply", `{"constants":"mine"}`),
		node("other", "act.x", `{"values":1}`)), `[]`))
	s := &script{}
	res, _ := run(t, context.Background(), f, `{"v":[1]}`, s)
	require.Equal(t, flow.StatusCompleted, res.Status)
	assert.Equal(t, []string{
		`decide {"constants":{"policy":{"limit":3},"policyRef":"p"},"values":[1]}`,
		`own {"constants":"mine"}`,
		`other {"values":1}`,
	}, s.payloads())
}

func TestExecuteRetries(t *testing.T) {
	fail := func(retriable bool) func(context.Context, flow.Call) flow.Outcome {
		return func(_ context.Context, c flow.Call) flow.Outcome {
			return flow.Outcome{Retriable: retriable, Message: fmt.Sprintf("no (%d)", c.Attempt), Result: "verdict"}
		}
	}
	t.Run("until success", func(t *testing.T) {
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 0, 5, 1)), `[]`))
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
		assert.Equal(t, 0, ev.summary.FailedSteps)
		assert.Equal(t, json.RawMessage("null"), ev.summary.Outputs["a"], "no output is null")
	})
	t.Run("exhausted", func(t *testing.T) {
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 0, 2, 0), node("b", "act.x", `{}`)), list(edge("a", "b"))))
		res, ev := run(t, context.Background(), f, ``, &script{answer: fail(true)})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 3, Retriable: true, Reason: flow.ReasonStepFailed, Result: "verdict",
			Message: `step "a" failed on attempt 3: no (3)`}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1", "a started 2", "a failed 2", "a started 3", "a failed 3"}, ev.steps())
		assert.Equal(t, 1, ev.summary.FailedSteps)
	})
	t.Run("not retriable", func(t *testing.T) {
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 0, 2, 0)), `[]`))
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

func TestExecuteFailureEdges(t *testing.T) {
	fails := func(id string) func(context.Context, flow.Call) flow.Outcome {
		return func(_ context.Context, c flow.Call) flow.Outcome {
			if c.StepID == id {
				return flow.Outcome{Retriable: true, Message: "broken"}
			}
			return flow.Outcome{OK: true, Output: c.Payload}
		}
	}
	f := mustParse(t, doc(list(
		nodeT("work", "act.x", `{}`, 0, 1, 0),
		node("next", "act.x", `{}`),
		node("recover", "act.x", `{"why":"handled"}`),
		node("after", "act.x", `{}`)),
		list(edge("work", "next"), failEdge("work", "recover"), edge("next", "after"), edge("recover", "after"))))
	t.Run("taken after the retries", func(t *testing.T) {
		s := &script{answer: fails("work")}
		res, ev := run(t, context.Background(), f, ``, s)
		require.Equal(t, flow.StatusCompleted, res.Status, "%+v", res.Failure)
		assert.Equal(t, []string{"work", "work", "recover", "after"}, s.ran())
		assert.Equal(t, []string{"work started 1", "work failed 1", "work started 2", "work failed 2",
			"recover started 1", "recover succeeded 1", "after started 1", "after succeeded 1"}, ev.steps())
		assert.Contains(t, ev.logs(), `step "work" failed on attempt 2: broken; taking its failure edges to "recover"`)
		assert.Contains(t, ev.logs(), `step "next" skipped: no edge into it was taken`)
		assert.Equal(t, flow.Summary{TotalSteps: 4, CompletedSteps: 2, FailedSteps: 1, SkippedSteps: 1, Attempts: 4,
			Outputs: map[string]json.RawMessage{"recover": json.RawMessage(`{"why":"handled"}`), "after": json.RawMessage(`{}`)}}, ev.summary)
	})
	t.Run("not taken on success", func(t *testing.T) {
		s := &script{}
		res, _ := run(t, context.Background(), f, ``, s)
		require.Equal(t, flow.StatusCompleted, res.Status)
		assert.Equal(t, []string{"work", "next", "after"}, s.ran())
	})
	t.Run("a failure without a failure edge still fails the run", func(t *testing.T) {
		s := &script{answer: fails("next")}
		res, _ := run(t, context.Background(), f, ``, s)
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, "next", res.Failure.StepID)
	})
	t.Run("an unresolvable reference is a failure too", func(t *testing.T) {
		g := mustParse(t, doc(list(node("a", "act.x", `{"k":"$input.missing"}`), node("b", "act.x", `{}`)), list(failEdge("a", "b"))))
		s := &script{}
		res, ev := run(t, context.Background(), g, `{}`, s)
		require.Equal(t, flow.StatusCompleted, res.Status)
		assert.Equal(t, []string{"b"}, s.ran())
		assert.Equal(t, []string{"a failed 0", "b started 1", "b succeeded 1"}, ev.steps())
	})
}

// hang is a step that runs until its context is done.
func hang(ctx context.Context, _ flow.Call) flow.Outcome {
	<-ctx.Done()
	return flow.Outcome{Message: "interrupted", Result: "blocked"}
}

func TestExecuteTimeouts(t *testing.T) {
	t.Run("step", func(t *testing.T) {
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 5, 1, 0)), `[]`))
		res, ev := run(t, context.Background(), f, ``, &script{answer: hang})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 2, Retriable: true, Reason: flow.ReasonStepTimeout, Result: "blocked",
			Message: `step "a" failed on attempt 2: timed out after 5 ms`}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1", "a started 2", "a failed 2"}, ev.steps())
	})
	t.Run("flow", func(t *testing.T) {
		f := mustParse(t, document(20, `{}`, list(nodeT("a", "act.x", `{}`, 0, 3, 0)), `[]`))
		res, ev := run(t, context.Background(), f, ``, &script{answer: hang})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, &flow.Failure{StepID: "a", Attempt: 1, Reason: flow.ReasonFlowTimeout, Result: "blocked",
			Message: "the flow timed out after 20 ms"}, res.Failure)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
	})
	t.Run("the runtime's cap", func(t *testing.T) {
		for _, flowTimeout := range []int{0, 60000} {
			f := mustParse(t, document(flowTimeout, `{}`, list(node("a", "act.x", `{}`)), `[]`))
			res := f.Execute(context.Background(), flow.ExecConfig{Step: hang, TimeoutCap: 10 * time.Millisecond})
			require.Equal(t, flow.StatusFailed, res.Status)
			assert.Equal(t, flow.ReasonFlowTimeout, res.Failure.Reason)
			assert.Equal(t, "the flow timed out after 10 ms", res.Failure.Message)
		}
	})
}

func TestExecuteCancel(t *testing.T) {
	cause := errors.New("Runtime.Cancel")
	t.Run("during a step", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 0, 3, 0), node("b", "act.x", `{}`)), list(edge("a", "b"), failEdge("a", "b"))))
		s := &script{answer: func(ctx context.Context, c flow.Call) flow.Outcome {
			cancel(cause)
			return hang(ctx, c)
		}}
		res, ev := run(t, ctx, f, ``, s)
		assert.Equal(t, flow.Result{Status: flow.StatusFailed, Failure: &flow.Failure{StepID: "a", Attempt: 1, Reason: flow.ReasonCancelled,
			Result: "blocked", Message: "the run was cancelled (Runtime.Cancel)"}}, res)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps(), "a cancelled run takes no failure edge")
		assert.Equal(t, "the run was cancelled (Runtime.Cancel)", ev.list[2].Message)
		assert.Equal(t, "run failed: the run was cancelled (Runtime.Cancel)", ev.list[3].Message)
	})
	t.Run("during a backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := mustParse(t, doc(list(nodeT("a", "act.x", `{}`, 0, 3, 2147483647)), `[]`))
		s := &script{answer: func(context.Context, flow.Call) flow.Outcome {
			cancel()
			return flow.Outcome{Retriable: true, Message: "no"}
		}}
		res, ev := run(t, ctx, f, ``, s)
		assert.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, flow.ReasonCancelled, res.Failure.Reason)
		assert.Equal(t, "the run was cancelled", res.Failure.Message)
		assert.Equal(t, []string{"a started 1", "a failed 1"}, ev.steps())
	})
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := &script{}
		res, _ := run(t, ctx, mustParse(t, doc(list(node("a", "act.x", `{}`)), `[]`)), ``, s)
		assert.Equal(t, flow.ReasonCancelled, res.Failure.Reason)
		assert.Empty(t, s.payloads())
	})
	t.Run("before it started", func(t *testing.T) {
		assert.Equal(t, flow.Result{Status: flow.StatusFailed, Failure: &flow.Failure{Reason: flow.ReasonCancelled, Message: "the run was cancelled (Runtime.Cancel)"}},
			flow.Cancelled(cause))
	})
}

func TestExecuteSwitch(t *testing.T) {
	// The compiler's form: key_from, cases to nodes, a default case, and
	// edges carrying the cases.
	f := mustParse(t, doc(list(
		node("s", "switch", `{"key_from":"$.vars.pick.v","cases":{"WRITE":"write","SHUTDOWN":"write","1":"one","true":"yes","_DEFAULT":"report"},"default":"_DEFAULT"}`),
		node("write", "act.x", `{}`),
		node("one", "act.x", `{}`),
		node("yes", "act.x", `{}`),
		node("report", "act.x", `{"sw":"$step.s"}`),
		node("pick", "act.x", `{"v":"$input.v"}`),
		node("always", "act.x", `{}`)),
		list(edge("pick", "s"), caseEdge("s", "write", "WRITE"), caseEdge("s", "write", "SHUTDOWN"), caseEdge("s", "one", "1"),
			caseEdge("s", "yes", "true"), caseEdge("s", "report", "_DEFAULT"), edge("write", "report"), edge("s", "always"))))
	tests := []struct {
		inputs string
		ran    []string
		output string
	}{
		{`{"v":"WRITE"}`, []string{"pick", "write", "report", "always"}, `{"case":"WRITE","value":"WRITE"}`},
		{`{"v":"SHUTDOWN"}`, []string{"pick", "write", "report", "always"}, `{"case":"SHUTDOWN","value":"SHUTDOWN"}`},
		{`{"v":1.0}`, []string{"pick", "one", "always"}, `{"case":"1","value":1.0}`},
		{`{"v":true}`, []string{"pick", "yes", "always"}, `{"case":"true","value":true}`},
		{`{"v":"NONE"}`, []string{"pick", "report", "always"}, `{"case":"_DEFAULT","value":"NONE"}`},
		{`{"v":null}`, []string{"pick", "report", "always"}, `{"case":"_DEFAULT","value":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.inputs, func(t *testing.T) {
			s := &script{}
			res, ev := run(t, context.Background(), f, tt.inputs, s)
			require.Equal(t, flow.StatusCompleted, res.Status, "%+v", res.Failure)
			assert.Equal(t, tt.ran, s.ran())
			assert.JSONEq(t, tt.output, string(ev.summary.Outputs["s"]))
			assert.Equal(t, 7-1-len(tt.ran), ev.summary.SkippedSteps)
			if slicesContains(tt.ran, "report") {
				assert.Contains(t, s.payloads(), `report {"sw":`+string(ev.summary.Outputs["s"])+`}`)
			}
		})
	}
	t.Run("no match and no default", func(t *testing.T) {
		g := mustParse(t, doc(list(node("s", "switch", `{"key_from":"$input.v","cases":{"a":"x"}}`), node("x", "act.x", `{}`), node("y", "act.x", `{}`)),
			list(caseEdge("s", "x", "a"), edge("s", "y"))))
		s := &script{}
		res, ev := run(t, context.Background(), g, `{"v":"b"}`, s)
		require.Equal(t, flow.StatusCompleted, res.Status)
		assert.Equal(t, []string{"y"}, s.ran())
		assert.Contains(t, ev.logs(), `switch "s": no case matches "b" and there is no default: no case edge is taken`)
	})
	t.Run("an unresolvable key fails the switch", func(t *testing.T) {
		g := mustParse(t, doc(list(node("s", "switch", `{"key_from":"$input.v","cases":{"a":"x"},"default":"a"}`), node("x", "act.x", `{}`)),
			list(caseEdge("s", "x", "a"))))
		res, ev := run(t, context.Background(), g, `{}`, &script{})
		require.Equal(t, flow.StatusFailed, res.Status)
		assert.Equal(t, `switch "s": unresolvable reference "$input.v": no field "v" in the run's inputs`, res.Failure.Message)
		assert.Equal(t, []string{"s started 1", "s failed 1"}, ev.steps())
	})
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestExecuteUnresolved(t *testing.T) {
	f := mustParse(t, doc(list(
		node("s", "switch", `{"key_from":"$input.v","cases":{"go":"a"},"default":"other"}`),
		node("a", "act.x", `{}`),
		node("b", "act.x", `{"x":"$step.a"}`)),
		list(caseEdge("s", "a", "go"), caseEdge("s", "b", "other"), edge("a", "b"))))
	res, ev := run(t, context.Background(), f, `{"v":"stop"}`, &script{})
	require.Equal(t, flow.StatusFailed, res.Status)
	assert.Equal(t, `step "b": unresolvable reference "$step.a": step "a" has no output in this run (it has not succeeded: skipped, failed or not run yet)`, res.Failure.Message)
	assert.Equal(t, 0, res.Failure.Attempt)
	assert.Equal(t, flow.ReasonUnresolvedReference, res.Failure.Reason)
	assert.False(t, res.Failure.Retriable)
	assert.Equal(t, 1, ev.summary.FailedSteps)

	g := mustParse(t, doc(list(node("a", "act.x", `{}`),
		node("b", "act.x", `{"v":["$step.a.list.2","${steps.a.output.n.k}","$step.ghost.x"]}`)), list(edge("a", "b"))))
	for output, msg := range map[string]string{
		`{"list":[1,2]}`:               `unresolvable reference "$step.a.list.2": no element "list.2" in the output of step "a"`,
		`{"list":[1,2,3],"n":5}`:       `unresolvable reference "${steps.a.output.n.k}": field "n" of the output of step "a" is a number, not an object or array`,
		`{"list":[1,2,3]}`:             `unresolvable reference "${steps.a.output.n.k}": no field "n" in the output of step "a"`,
		`["not","an","object"]`:        `unresolvable reference "$step.a.list.2": no element "list" in the output of step "a"`,
		`{"list":[1,2,3],"n":{"k":1}}`: `unresolvable reference "$step.ghost.x": the flow has no step "ghost"`,
	} {
		s := &script{answer: func(_ context.Context, c flow.Call) flow.Outcome {
			return flow.Outcome{OK: true, Output: json.RawMessage(output)}
		}}
		res, _ := run(t, context.Background(), g, `{}`, s)
		require.Equal(t, flow.StatusFailed, res.Status, output)
		assert.Equal(t, `step "b": `+msg, res.Failure.Message, output)
	}
}

func TestCheckInputs(t *testing.T) {
	a := list(node("a", "act.x", `{}`))
	schema := `{"type":"object","required":["endpoint"],"properties":{"endpoint":{"type":"string","format":"uri"},"nodes":{"type":"array","items":{"type":"string"}}}}`
	f := mustParse(t, document(0, schema, a, `[]`))
	require.True(t, f.ValidatesInputs())
	assert.NoError(t, f.CheckInputs(json.RawMessage(`{"endpoint":"opc.tcp://plant:4840","nodes":["a"]}`)))
	for inputs, want := range map[string]struct{ pointer, msg string }{
		`{"endpoint":7}`:                         {"/endpoint", `inputs do not match the IR's inputs_schema at "/endpoint": got number, want string`},
		`{"endpoint":"opc.tcp://p","nodes":[1]}`: {"/nodes/0", `at "/nodes/0": got number, want string`},
		`{"endpoint":"not a uri"}`:               {"/endpoint", `is not valid uri`},
		``:                                       {"", `at "" (the top level): missing property 'endpoint'`},
	} {
		err := f.CheckInputs(json.RawMessage(inputs))
		require.Error(t, err, inputs)
		assert.ErrorIs(t, err, flow.ErrInputs)
		var fe *flow.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, want.pointer, fe.Pointer, inputs)
		assert.Contains(t, fe.Msg, want.msg, inputs)
	}
	// TraceMind's own inputs metadata, and {}, are passed through.
	for _, meta := range []string{`{"endpoint":{"type":"string"},"nodes":{"type":"list<string>"}}`, `{}`, `{"type":{"type":"string"}}`} {
		g := mustParse(t, document(0, meta, a, `[]`))
		assert.False(t, g.ValidatesInputs(), meta)
		assert.NoError(t, g.CheckInputs(json.RawMessage(`{"anything":[1]}`)), meta)
	}
	// A $ref outside the document is not loaded.
	_, err := flow.Parse([]byte(document(0, `{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"file:///etc/passwd"}`, a, `[]`)), known)
	assert.ErrorIs(t, err, flow.ErrSchema)
}

func TestErrorKinds(t *testing.T) {
	_, err := flow.Parse([]byte(`{"version":"0.9.0"}`), known)
	assert.True(t, errors.Is(err, flow.ErrVersion))
	assert.False(t, errors.Is(err, flow.ErrSchema))
	var fe *flow.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "0.9.0", fe.Received)
}

// ExampleFlow_Execute runs a two-step flow whose second step reads the first
// one's output, with a StepFunc that answers for the executors.
func ExampleFlow_Execute() {
	f, err := flow.Parse([]byte(`{
		"version": "1.0.0",
		"flow": {"name": "demo", "timeout_ms": 0},
		"constants": {"policyRef": "none", "policy": {}},
		"inputs_schema": {"text": {"type": "string"}},
		"graph": {
			"nodes": [
				{"id": "count", "type": "text.count", "with": {"text": "$input.text"}, "timeout_ms": 0, "retry": {"max": 0, "backoff_ms": 0}},
				{"id": "check", "type": "math.positive", "with": {"n": "$step.count.n"}, "timeout_ms": 0, "retry": {"max": 0, "backoff_ms": 0}}
			],
			"edges": [{"from": "count", "to": "check", "on": "success"}]
		},
		"metadata": {"generated_at": "2026-11-24T00:00:00Z", "source_file": "demo.wdl"}}`),
		func(kind string) bool { return kind == "text.count" || kind == "math.positive" })
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
			if e.Type == flow.EventStep && e.State != flow.StepStarted {
				fmt.Println(" ", e.StepID, e.State)
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

func TestExecuteUnresolvedRoots(t *testing.T) {
	f := mustParse(t, doc(list(node("a", "act.x", `{"k":"$constants.policy.missing"}`)), `[]`))
	res, _ := run(t, context.Background(), f, `{}`, &script{})
	require.Equal(t, flow.StatusFailed, res.Status)
	assert.Equal(t, `step "a": unresolvable reference "$constants.policy.missing": no field "policy.missing" in the IR's constants`, res.Failure.Message)
	g := mustParse(t, doc(list(node("a", "act.x", `{"k":"$input.list.x"}`)), `[]`))
	res, _ = run(t, context.Background(), g, `{"list":[1]}`, &script{})
	assert.Equal(t, `step "a": unresolvable reference "$input.list.x": no element "list.x" in the run's inputs`, res.Failure.Message)
}

func TestViolationsAreBounded(t *testing.T) {
	nodes := make([]string, 30)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"act.x"}`, i)
	}
	_, err := flow.Parse([]byte(doc(list(nodes...), `[]`)), known)
	var fe *flow.Error
	require.ErrorAs(t, err, &fe)
	require.Len(t, fe.Violations, 21)
	assert.Equal(t, flow.Violation{Pointer: "/graph/nodes/0", Message: "missing properties 'with', 'timeout_ms', 'retry'"}, fe.Violations[0])
	assert.Equal(t, flow.Violation{Message: "and 10 more"}, fe.Violations[20])
}
