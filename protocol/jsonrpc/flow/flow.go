// Package flow is Flow IR 1.0.0: it checks a flow (a graph of steps, each an
// action of the registry or a switch), resolves the references a step's
// input makes to the run's inputs and to earlier steps' outputs, and executes
// the graph one step at a time with retries and timeouts, reporting what
// happens as events.
//
// It runs no executor itself: each action step is handed to a StepFunc (the
// JSON-RPC runtime sends each through the governed pipeline).
//
// # The IR
//
//	{"version": "1.0.0",
//	 "flow":  {"name": "N", "timeout_ms": 0},
//	 "graph": {"nodes": [{"id": "a", "type": "math.sort", "with": {...},
//	                      "timeout_ms": 0, "retry": {"max": 0, "backoff_ms": 0}}],
//	           "edges": [{"from": "a", "to": "b", "on": "success"}]}}
//
// Only "version" and at least one node are required; unknown fields are
// schema errors, so that a misspelt "timeout" is not silently ignored. A
// node id is 1 to 64 of [A-Za-z0-9_-], starting with a letter or "_".
// An edge's "on" defaults to "success".
//
// # Order of execution
//
// Steps run one at a time, in a topological order of the graph (ties in the
// order of graph.nodes). A node without incoming edges always runs; a node
// with incoming edges runs when at least one of them was taken, and is
// skipped otherwise (a "skipped" step event). A "success" edge is taken when
// its source succeeds; a failed step (after its retries) fails the run.
//
// # Switch
//
// A node of type "switch" runs no executor. Its with is {"value": V}
// (usually a reference); its outgoing edges are "case:LABEL" (taken when the
// value matches LABEL) and at most one "default" (taken when no case
// matches). A string value matches the label equal to it; any other value
// matches the label equal to its canonical JSON text ("case:3",
// "case:true", "case:null"). When nothing matches and there is no default,
// no edge is taken. Its output is {"case": LABEL | "default" | null,
// "value": V}. It takes neither retry nor timeout_ms.
//
// # References
//
// A JSON string in with that is exactly "${inputs}", "${inputs.PATH}",
// "${steps.ID.output}" or "${steps.ID.output.PATH}" is replaced by that
// JSON value (of any type). PATH is keys separated by dots; a key that is a
// decimal number indexes an array. ID must be an ancestor of the node in the
// graph. Any other string holding "${" is a schema error (interpolation
// inside a longer string is not supported); write "$${" for a literal "${".
// A reference that cannot be resolved when the step is about to run (a
// missing field, a step that was skipped) fails the step without running it
// (attempt 0, not retriable).
//
// # Retries and timeouts
//
// A step that fails retriably is run again up to retry.max times (at most
// MaxRetries), waiting backoff_ms between attempts. Whether a failure is
// retriable is the StepFunc's call; a step that exceeds its timeout_ms is
// retriable. flow.timeout_ms caps the whole run, from its first step; when
// it elapses the step in flight is stopped and the run fails (not
// retriable).
package flow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Version is the Flow IR version this package reads.
const Version = "1.0.0"

// SwitchKind is the node type of a switch.
const SwitchKind = "switch"

// Limits on a flow.
const (
	MaxNodes     = 1000
	MaxEdges     = 10000
	MaxRetries   = 10
	MaxBackoffMs = 60000
)

// Errors of Parse, matched with errors.Is.
const (
	// ErrVersion: the IR's version is missing or not Version.
	ErrVersion = errorString("flow: unsupported IR version")
	// ErrUnknownStepKind: a node's type is neither an action nor "switch".
	ErrUnknownStepKind = errorString("flow: unknown step kind")
	// ErrSchema: the IR is malformed (missing or duplicate ids, edges to
	// unknown nodes, cycles, bad references, fields of the wrong type...).
	ErrSchema = errorString("flow: invalid flow")
)

type errorString string

func (e errorString) Error() string { return string(e) }

// Error is a flow Parse refused. It matches one of ErrVersion,
// ErrUnknownStepKind and ErrSchema.
type Error struct {
	// Kind is ErrVersion, ErrUnknownStepKind or ErrSchema.
	Kind error
	// StepID is the node concerned, when one is.
	StepID string
	// Type is the unknown node type (ErrUnknownStepKind only).
	Type string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func schemaError(stepID, format string, args ...any) *Error {
	return &Error{Kind: ErrSchema, StepID: stepID, Msg: fmt.Sprintf(format, args...)}
}

// Flow is a checked flow. It is immutable: execute it any number of times,
// concurrently.
type Flow struct {
	name    string
	timeout time.Duration
	// nodes in the order they execute.
	nodes []*node
}

type node struct {
	id, kind string
	with     *template
	timeout  time.Duration
	retries  int
	backoff  time.Duration
	out      []edge
	in       int // incoming edges
	pos      int // position in graph.nodes
}

// edge is an outgoing edge: on is "success", "default" or "case:LABEL".
type edge struct {
	to *node
	on string
}

// Name is the flow's name (may be empty).
func (f *Flow) Name() string { return f.name }

// Steps is the number of nodes.
func (f *Flow) Steps() int { return len(f.nodes) }

// Timeout is flow.timeout_ms (0: none set).
func (f *Flow) Timeout() time.Duration { return f.timeout }

type document struct {
	Version string     `json:"version"`
	Flow    flowHeader `json:"flow"`
	Graph   graphSpec  `json:"graph"`
}

type flowHeader struct {
	Name      string `json:"name"`
	TimeoutMs int64  `json:"timeout_ms"`
}

type graphSpec struct {
	Nodes []nodeSpec `json:"nodes"`
	Edges []edgeSpec `json:"edges"`
}

type nodeSpec struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	With      json.RawMessage `json:"with"`
	TimeoutMs int64           `json:"timeout_ms"`
	Retry     *retrySpec      `json:"retry"`
}

