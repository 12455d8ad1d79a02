package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
)

// template is a node's with: a JSON value in which some strings are
// references, resolved when the step is about to run.
type template struct {
	// tree is the decoded value: nil, bool, json.Number, string, []any,
	// map[string]any, or *reference.
	tree any
}

type root int

const (
	rootInputs root = iota
	rootStep
	rootConstants
)

// reference is a string naming a value of the run (see the package doc).
type reference struct {
	// text is the string as written.
	text string
	root root
	// step is the referenced node's id (rootStep).
	step string
	path []string
}

var braced = regexp.MustCompile(`^\$\{([^{}]*)\}$`)

// prefixes of the $-forms, by root; the compiler's forms first.
var prefixes = []struct {
	prefix string
	root   root
}{
	{"$input", rootInputs},
	{"$.inputs", rootInputs},
	{"$step", rootStep},
	{"$.vars", rootStep},
	{"$constants", rootConstants},
	{"$.constants", rootConstants},
}

// parseTemplate compiles a node's with (the schema made it an object). ids
// are the flow's node ids, for references to steps whose id has dots.
// at is the with's JSON pointer; a malformed reference is an *Error there.
func parseTemplate(with any, at string, ids []string) (*template, error) {
	tree, err := compileValue(with, at, ids)
	if err != nil {
		return nil, err
	}
	return &template{tree: tree}, nil
}

func compileValue(v any, at string, ids []string) (any, error) {
	switch v := v.(type) {
	case string:
		r, literal, err := parseString(v, at, ids)
		if err != nil {
			return nil, err
		}
		if r != nil {
			return r, nil
		}
		return literal, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := compileValue(e, fmt.Sprintf("%s/%d", at, i), ids)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			c, err := compileValue(v[k], at+"/"+escapePointer(k), ids)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return v, nil
}

// parseString reads a string of a with: a reference (r), or the literal
// it stands for.
func parseString(s, at string, ids []string) (r *reference, literal string, err *Error) {
	if strings.HasPrefix(s, "$$") {
		return nil, s[1:], nil
	}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "$") {
		return nil, s, nil
	}
	malformed := func(format string, args ...any) (*reference, string, *Error) {
		return nil, "", schemaError(at, "", "%q is a malformed reference: %s", s, fmt.Sprintf(format, args...))
	}
	if m := braced.FindStringSubmatch(t); m != nil {
		parts := strings.Split(m[1], ".")
		if slicesContainEmpty(parts) {
			return malformed("a path segment is empty")
		}
		switch {
		case parts[0] == "inputs":
			return &reference{text: s, root: rootInputs, path: parts[1:]}, "", nil
		case parts[0] == "constants":
			return &reference{text: s, root: rootConstants, path: parts[1:]}, "", nil
		case parts[0] == "steps":
			// ${steps.ID.output.PATH}: ID is the longest node id before an
			// "output" segment.
			for k := len(parts) - 1; k >= 2; k-- {
				if parts[k] == "output" && isID(strings.Join(parts[1:k], "."), ids) {
					return &reference{text: s, root: rootStep, step: strings.Join(parts[1:k], "."), path: parts[k+1:]}, "", nil
				}
			}
			if len(parts) >= 3 && parts[2] == "output" {
				return &reference{text: s, root: rootStep, step: parts[1], path: parts[3:]}, "", nil
			}
			return malformed("a step's output is ${steps.ID.output.PATH}")
		}
		// Another ${NAME} is no reference of ours: a placeholder the step
		// itself may read, kept as written.
		return nil, s, nil
	}
	for _, p := range prefixes {
		if t != p.prefix && !strings.HasPrefix(t, p.prefix+".") {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(t, p.prefix), ".")
		var parts []string
		if rest != "" || t != p.prefix {
			parts = strings.Split(rest, ".")
			if slicesContainEmpty(parts) {
				return malformed("a path segment is empty")
			}
		}
		if p.root != rootStep {
			return &reference{text: s, root: p.root, path: parts}, "", nil
		}
		if len(parts) == 0 {
			return malformed("%s needs a step id, as in %s.ID.PATH", p.prefix, p.prefix)
		}
		id, path := splitStep(parts, ids)
		return &reference{text: s, root: rootStep, step: id, path: path}, "", nil
	}
	// Any other string starting with "$" ("$5", "$inputs") is literal, as
	// in TraceMind's runtime.
	return nil, s, nil
}

// splitStep splits ID.PATH: ID is the longest node id the segments start
// with, else the first segment (which then names no node: the step fails
// when it runs).
func splitStep(parts []string, ids []string) (string, []string) {
	for k := len(parts); k >= 1; k-- {
		if isID(strings.Join(parts[:k], "."), ids) {
			return strings.Join(parts[:k], "."), parts[k:]
		}
	}
	return parts[0], parts[1:]
}

func isID(id string, ids []string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func slicesContainEmpty(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// scope is what references resolve against during a run.
type scope struct {
	inputs    any
	constants any
	// outputs are the outputs of the steps that succeeded so far.
	outputs map[string]any
	// nodes are the flow's node ids.
	nodes map[string]bool
}

// errUnresolved is wrapped by resolution failures.
var errUnresolved = errors.New("unresolvable reference")

// resolve returns the template's value with every reference replaced.
func (t *template) resolve(s *scope) (any, error) {
	return substitute(t.tree, s)
}

func substitute(v any, s *scope) (any, error) {
	switch v := v.(type) {
	case *reference:
		return v.lookup(s)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := substitute(e, s)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		// In key order, so that the first unresolvable reference, and so
		// the step's error, is the same on every run.
		for _, k := range sortedKeys(v) {
			e := v[k]
			r, err := substitute(e, s)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

func (r *reference) lookup(s *scope) (any, error) {
	var v any
	var where string
	switch r.root {
	case rootInputs:
		v, where = s.inputs, "the run's inputs"
	case rootConstants:
		v, where = s.constants, "the IR's constants"
	case rootStep:
		out, ok := s.outputs[r.step]
		switch {
		case !s.nodes[r.step]:
			return nil, fmt.Errorf("%w %q: the flow has no step %q", errUnresolved, r.text, r.step)
		case !ok:
			return nil, fmt.Errorf("%w %q: step %q has no output in this run (it has not succeeded: skipped, failed or not run yet)", errUnresolved, r.text, r.step)
		}
		v, where = out, fmt.Sprintf("the output of step %q", r.step)
	}
	for i, key := range r.path {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("%w %q: no field %q in %s", errUnresolved, r.text, strings.Join(r.path[:i+1], "."), where)
			}
			v = next
		case []any:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 || idx >= len(c) || strconv.Itoa(idx) != key {
				return nil, fmt.Errorf("%w %q: no element %q in %s", errUnresolved, r.text, strings.Join(r.path[:i+1], "."), where)
			}
			v = c[idx]
		default:
			at := where
			if i > 0 {
				at = fmt.Sprintf("field %q of %s", strings.Join(r.path[:i], "."), where)
			}
			return nil, fmt.Errorf("%w %q: %s is %s, not an object or array", errUnresolved, r.text, at, jsonType(c))
		}
	}
	return v, nil
}

// encode writes a resolved value as JSON, without HTML escaping.
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// caseLabel is the label a switch key or an edge's case stands for: a
// string as it is, any other value as its canonical JSON text.
func caseLabel(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, err := encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	c, err := audit.Canonicalize(raw)
	if err != nil {
		return string(raw)
	}
	return string(c.Bytes)
}
