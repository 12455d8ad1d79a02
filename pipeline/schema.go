package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Schemas: a manifest's input_schema and output_schema are JSON Schemas
// (draft 2020-12 unless their $schema selects another) that the payload
// and the output must match. They are compiled once per distinct schema,
// with no I/O: a $ref to anything outside the schema itself does not
// compile, and an executor whose schemas do not compile is unusable
// (EXECUTOR_INVALID).

// schemaSet is what an executor's manifest declares of schemas, compiled.
type schemaSet struct {
	// input and output are nil when the manifest declares no such schema.
	input, output *jsonschema.Schema
	// digest is the schema_digest of the audit records: the digest of the
	// canonical {"input":SCHEMA|null,"output":SCHEMA|null}; empty when the
	// manifest declares neither schema, or one that is not canonical JSON.
	digest string
	// err says which schema does not compile, and why; the executor is
	// then unusable.
	err error
}

// noSchemas is the set of an executor that declares no schema.
var noSchemas = &schemaSet{}

var (
	// schemaSets caches an executor's set by its manifest's raw schemas
	// (input, NUL, output), so that a request costs a lookup.
	schemaSets sync.Map // string → *schemaSet
	// compiledSchemas caches compiled schemas by the digest of their
	// canonical bytes: schemas that differ only in spelling compile once.
	compiledSchemas sync.Map // digest → compiledSchema
)

// compiledSchema is one schema's compilation: the schema, or why not.
type compiledSchema struct {
	schema *jsonschema.Schema
	err    error
}

// schemasOf returns the compiled schemas m declares. It is safe for
// concurrent use; each distinct schema is compiled once per process (two
// goroutines meeting a new one at once may both compile it, and keep
// either: compilation is deterministic).
func schemasOf(m sandbox.Manifest) *schemaSet {
	in, out := declared(m.InputSchema), declared(m.OutputSchema)
	if in == nil && out == nil {
		return noSchemas
	}
	key := string(in) + "\x00" + string(out)
	if s, ok := schemaSets.Load(key); ok {
		return s.(*schemaSet)
	}
	s := buildSchemaSet(in, out)
	actual, _ := schemaSets.LoadOrStore(key, s)
	return actual.(*schemaSet)
}

// declared is a manifest's schema member, nil when it is absent or null.
func declared(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func buildSchemaSet(in, out []byte) *schemaSet {
	s := &schemaSet{}
	inCanon, inErr := canonicalSchema("input_schema", in)
	outCanon, outErr := canonicalSchema("output_schema", out)
	if err := errors.Join(inErr, outErr); err != nil {
		// Not JSON, or not canonical JSON: there is no digest to record.
		s.err = firstError(inErr, outErr)
		return s
	}
	ident := make([]byte, 0, len(inCanon)+len(outCanon)+32)
	ident = append(append(append(ident, `{"input":`...), orNull(inCanon)...), `,"output":`...)
	ident = append(append(ident, orNull(outCanon)...), '}')
	s.digest = audit.Digest(ident)
	if s.input, s.err = compileSchema("input_schema", inCanon); s.err != nil {
		return s
	}
	s.output, s.err = compileSchema("output_schema", outCanon)
	return s
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// canonicalSchema is a declared schema's canonical JSON (nil when not
// declared).
func canonicalSchema(name string, raw []byte) ([]byte, error) {
	if raw == nil {
		return nil, nil
	}
	c, err := audit.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not canonicalizable JSON: %s", name, oneLine(err.Error(), maxReason))
	}
	return c.Bytes, nil
}

// schemaURL is where a compiled schema is said to live: a name, not a
// place (nothing is ever loaded from it).
const schemaURL = "urn:wasmgate:schema"

// compileSchema compiles one canonical schema (nil: not declared, no
// schema), through the cache.
func compileSchema(name string, canon []byte) (*jsonschema.Schema, error) {
	if canon == nil {
		return nil, nil
	}
	key := audit.Digest(canon)
	if c, ok := compiledSchemas.Load(key); ok {
		return c.(compiledSchema).schema, named(name, c.(compiledSchema).err)
	}
	sch, err := compile(canon)
	compiledSchemas.LoadOrStore(key, compiledSchema{sch, err})
	return sch, named(name, err)
}

func named(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s does not compile: %w", name, err)
}

// compile compiles a canonical schema with no I/O.
func compile(canon []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
	if err != nil {
		return nil, errors.New(oneLine(err.Error(), maxReason))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, errors.New(oneLine(err.Error(), maxReason))
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, errors.New(compileReason(err))
	}
	return sch, nil
}

// refuseLoader is the compiler's loader: it loads nothing. The library's
// default would read files, and a schema must not make the runtime touch
// its disk or network. (The drafts' own metaschemas are built in, and
// still resolve.)
type refuseLoader struct{}

// errNotLoaded is why a referenced schema is not loaded.
var errNotLoaded = errors.New("an executor's schemas must be self-contained: nothing is loaded from outside")

// Load implements jsonschema.URLLoader.
func (refuseLoader) Load(url string) (any, error) { return nil, errNotLoaded }

// compileReason is a compilation error as one bounded line: a schema that
// breaks its metaschema says where; a $ref to outside says which.
func compileReason(err error) string {
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return oneLine(fmt.Sprintf("$ref %s is not loaded: %v", strconv.Quote(load.URL), load.Err), maxReason)
	}
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		if ptr, reason, ok := firstViolation(se.Err); ok {
			return oneLine(fmt.Sprintf("not a valid schema %s: %s", at(ptr), reason), maxReason)
		}
	}
	return oneLine(err.Error(), maxReason)
}

