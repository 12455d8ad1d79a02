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
	refs []*reference
}

// reference is a string "${inputs...}" or "${steps.ID.output...}".
type reference struct {
	text string
	// step is the referenced step's id; empty for inputs.
	step string
	path []string
}

var referencePattern = regexp.MustCompile(`^\$\{([^{}]*)\}$`)

// parseTemplate reads a node's with. An absent or null with is {}. The
// value must be canonical JSON (RFC 8785's domain: no duplicate keys, no
// integers beyond 2^53): the pipeline would refuse it anyway, and this way
// the refusal comes before the run.
func parseTemplate(raw json.RawMessage) (*template, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return &template{tree: map[string]any{}}, nil
	}
	if _, err := audit.Canonicalize(raw); err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	t := &template{}
	tree, err := t.compile(v)
	if err != nil {
		return nil, err
	}
	t.tree = tree
	return t, nil
}

func (t *template) compile(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return t.compileString(v)
	case []any:
		for i, e := range v {
			c, err := t.compile(e)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
	case map[string]any:
		for k, e := range v {
			c, err := t.compile(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
	}
	return v, nil
}

func (t *template) compileString(s string) (any, error) {
	if m := referencePattern.FindStringSubmatch(s); m != nil {
		r, err := parseReference(s, m[1])
		if err != nil {
			return nil, err
		}
		t.refs = append(t.refs, r)
		return r, nil
	}
	// Outside a reference, "$${" is a literal "${" and a lone "${" is an
	// error: a reference must be the whole string.
	var out strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			out.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			return nil, fmt.Errorf("%q: a reference must be the whole string, as in \"${inputs.x}\" (write $${ for a literal ${)", s)
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	return out.String(), nil
}

func parseReference(text, inner string) (*reference, error) {
	parts := strings.Split(inner, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%s: empty path segment", text)
		}
	}
	switch {
	case parts[0] == "inputs":
		return &reference{text: text, path: parts[1:]}, nil
	case parts[0] == "steps" && len(parts) >= 3 && parts[2] == "output":
		return &reference{text: text, step: parts[1], path: parts[3:]}, nil
	}
	return nil, fmt.Errorf(`%s: a reference is ${inputs.PATH} or ${steps.ID.output.PATH}`, text)
}

// isSwitchInput reports whether the template is {"value": V}.
func (t *template) isSwitchInput() bool {
	m, ok := t.tree.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	_, ok = m["value"]
	return ok
}

// scope is what references resolve against during a run.
type scope struct {
	inputs any
	// outputs are the outputs of the steps that succeeded so far.
	outputs map[string]json.RawMessage
}

// errUnresolved is wrapped by resolution failures.
var errUnresolved = errors.New("unresolved reference")

// resolve returns the template's value with every reference replaced.
func (t *template) resolve(s *scope) (any, error) {
	return t.substitute(t.tree, s)
}

func (t *template) substitute(v any, s *scope) (any, error) {
	switch v := v.(type) {
	case *reference:
		return v.lookup(s)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := t.substitute(e, s)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := t.substitute(e, s)
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
	root, where := s.inputs, "the run's inputs"
	if r.step != "" {
		raw, ok := s.outputs[r.step]
		if !ok {
			return nil, fmt.Errorf("%w: %s: step %q has not succeeded in this run (it was skipped)", errUnresolved, r.text, r.step)
		}
		v, err := decode(raw)
		if err != nil {
			return nil, err
		}
		root, where = v, fmt.Sprintf("the output of step %q", r.step)
	}
	v := root
	for i, key := range r.path {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("%w: %s: no field %q in %s", errUnresolved, r.text, strings.Join(r.path[:i+1], "."), where)
			}
			v = next
		case []any:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 || idx >= len(c) || strconv.Itoa(idx) != key {
				return nil, fmt.Errorf("%w: %s: no element %q in %s", errUnresolved, r.text, strings.Join(r.path[:i+1], "."), where)
			}
			v = c[idx]
		default:
			at := where
			if i > 0 {
				at = fmt.Sprintf("field %q in %s", strings.Join(r.path[:i], "."), where)
			}
			return nil, fmt.Errorf("%w: %s: %s is not an object or array", errUnresolved, r.text, at)
		}
	}
	return v, nil
}

func decode(raw []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
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

// caseLabel is the label a switch value matches: a string as it is, any
// other value as its canonical JSON text.
func caseLabel(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	raw, err := encode(v)
	if err != nil {
		return "", err
	}
	c, err := audit.Canonicalize(raw)
	if err != nil {
		return "", err
	}
	return string(c.Bytes), nil
}
