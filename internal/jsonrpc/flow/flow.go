// Package flow is TraceMind's Flow IR 1.0.0: it checks an IR document
// (against the IR's own JSON Schema, then the spec's rules the schema cannot
// express), resolves the references a step's with makes to the run's inputs,
// the IR's constants and earlier steps' outputs, and executes the graph one
// step at a time with retries, timeouts, failure edges and switches,
// reporting what happens as REP events.
//
// It runs no executor itself: each action step is handed to a StepFunc (the
// JSON-RPC runtime sends each through the governed pipeline).
//
// # The IR
//
// The document is checked, in this order:
//
//  1. ir is a JSON object whose "version" is "1.0.0" (ErrVersion: REP wants
//     the version validated before anything else);
//  2. it conforms to schema.json, the spec's JSON Schema (draft 2020-12,
//     formats asserted, so metadata.generated_at must be a date-time),
//     copied byte for byte from TraceMind's spec (MIT, see schema.LICENSE);
//  3. the spec's rules the schema cannot express (spec §6): node ids are
//     unique, every edge's from and to name a node, metadata.generated_at is
//     a UTC timestamp; and what this runtime validates in a node's with
//     (spec §5.5.1: "validated by runtime"): a switch's key_from, cases and
//     default, and references that are malformed. The graph must have no
//     cycle. A JSON Schema inputs_schema must compile;
//  4. every node's type is a step kind of the runtime (ErrUnknownStepKind).
//
// Failures in 2 and 3 are ErrSchema, each naming the JSON pointer of the
// offending value. Unknown properties are ignored wherever the schema allows
// them (nodes, edges, metadata, the document itself).
//
// # Order of execution
//
// Steps run one at a time, in a topological order of the graph (ties in the
// order of graph.nodes). A node without incoming edges always runs; a node
// with incoming edges runs when at least one of them was taken, and is
// skipped otherwise (a log event says so). A step's "success" edges are taken
// when it succeeds; its "failure" edges when it fails for good (after its
// retries), and the run then goes on. A step that fails for good without a
// failure edge fails the run.
//
// # Switch
//
// A node of type "switch" runs no executor. Its with is, as TraceMind's
// compiler emits it, {"key_from": REF, "cases": {VALUE: NODE, ...},
// "default": VALUE}. The key is the value REF resolves to; its label is the
// key itself when it is a string, else its canonical JSON ("3", "true").
// The switch chooses the label when it is a case (a key of cases, or the
// case of one of its edges), else default. It then takes its outgoing
// success edges whose "case" is the chosen label, and those without a case.
// Each cases entry must name a node the switch has an edge to with that
// case. Its output is {"case": LABEL or null, "value": KEY}. Its timeout_ms
// and retry do not apply (the compiler emits zeros).
//
// # References
//
// A string in a step's with (and a switch's key_from) that is one of these,
// whole (surrounding spaces ignored, as TraceMind's runtime does), is
// replaced by the JSON value it names, of any type:
//
//	$input.PATH, $.inputs.PATH, ${inputs.PATH}         the run's inputs
//	$step.ID.PATH, $.vars.ID.PATH, ${steps.ID.output.PATH}  a step's output
//	$constants.PATH, $.constants.PATH, ${constants.PATH}    the IR's constants
//
// PATH is optional (without it, the whole value) and is keys separated by
// dots; a key that is a decimal number indexes an array. An ID with dots is
// the longest node id the reference starts with. Any other string is
// literal; a string that starts with "$$" is literal without its first "$"
// (so "$$input.x" is the text "$input.x"). A reference that cannot be
// resolved when the step is about to run (a missing field, a step that did
// not succeed, a node that does not exist) fails the step without running it
// (attempt 0), naming the reference.
//
// A step whose type starts with "policy." also receives the IR's constants
// (read-only, spec §9) as the member "constants" of its input, unless its
// with sets that member: TraceMind's compiler bakes the policy those steps
// evaluate into constants.policy (spec §8) and gives them only their values.
//
// # Retries and timeouts
//
// A step that fails retriably is run again up to retry.max times, waiting
// backoff_ms between attempts. Whether a failure is retriable is the
// StepFunc's call; a step that exceeds its timeout_ms is retriable.
// flow.timeout_ms (0: none) caps the whole run, from its first step; when it
// elapses the step in flight is stopped and the run fails.
package flow

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// Version is the Flow IR version this package reads.
const Version = "1.0.0"