type retrySpec struct {
	Max       int   `json:"max"`
	BackoffMs int64 `json:"backoff_ms"`
}

type edgeSpec struct {
	From string `json:"from"`
	To   string `json:"to"`
	On   string `json:"on"`
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// Parse checks a Flow IR document. known reports whether a node type names
// an action; "switch" is always known.
//
// # Errors
//
// An *Error matching ErrVersion, then ErrSchema, then ErrUnknownStepKind,
// checked in that order.
func Parse(ir []byte, known func(kind string) bool) (*Flow, error) {
	if !isObject(ir) {
		return nil, schemaError("", "ir must be a JSON object")
	}
	var head struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(ir, &head); err != nil {
		return nil, schemaError("", "ir: %v", err)
	}
	var version string
	switch {
	case head.Version == nil || string(head.Version) == "null":
		return nil, &Error{Kind: ErrVersion, Msg: fmt.Sprintf("ir.version is missing; this runtime reads Flow IR %s", Version)}
	case json.Unmarshal(head.Version, &version) != nil:
		return nil, &Error{Kind: ErrVersion, Msg: fmt.Sprintf("ir.version must be the string %q, not %s", Version, head.Version)}
	case version != Version:
		return nil, &Error{Kind: ErrVersion, Msg: fmt.Sprintf("Flow IR version %q is not supported; this runtime reads %s", version, Version)}
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(ir))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, schemaError("", "ir: %v", err)
	}
	f, err := build(doc)
	if err != nil {
		return nil, err
	}
	for _, n := range f.nodes {
		if n.kind != SwitchKind && !known(n.kind) {
			return nil, &Error{Kind: ErrUnknownStepKind, StepID: n.id, Type: n.kind,
				Msg: fmt.Sprintf("node %q: step kind %q is not an action of this runtime", n.id, n.kind)}
		}
	}
	return f, nil
}

func isObject(b []byte) bool {
	s := strings.TrimLeft(string(b), " \t\r\n")
	return strings.HasPrefix(s, "{")
}

func build(doc document) (*Flow, error) {
	g := doc.Graph
	switch {
	case doc.Flow.TimeoutMs < 0:
		return nil, schemaError("", "flow.timeout_ms must not be negative")
	case len(g.Nodes) == 0:
		return nil, schemaError("", "graph.nodes is empty: a flow needs at least one node")
	case len(g.Nodes) > MaxNodes:
		return nil, schemaError("", "graph has %d nodes; at most %d are allowed", len(g.Nodes), MaxNodes)
	case len(g.Edges) > MaxEdges:
		return nil, schemaError("", "graph has %d edges; at most %d are allowed", len(g.Edges), MaxEdges)
	}
	byID := make(map[string]*node, len(g.Nodes))
	nodes := make([]*node, len(g.Nodes))
	for i, spec := range g.Nodes {
		n, err := buildNode(i, spec)
		if err != nil {
			return nil, err
		}
		if _, dup := byID[n.id]; dup {
			return nil, schemaError(n.id, "node id %q is used twice", n.id)
		}
		byID[n.id] = n
		nodes[i] = n
	}
	if err := link(g.Edges, byID); err != nil {
		return nil, err
	}
	order, err := topoSort(nodes)
	if err != nil {
		return nil, err
	}
	if err := checkReferences(order, byID); err != nil {
		return nil, err
	}
	return &Flow{name: doc.Flow.Name, timeout: time.Duration(doc.Flow.TimeoutMs) * time.Millisecond, nodes: order}, nil
}