// validate checks a canonical JSON value against sch. It returns the JSON
// pointer of the first failing instance location and what was wrong there;
// ok when the value matches.
func validate(sch *jsonschema.Schema, canon []byte) (ptr, reason string, ok bool) {
	// Exact numbers (json.Number): an integer beyond 2^53 is compared as
	// itself, not as the float nearest to it.
	v, err := decodeCanonical(canon)
	if err != nil {
		return "", oneLine(err.Error(), maxReason), false
	}
	err = sch.Validate(v)
	if err == nil {
		return "", "", true
	}
	if ptr, reason, found := firstViolation(err); found {
		return ptr, reason, false
	}
	return "", oneLine(err.Error(), maxReason), false
}

// printer renders the library's messages.
var printer = message.NewPrinter(language.English)

// firstViolation is the most specific failed assertion of a validation
// error: of its leaves, the one at the deepest instance location, the
// first in document order among those as deep (array indexes compared as
// numbers), so that the same value always gets the same message (the
// library visits an object's members in map order); at one location, the
// first the library found (it applies a schema's keywords, and the
// branches of anyOf and oneOf, in a fixed order).
func firstViolation(err error) (ptr, reason string, ok bool) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", "", false
	}
	var best *jsonschema.ValidationError
	var bestMsg string // what best says
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msg := kindText(e.ErrorKind)
		if best == nil || before(e.InstanceLocation, best.InstanceLocation) {
			best, bestMsg = e, msg
		}
	}
	walk(ve)
	return pointer(best.InstanceLocation), oneLine(bestMsg, maxReason), true
}

// before orders instance locations: deeper first, then in document order.
func before(a, b []string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return false
}

// kindText is what a failed assertion says. Those that report numbers are
// spelled here, plainly: the library's printer writes them localized
// ("1,000", "9.007199254740991×10¹⁵").
func kindText(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.MinProperties:
		return fmt.Sprintf("minProperties: got %d, want %d", k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("maxProperties: got %d, want %d", k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("minItems: got %d, want %d", k.Got, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("maxItems: got %d, want %d", k.Got, k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("minLength: got %d, want %d", k.Got, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("maxLength: got %d, want %d", k.Got, k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("items at %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return fmt.Sprintf("minimum: got %s, want %s", ratText(k.Got), ratText(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("maximum: got %s, want %s", ratText(k.Got), ratText(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("exclusiveMinimum: got %s, want %s", ratText(k.Got), ratText(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("exclusiveMaximum: got %s, want %s", ratText(k.Got), ratText(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("multipleOf: got %s, want a multiple of %s", ratText(k.Got), ratText(k.Want))
	}
	return k.LocalizedString(printer)
}

// ratText writes an exact number as JSON would: an integer in full, any
// other as the shortest decimal of its nearest float.
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// pointer is an instance location as a JSON pointer (RFC 6901); "" is the
// whole value.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// at says where, in a message: "at /numbers/1", or "at the root".
func at(ptr string) string {
	if ptr == "" {
		return "at the root"
	}
	return "at " + oneLine(ptr, maxPointer)
}

// Bounds of a schema message's parts: a message quotes the value (a
// string that breaks a pattern, a key), and must stay one short line.
const (
	maxReason  = 240
	maxPointer = 160
)

// oneLine is s on one line (control characters as spaces), cut to at most
// max bytes at a character boundary, with "…" when cut.
func oneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// schemaMismatch is the message of a value (what: "payload" or "output")
// that does not match its schema (which: "input" or "output").
func schemaMismatch(what, which, ptr, reason string) string {
	return fmt.Sprintf("%s does not match the %s schema %s: %s", what, which, at(ptr), reason)
}