// SwitchKind is the node type of a switch.
const SwitchKind = "switch"

// ConstantsMember is the member of a "policy." step's input that holds the
// IR's constants.
const ConstantsMember = "constants"

// Errors of Parse and CheckInputs, matched with errors.Is.
const (
	// ErrVersion: the IR's version is missing or not Version.
	ErrVersion = sentinel.Error("flow: unsupported IR version")
	// ErrUnknownStepKind: a node's type is neither a step kind of the
	// runtime nor "switch".
	ErrUnknownStepKind = sentinel.Error("flow: unknown step kind")
	// ErrSchema: the IR is not a valid Flow IR document.
	ErrSchema = sentinel.Error("flow: invalid flow")
	// ErrInputs: the inputs do not match the IR's inputs_schema.
	ErrInputs = sentinel.Error("flow: inputs do not match inputs_schema")
)

// Error is a document Parse refused, or inputs CheckInputs refused. It
// matches one of ErrVersion, ErrUnknownStepKind, ErrSchema and ErrInputs.
type Error struct {
	// Kind is ErrVersion, ErrUnknownStepKind, ErrSchema or ErrInputs.
	Kind error
	// Pointer is the JSON pointer (RFC 6901) of the offending value: in
	// the IR, or, for ErrInputs, in the inputs.
	Pointer string
	// StepID is the node concerned, when one is.
	StepID string
	// Type is the unknown node type (ErrUnknownStepKind only).
	Type string
	// Received is the IR's version as given (ErrVersion only; nil when
	// missing).
	Received any
	// Violations lists every violation of a JSON Schema (the IR's or
	// inputs_schema), the one in Msg first.
	Violations []Violation
	Msg        string
}

// Violation is one failed assertion of a JSON Schema.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// schemaError is an ErrSchema whose message ends naming the pointer.
func schemaError(pointer, stepID, format string, args ...any) *Error {
	return &Error{Kind: ErrSchema, Pointer: pointer, StepID: stepID, Msg: atPointer(fmt.Sprintf(format, args...), pointer)}
}

func atPointer(msg, pointer string) string {
	if pointer == "" {
		return msg
	}
	return fmt.Sprintf("%s (at %q)", msg, pointer)
}

// Flow is a checked flow. It is immutable: execute it any number of times,
// concurrently.
type Flow struct {
	name    string
	timeout time.Duration
	// nodes in the order they execute.
	nodes []*node
	// constants is the IR's constants, decoded (read-only).
	constants any
	// metadata is the IR's metadata as given.
	metadata json.RawMessage
	// inputs validates the run's inputs; nil when inputs_schema is not a
	// JSON Schema (it is then passed through, spec §5.4).
	inputs *jsonschema.Schema
}

type node struct {
	id, kind string
	// with is an action's input template; nil for a switch.
	with    *template
	sw      *switchSpec
	timeout time.Duration
	retries int
	backoff time.Duration
	out     []edge
	in      []*node // sources of the incoming edges
	pos     int     // position in graph.nodes
}

// edge is an outgoing edge.
type edge struct {
	to      *node
	failure bool // on "failure"; else "success"
	// label is the edge's case (from a switch); hasLabel says whether it
	// has one.
	label    string
	hasLabel bool
	index    int // in graph.edges
}

// switchSpec is a switch node's with.
type switchSpec struct {
	key *reference
	// labels are the known cases: the keys of cases and the edges' cases.
	labels     map[string]bool
	def        string
	hasDefault bool
}

// Name is flow.name.
func (f *Flow) Name() string { return f.name }

// Steps is the number of nodes.
func (f *Flow) Steps() int { return len(f.nodes) }

// Timeout is flow.timeout_ms (0: none set).
func (f *Flow) Timeout() time.Duration { return f.timeout }

// Metadata is the IR's metadata, as given.
func (f *Flow) Metadata() json.RawMessage { return f.metadata }

// ValidatesInputs reports whether inputs_schema is a JSON Schema that
// CheckInputs enforces (else it is structured metadata, passed through).
func (f *Flow) ValidatesInputs() bool { return f.inputs != nil }

// integer is a JSON Schema integer: a number with no fractional part, which
// may be written 1.0 or 1e3.
type integer int64

func (i *integer) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return fmt.Errorf("%s is not an integer", b)
	}
	*i = integer(v)
	return nil
}