func buildNode(i int, spec nodeSpec) (*node, error) {
	switch {
	case spec.ID == "":
		return nil, schemaError("", "graph.nodes[%d] has no id", i)
	case !nodeIDPattern.MatchString(spec.ID):
		return nil, schemaError(spec.ID, "node id %q must be 1 to 64 of [A-Za-z0-9_-], starting with a letter or _", spec.ID)
	case spec.Type == "":
		return nil, schemaError(spec.ID, "node %q has no type", spec.ID)
	case spec.TimeoutMs < 0:
		return nil, schemaError(spec.ID, "node %q: timeout_ms must not be negative", spec.ID)
	}
	n := &node{id: spec.ID, kind: spec.Type, pos: i, timeout: time.Duration(spec.TimeoutMs) * time.Millisecond}
	if r := spec.Retry; r != nil {
		switch {
		case r.Max < 0 || r.Max > MaxRetries:
			return nil, schemaError(spec.ID, "node %q: retry.max must be 0 to %d", spec.ID, MaxRetries)
		case r.BackoffMs < 0 || r.BackoffMs > MaxBackoffMs:
			return nil, schemaError(spec.ID, "node %q: retry.backoff_ms must be 0 to %d", spec.ID, MaxBackoffMs)
		}
		n.retries, n.backoff = r.Max, time.Duration(r.BackoffMs)*time.Millisecond
	}
	t, err := parseTemplate(spec.With)
	if err != nil {
		return nil, schemaError(spec.ID, "node %q: with: %v", spec.ID, err)
	}
	n.with = t
	if n.kind == SwitchKind {
		if spec.Retry != nil || spec.TimeoutMs != 0 {
			return nil, schemaError(spec.ID, "switch %q runs no executor: retry and timeout_ms do not apply", spec.ID)
		}
		if !t.isSwitchInput() {
			return nil, schemaError(spec.ID, `switch %q: with must be {"value": ...} and nothing else`, spec.ID)
		}
	}
	return n, nil
}

// link attaches the edges to their nodes, checking each against its source.
func link(edges []edgeSpec, byID map[string]*node) error {
	type key struct{ from, to, on string }
	seen := map[key]bool{}
	labels := map[*node]map[string]bool{}
	for i, e := range edges {
		from, ok := byID[e.From]
		if !ok {
			return schemaError("", "graph.edges[%d]: from %q is not a node", i, e.From)
		}
		to, ok := byID[e.To]
		if !ok {
			return schemaError("", "graph.edges[%d]: to %q is not a node", i, e.To)
		}
		on := e.On
		if on == "" {
			on = "success"
		}
		if from.kind == SwitchKind {
			if on != "default" && !strings.HasPrefix(on, "case:") {
				return schemaError(from.id, `graph.edges[%d]: an edge from switch %q is "case:LABEL" or "default", not %q`, i, from.id, on)
			}
			if labels[from] == nil {
				labels[from] = map[string]bool{}
			}
			if labels[from][on] {
				return schemaError(from.id, "graph.edges[%d]: switch %q has two %q edges", i, from.id, on)
			}
			labels[from][on] = true
		} else if on != "success" {
			return schemaError(from.id, `graph.edges[%d]: an edge from step %q is "success", not %q (only a switch has cases)`, i, from.id, on)
		}
		k := key{from.id, to.id, on}
		if seen[k] {
			return schemaError(from.id, "graph.edges[%d] repeats the edge %s -> %s", i, from.id, to.id)
		}
		seen[k] = true
		from.out = append(from.out, edge{to: to, on: on})
		to.in++
	}
	for _, n := range byID {
		if n.kind == SwitchKind && len(n.out) == 0 {
			return schemaError(n.id, "switch %q has no outgoing edge", n.id)
		}
	}
	return nil
}

// topoSort orders the nodes so that every edge points forward, taking the
// earliest declared node among those ready; a cycle is a schema error.
func topoSort(nodes []*node) ([]*node, error) {
	pending := make(map[*node]int, len(nodes))
	for _, n := range nodes {
		pending[n] = n.in
	}
	order := make([]*node, 0, len(nodes))
	done := make([]bool, len(nodes))
	for len(order) < len(nodes) {
		var next *node
		for _, n := range nodes {
			if !done[n.pos] && pending[n] == 0 {
				next = n
				break
			}
		}
		if next == nil {
			var cycle []string
			for _, n := range nodes {
				if !done[n.pos] {
					cycle = append(cycle, n.id)
				}
			}
			return nil, schemaError(cycle[0], "the graph has a cycle among nodes %s", strings.Join(cycle, ", "))
		}
		done[next.pos] = true
		order = append(order, next)
		for _, e := range next.out {
			pending[e.to]--
		}
	}
	return order, nil
}

// checkReferences insists that a node refers only to steps that run before
// it on every path: its ancestors.
func checkReferences(order []*node, byID map[string]*node) error {
	ancestors := make(map[*node]map[*node]bool, len(order))
	for _, n := range order {
		if ancestors[n] == nil {
			ancestors[n] = map[*node]bool{}
		}
		for _, e := range n.out {
			a := ancestors[e.to]
			if a == nil {
				a = map[*node]bool{}
				ancestors[e.to] = a
			}
			a[n] = true
			for p := range ancestors[n] {
				a[p] = true
			}
		}
	}
	for _, n := range order {
		for _, r := range n.with.refs {
			if r.step == "" {
				continue
			}
			target, ok := byID[r.step]
			switch {
			case !ok:
				return schemaError(n.id, "node %q: %s refers to step %q, which is not a node", n.id, r.text, r.step)
			case target == n:
				return schemaError(n.id, "node %q: %s refers to the node itself", n.id, r.text)
			case !ancestors[n][target]:
				return schemaError(n.id, "node %q: %s refers to step %q, which does not run before it (it is not an ancestor in the graph)", n.id, r.text, r.step)
			}
		}
	}
	return nil
}
