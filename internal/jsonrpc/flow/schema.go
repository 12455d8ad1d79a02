package flow

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the Flow IR's JSON Schema (draft 2020-12), byte for byte
// the spec's schema.json (MIT licensed: schema.LICENSE).
//
//go:embed schema.json
var SchemaJSON []byte

// schemaURL is the schema's own $id.
const schemaURL = "https://trace-mind.dev/schemas/ir/v0.1"

var irSchema = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(SchemaJSON)))
	if err != nil {
		panic("flow: the embedded schema.json is not JSON: " + err.Error())
	}
	c := newCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		panic("flow: the embedded schema.json: " + err.Error())
	}
	return c.MustCompile(schemaURL)
})

// newCompiler is a compiler for draft 2020-12 that asserts formats and
// loads nothing from outside: a $ref to a file or URL fails instead of
// reading the runtime's disk or network.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	return c
}

var printer = message.NewPrinter(language.English)

// validateIR checks the document against the IR's schema.
func validateIR(doc any) *Error {
	err := irSchema().Validate(doc)
	if err == nil {
		return nil
	}
	vs := violations(err)
	e := &Error{Kind: ErrSchema, Pointer: vs[0].Pointer, Violations: vs,
		Msg: fmt.Sprintf("the IR does not match the Flow IR schema at %s: %s", where(vs[0].Pointer), vs[0].Message)}
	e.StepID = stepAt(doc, vs[0].Pointer)
	return e
}

// violations flattens a validation error into its failed assertions,
// sorted by pointer (the library visits properties in map order).
func violations(err error) []Violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Pointer: "", Message: err.Error()}}
	}
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Violation{Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pointer != out[j].Pointer {
			return out[i].Pointer < out[j].Pointer
		}
		return out[i].Message < out[j].Message
	})
	// A document broken everywhere would make an error as long as itself.
	if len(out) > maxViolations {
		out = append(out[:maxViolations], Violation{Message: fmt.Sprintf("and %d more", len(out)-maxViolations)})
	}
	return out
}

// maxViolations bounds the violations an error lists.
const maxViolations = 20

// where is a JSON pointer for a message; "" is the whole document.
func where(ptr string) string {
	if ptr == "" {
		return `"" (the top level)`
	}
	return strconv.Quote(ptr)
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// stepAt is the id of the node a pointer into the IR falls in, if any.
func stepAt(doc any, ptr string) string {
	var i int
	if _, err := fmt.Sscanf(ptr, "/graph/nodes/%d", &i); err != nil {
		return ""
	}
	nodes, _ := doc.(map[string]any)["graph"].(map[string]any)["nodes"].([]any)
	if i < 0 || i >= len(nodes) {
		return ""
	}
	id, _ := nodes[i].(map[string]any)["id"].(string)
	return id
}

// schemaKeywords are the draft 2020-12 keywords that assert or apply
// subschemas, and the core ones that make a document a schema. Annotations
// (title, description, default...) are left out: they constrain nothing.
var schemaKeywords = map[string]bool{
	"$schema": true, "$id": true, "$ref": true, "$defs": true, "$dynamicRef": true,
	"type": true, "enum": true, "const": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "propertyNames": true,
	"required": true, "dependentRequired": true, "dependentSchemas": true,
	"minProperties": true, "maxProperties": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true, "contains": true, "minContains": true, "maxContains": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "unevaluatedItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
}

const inputsSchemaURL = "urn:wasmgate:flow:inputs_schema"

// compileInputsSchema decides what inputs_schema is (spec §5.4: "either a
// JSON Schema fragment or structured metadata understood by the runtime")
// and compiles it when it is a JSON Schema.
//
// It is a JSON Schema when one of its top-level members is a JSON Schema
// keyword (schemaKeywords) and it is a valid draft 2020-12 schema. Anything
// else is metadata, passed through: TraceMind's compiler writes a flow's
// declared inputs as {NAME: {"type": TYPE}} with its own type names
// ("list<string>"), none of which is a keyword; {} (no inputs declared)
// constrains nothing either way. Metadata that happens to name an input
// after a keyword ("type", "required"...) is almost never a valid schema,
// so it is passed through too. A document that says it is a schema
// ("$schema") must compile: it is then an error not to.
func compileInputsSchema(v any) (*jsonschema.Schema, error) {
	obj, _ := v.(map[string]any)
	isSchema := false
	for k := range obj {
		if schemaKeywords[k] {
			isSchema = true
			break
		}
	}
	if !isSchema {
		return nil, nil
	}
	c := newCompiler()
	if err := c.AddResource(inputsSchemaURL, v); err != nil {
		return inputsSchemaError(obj, err)
	}
	s, err := c.Compile(inputsSchemaURL)
	if err != nil {
		return inputsSchemaError(obj, err)
	}
	return s, nil
}

func inputsSchemaError(obj map[string]any, err error) (*jsonschema.Schema, error) {
	if _, declared := obj["$schema"]; !declared {
		return nil, nil
	}
	at := "/inputs_schema"
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		vs := violations(se.Err)
		at += vs[0].Pointer
		return nil, &Error{Kind: ErrSchema, Pointer: at, Violations: vs,
			Msg: fmt.Sprintf("inputs_schema declares $schema but is not a valid JSON Schema: at %q: %s", at, vs[0].Message)}
	}
	return nil, schemaError(at, "", "inputs_schema declares $schema but is not a usable JSON Schema: %v", err)
}

// CheckInputs validates a run's inputs (a JSON object; empty for {})
// against inputs_schema when it is a JSON Schema.
//
// # Errors
//
// An *Error matching ErrInputs, its pointer into the inputs.
func (f *Flow) CheckInputs(inputs json.RawMessage) error {
	if f.inputs == nil {
		return nil
	}
	var v any = map[string]any{}
	if len(inputs) > 0 {
		var err error
		if v, err = decodeJSON(inputs); err != nil {
			return &Error{Kind: ErrInputs, Msg: fmt.Sprintf("inputs are not JSON: %v", err)}
		}
	}
	err := f.inputs.Validate(v)
	if err == nil {
		return nil
	}
	vs := violations(err)
	return &Error{Kind: ErrInputs, Pointer: vs[0].Pointer, Violations: vs,
		Msg: fmt.Sprintf("inputs do not match the IR's inputs_schema at %s: %s", where(vs[0].Pointer), vs[0].Message)}
}

// sortedKeys are m's keys in order, for deterministic checks.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