// document is what execution needs of an IR the schema accepted, typed;
// with, constants and inputs_schema are read from the decoded tree.
type document struct {
	Flow struct {
		Name      string  `json:"name"`
		TimeoutMs integer `json:"timeout_ms"`
	} `json:"flow"`
	Graph struct {
		Nodes []nodeSpec `json:"nodes"`
		Edges []edgeSpec `json:"edges"`
	} `json:"graph"`
	Metadata struct {
		GeneratedAt string `json:"generated_at"`
	} `json:"metadata"`
}

type nodeSpec struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	TimeoutMs integer `json:"timeout_ms"`
	Retry     struct {
		Max       integer `json:"max"`
		BackoffMs integer `json:"backoff_ms"`
	} `json:"retry"`
}

type edgeSpec struct {
	From string          `json:"from"`
	To   string          `json:"to"`
	On   string          `json:"on"`
	Case json.RawMessage `json:"case"`
}

// Parse checks a Flow IR document. known reports whether a node type is a
// step kind of the runtime; "switch" is always known.
//
// # Errors
//
// An *Error matching ErrVersion, then ErrSchema, then ErrUnknownStepKind,
// checked in that order.
func Parse(ir []byte, known func(kind string) bool) (*Flow, error) {
	v, err := decodeJSON(ir)
	if err != nil {
		return nil, schemaError("", "", "ir is not JSON: %v", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError("", "", "ir must be a JSON object (a Flow IR %s document), not %s", Version, jsonType(v))
	}
	if err := checkVersion(top); err != nil {
		return nil, err
	}
	if err := validateIR(v); err != nil {
		return nil, err
	}
	var doc document
	if err := json.Unmarshal(ir, &doc); err != nil {
		// The schema admitted it: only a number the schema calls an
		// integer and Go cannot hold gets here.
		return nil, schemaError("", "", "ir: %v", err)
	}
	f, err := build(doc, top)
	if err != nil {
		return nil, err
	}
	// In declaration order, so that the first unknown kind is reported.
	declared := slices.SortedFunc(slices.Values(f.nodes), func(a, b *node) int { return a.pos - b.pos })
	for _, n := range declared {
		if n.kind != SwitchKind && !known(n.kind) {
			at := fmt.Sprintf("/graph/nodes/%d/type", n.pos)
			return nil, &Error{Kind: ErrUnknownStepKind, Pointer: at, StepID: n.id, Type: n.kind,
				Msg: atPointer(fmt.Sprintf("node %q: step kind %q is not supported by this runtime", n.id, n.kind), at)}
		}
	}
	return f, nil
}

func checkVersion(top map[string]any) *Error {
	v, ok := top["version"]
	e := &Error{Kind: ErrVersion, Pointer: "/version", Received: v}
	switch s, isString := v.(string); {
	case !ok || v == nil:
		e.Msg = fmt.Sprintf("ir.version is missing; this runtime reads Flow IR %s", Version)
	case !isString:
		e.Msg = fmt.Sprintf("ir.version must be the string %q, not %s", Version, compact(v))
	case s != Version:
		e.Msg = fmt.Sprintf("Flow IR version %q is not supported; this runtime reads %s", s, Version)
	default:
		return nil
	}
	return e
}

func build(doc document, top map[string]any) (*Flow, error) {
	f := &Flow{
		name:      doc.Flow.Name,
		timeout:   time.Duration(doc.Flow.TimeoutMs) * time.Millisecond,
		constants: top["constants"],
	}
	if raw, err := json.Marshal(top["metadata"]); err == nil {
		f.metadata = raw
	}
	if err := checkGeneratedAt(doc.Metadata.GeneratedAt); err != nil {
		return nil, err
	}
	g := doc.Graph
	byID := make(map[string]*node, len(g.Nodes))
	ids := make([]string, 0, len(g.Nodes))
	nodes := make([]*node, len(g.Nodes))
	for i, spec := range g.Nodes {
		if first, dup := byID[spec.ID]; dup {
			return nil, schemaError(fmt.Sprintf("/graph/nodes/%d/id", i), spec.ID,
				"node id %q is used twice (graph.nodes[%d] and graph.nodes[%d]); node ids must be unique", spec.ID, first.pos, i)
		}
		n := &node{id: spec.ID, kind: spec.Type, pos: i,
			timeout: time.Duration(spec.TimeoutMs) * time.Millisecond,
			retries: int(spec.Retry.Max),
			backoff: time.Duration(spec.Retry.BackoffMs) * time.Millisecond}
		byID[n.id] = n
		ids = append(ids, n.id)
		nodes[i] = n
	}
	if err := link(g.Edges, byID); err != nil {
		return nil, err
	}
	rawNodes := top["graph"].(map[string]any)["nodes"].([]any)
	for _, n := range nodes {
		with := rawNodes[n.pos].(map[string]any)["with"]
		at := fmt.Sprintf("/graph/nodes/%d/with", n.pos)
		var err error
		if n.kind == SwitchKind {
			n.sw, err = parseSwitch(n, with, at, byID, ids)
		} else {
			n.with, err = parseTemplate(with, at, ids)
			if e, ok := err.(*Error); ok {
				e.StepID, e.Msg = n.id, fmt.Sprintf("node %q: %s", n.id, e.Msg)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	order, err := topoSort(nodes)
	if err != nil {
		return nil, err
	}
	f.nodes = order
	if f.inputs, err = compileInputsSchema(top["inputs_schema"]); err != nil {
		return nil, err
	}
	return f, nil
}

// checkGeneratedAt enforces spec §6.7: "must parse as RFC 3339 UTC
// timestamp". The schema's date-time format admits any offset.
func checkGeneratedAt(s string) error {
	const at = "/metadata/generated_at"
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return schemaError(at, "", "metadata.generated_at %q is not an RFC 3339 timestamp: %v", s, err)
	}
	if _, offset := t.Zone(); offset != 0 {
		return schemaError(at, "", "metadata.generated_at %q must be a UTC timestamp (ending in Z or +00:00)", s)
	}
	return nil
}

// link attaches the edges to their nodes.
func link(edges []edgeSpec, byID map[string]*node) error {
	for i, e := range edges {
		from, ok := byID[e.From]
		if !ok {
			return schemaError(fmt.Sprintf("/graph/edges/%d/from", i), "", "graph.edges[%d]: from %q is not a node id", i, e.From)
		}
		to, ok := byID[e.To]
		if !ok {
			return schemaError(fmt.Sprintf("/graph/edges/%d/to", i), "", "graph.edges[%d]: to %q is not a node id", i, e.To)
		}
		out := edge{to: to, failure: e.On == "failure", index: i}
		// A case means something on a switch's success edges only; on any
		// other edge it is an unknown property, ignored.
		if from.kind == SwitchKind && !out.failure && len(e.Case) > 0 && string(e.Case) != "null" {
			c, err := decodeJSON(e.Case)
			if err != nil {
				return schemaError(fmt.Sprintf("/graph/edges/%d/case", i), from.id, "graph.edges[%d].case: %v", i, err)
			}
			out.label, out.hasLabel = caseLabel(c), true
		}
		from.out = append(from.out, out)
		to.in = append(to.in, from)
	}
	return nil
}

func parseSwitch(n *node, with any, at string, byID map[string]*node, ids []string) (*switchSpec, error) {
	w := with.(map[string]any)
	fail := func(pointer, format string, args ...any) (*switchSpec, error) {
		return nil, schemaError(pointer, n.id, "switch %q: %s", n.id, fmt.Sprintf(format, args...))
	}
	keyFrom, ok := w["key_from"].(string)
	if !ok {
		return fail(at+"/key_from", `with.key_from must be a reference such as "$step.ID.PATH" or "$input.PATH", not %s`, describe(w["key_from"]))
	}
	r, literal, err := parseString(keyFrom, at+"/key_from", ids)
	if err != nil {
		err.StepID, err.Msg = n.id, fmt.Sprintf("switch %q: %s", n.id, err.Msg)
		return nil, err
	}
	if r == nil {
		return fail(at+"/key_from", `with.key_from %q is not a reference: it must be one such as "$step.ID.PATH", "$.vars.ID.PATH" or "$input.PATH"`, literal)
	}
	sw := &switchSpec{key: r, labels: map[string]bool{}}
	targets := map[string]map[string]bool{} // label -> nodes the edges with that case reach
	for _, e := range n.out {
		if e.hasLabel {
			sw.labels[e.label] = true
			if targets[e.label] == nil {
				targets[e.label] = map[string]bool{}
			}
			targets[e.label][e.to.id] = true
		}
	}
	if c, present := w["cases"]; present {
		cases, ok := c.(map[string]any)
		if !ok {
			return fail(at+"/cases", "with.cases must be an object {VALUE: NODE_ID}, not %s", describe(c))
		}
		for _, label := range sortedKeys(cases) {
			p := at + "/cases/" + escapePointer(label)
			target, ok := cases[label].(string)
			switch {
			case !ok:
				return fail(p, "with.cases[%q] must be a node id, not %s", label, describe(cases[label]))
			case byID[target] == nil:
				return fail(p, "with.cases[%q] names %q, which is not a node id", label, target)
			case !targets[label][target]:
				return fail(p, `with.cases[%q] sends the case to %q, but graph.edges has no edge from %q to %q with "case": %q`, label, target, n.id, target, label)
			}
			sw.labels[label] = true
		}
	}
	if d, present := w["default"]; present && d != nil {
		def, ok := d.(string)
		if !ok {
			return fail(at+"/default", "with.default must be a case value (a string), not %s", describe(d))
		}
		sw.def, sw.hasDefault = def, true
	}
	return sw, nil
}

// topoSort orders the nodes so that every edge points forward, taking the
// earliest declared node among those ready; a cycle is a schema error.
func topoSort(nodes []*node) ([]*node, error) {
	pending := make([]int, len(nodes))
	ready := &byPos{}
	for _, n := range nodes {
		pending[n.pos] = len(n.in)
		if len(n.in) == 0 {
			heap.Push(ready, n)
		}
	}
	order := make([]*node, 0, len(nodes))
	for ready.Len() > 0 {
		n := heap.Pop(ready).(*node)
		order = append(order, n)
		for _, e := range n.out {
			if pending[e.to.pos]--; pending[e.to.pos] == 0 {
				heap.Push(ready, e.to)
			}
		}
	}
	if len(order) == len(nodes) {
		return order, nil
	}
	return nil, cycleError(nodes, pending)
}

// cycleError names a cycle among the nodes left pending: each of them has a
// pending predecessor, so walking predecessors from one of them must come
// back to a node already seen.
func cycleError(nodes []*node, pending []int) *Error {
	var start *node
	for _, n := range nodes {
		if pending[n.pos] > 0 {
			start = n
			break
		}
	}
	seen := map[*node]int{}
	var walk []*node
	n := start
	for {
		if i, ok := seen[n]; ok {
			walk = walk[i:]
			break
		}
		seen[n] = len(walk)
		walk = append(walk, n)
		for _, p := range n.in {
			if pending[p.pos] > 0 {
				n = p
				break
			}
		}
	}
	// walk follows edges backwards: reverse it into the cycle's order, and
	// start it at its earliest declared node.
	cycle := make([]*node, 0, len(walk))
	for i := len(walk) - 1; i >= 0; i-- {
		cycle = append(cycle, walk[i])
	}
	first := 0
	for i, n := range cycle {
		if n.pos < cycle[first].pos {
			first = i
		}
	}
	cycle = append(cycle[first:], cycle[:first]...)
	names := make([]string, 0, len(cycle)+1)
	for _, n := range cycle {
		names = append(names, n.id)
	}
	names = append(names, names[0])
	// The pointer is the cycle's first edge; a self-loop is its own.
	from, to := cycle[0], cycle[0]
	if len(cycle) > 1 {
		to = cycle[1]
	}
	index := 0
	for _, e := range from.out {
		if e.to == to {
			index = e.index
			break
		}
	}
	return schemaError(fmt.Sprintf("/graph/edges/%d", index), from.id,
		"the graph has a cycle: %s; a flow is a directed acyclic graph", strings.Join(names, " -> "))
}

// byPos is a min-heap of nodes by position in graph.nodes.
type byPos []*node

func (h byPos) Len() int           { return len(h) }
func (h byPos) Less(i, j int) bool { return h[i].pos < h[j].pos }
func (h byPos) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byPos) Push(x any)        { *h = append(*h, x.(*node)) }
func (h *byPos) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}

// decodeJSON decodes one JSON value, numbers as json.Number, refusing
// anything after it.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// describe is a value for an error message: its JSON, or its type when
// long.
func describe(v any) string {
	if v == nil {
		return "missing"
	}
	s := compact(v)
	if len(s) > 40 {
		return jsonType(v)
	}
	return s
}

func compact(v any) string {
	b, err := encode(v)
	if err != nil {
		return jsonType(v)
	}
	return string(b)
}

// escapePointer escapes a key as a JSON pointer token (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
