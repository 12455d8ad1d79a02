package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

const (
	sumInputSchema  = `{"type":"object","required":["numbers"],"properties":{"numbers":{"type":"array","items":{"type":"number"}}}}`
	sumOutputSchema = `{"type":"object","required":["sum"],"properties":{"sum":{"type":"number"}}}`
)

// schemaExecutor is an executor declaring the sum guest's schemas that
// answers with output (or echoes its input when output is nil).
func schemaExecutor(in, out string, output *sandbox.Outcome) *fakeExecutor {
	e := textExecutor()
	e.manifest.ExecutorID = "sum"
	e.manifest.InputSchema, e.manifest.OutputSchema = rawOrNil(in), rawOrNil(out)
	e.outcome = output
	return e
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func completed(output string) *sandbox.Outcome {
	return &sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(output), FuelUsed: 3}
}

// schemaPipeline runs one executor as action "sum".
func schemaPipeline(t *testing.T, e Executor) (*Pipeline, *audit.MemorySink) {
	t.Helper()
	return newTestPipeline(t, map[string]Route{"sum": {Executor: "sum", Version: "*"}}, map[string]Executor{"sum": e})
}

// wantSchemaDigest is the schema_digest of in and out, spelled out.
func wantSchemaDigest(in, out string) string {
	canon := func(s string) string {
		if s == "" {
			return "null"
		}
		c, err := audit.Canonicalize([]byte(s))
		if err != nil {
			panic(err)
		}
		return string(c.Bytes)
	}
	return audit.Digest([]byte(`{"input":` + canon(in) + `,"output":` + canon(out) + `}`))
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		message string // empty: SUCCESS
	}{
		{"matches", `{"numbers":[1,2.5,-3]}`, ""},
		{"big integers are numbers", `{"numbers":[9007199254740991]}`, ""},
		{"an item of the wrong type", `{"numbers":[1,"two",3]}`, `payload does not match the input schema at /numbers/1: got string, want number`},
		{"the first of several, in index order", `{"numbers":[1,2,3,4,5,6,7,8,9,10,"x",true]}`, `payload does not match the input schema at /numbers/10: got string, want number`},
		{"a required member missing", `{"n":[1]}`, `payload does not match the input schema at the root: missing property 'numbers'`},
		{"not an object", `[1,2]`, `payload does not match the input schema at the root: got array, want object`},
		{"the deepest violation wins", `{"numbers":"1,2"}`, `payload does not match the input schema at /numbers: got string, want array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := schemaExecutor(sumInputSchema, sumOutputSchema, completed(`{"sum":1}`))
			p, sink := schemaPipeline(t, e)
			res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(tt.payload)})
			require.NoError(t, err)
			digest := wantSchemaDigest(sumInputSchema, sumOutputSchema)
			all := sink.Records()
			if tt.message == "" {
				assert.Equal(t, StatusSuccess, res.Status, res.Message)
				assert.Equal(t, []ReasonCode{}, res.ReasonCodes)
				require.Len(t, all, 2, "an attempt, then the verdict")
				for _, r := range all {
					require.NotNil(t, r.SchemaDigest, r.EventType)
					assert.Equal(t, digest, *r.SchemaDigest, r.EventType)
				}
				return
			}
			assert.Equal(t, StatusBlocked, res.Status)
			assert.Equal(t, []ReasonCode{InputSchemaInvalid}, res.ReasonCodes)
			assert.Equal(t, tt.message, res.Message)
			assert.Nil(t, res.Output)
			assert.Nil(t, res.OutputDigest)
			assert.Zero(t, e.calls, "nothing runs")
			require.Len(t, all, 1, "a verdict and no attempt")
			v := all[0]
			assert.Equal(t, audit.EventActionAudit, v.EventType)
			assert.Equal(t, "BLOCKED", v.Status)
			assert.Equal(t, []string{"INPUT_SCHEMA_INVALID"}, v.ReasonCodes)
			assert.Nil(t, v.AttemptHash)
			assert.Equal(t, res.InputDigest, v.InputDigest)
			require.NotNil(t, v.SchemaDigest)
			assert.Equal(t, digest, *v.SchemaDigest)
		})
	}
}

// TestInputSchemaAfterLimits: the limits are checked first (they bound
// what validation costs), and the schema before anything is written ahead.
func TestInputSchemaAfterLimits(t *testing.T) {
	e := schemaExecutor(sumInputSchema, "", nil)
	p, _ := schemaPipeline(t, e)
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage("[" + strings.Repeat(`"x",`, 150) + `"x"]`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{LimitExceeded, ListTooLong}, res.ReasonCodes)

	res, err = p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{InputSchemaInvalid}, res.ReasonCodes, "checked before a failing audit log could refuse")
}

func TestOutputSchema(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		message string // empty: SUCCESS
	}{
		{"matches", `{"sum":3}`, ""},
		{"a member of the wrong type", `{"sum":"3"}`, `output does not match the output schema at /sum: got string, want number`},
		{"a required member missing", `{"total":3}`, `output does not match the output schema at the root: missing property 'sum'`},
		{"null", `null`, `output does not match the output schema at the root: got null, want object`},
		{"no output", ``, `output does not match the output schema: the executor returned no output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sink := schemaPipeline(t, schemaExecutor(sumInputSchema, sumOutputSchema, completed(tt.output)))
			res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":[1,2]}`)})
			require.NoError(t, err)
			all := sink.Records()
			require.Len(t, all, 2, "the executor ran: an attempt and its verdict")
			assert.Equal(t, audit.EventActionAttempt, all[0].EventType)
			digest := wantSchemaDigest(sumInputSchema, sumOutputSchema)
			for _, r := range all {
				require.NotNil(t, r.SchemaDigest, r.EventType)
				assert.Equal(t, digest, *r.SchemaDigest, r.EventType)
			}
			if tt.message == "" {
				assert.Equal(t, StatusSuccess, res.Status, res.Message)
				assert.JSONEq(t, tt.output, string(res.Output))
				return
			}
			assert.Equal(t, StatusFailed, res.Status)
			assert.Equal(t, []ReasonCode{OutputSchemaInvalid}, res.ReasonCodes)
			assert.Equal(t, tt.message, res.Message)
			assert.Nil(t, res.Output, "an output that breaks its schema is not delivered")
			assert.Nil(t, res.OutputDigest)
			assert.Equal(t, "FAILED", all[1].Status)
			assert.Equal(t, []string{"OUTPUT_SCHEMA_INVALID"}, all[1].ReasonCodes)
			assert.Nil(t, all[1].OutputDigest)
			assert.Equal(t, all[0].Hash, *all[1].AttemptHash)
		})
	}
}

// TestOutputSchemaMessageIsTheExecutors: the message may quote the output,
// which digest-only results withhold.
func TestOutputSchemaMessageIsTheExecutors(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("sum", schemaExecutor("", `{"type":"object","properties":{"s":{"pattern":"^[a-z]+$"}}}`, completed(`{"s":"SECRET"}`))))
	require.NoError(t, reg.AddAction("sum", Route{Executor: "sum", Version: "*"}))
	res, err := New(reg, audit.NewMemorySink(), WithResults(ResultsDigestOnly)).Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{OutputSchemaInvalid}, res.ReasonCodes)
	assert.Equal(t, withheld, res.Message)

	res, err = New(reg, audit.NewMemorySink()).Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, `output does not match the output schema at /s: 'SECRET' does not match pattern '^[a-z]+$'`, res.Message)
	assert.True(t, res.QuotesExecutor)
}

func TestSchemaMessageIsOneBoundedLine(t *testing.T) {
	key := strings.Repeat("k\n", 400)
	p, _ := schemaPipeline(t, schemaExecutor(`{"additionalProperties":{"type":"number"}}`, "", nil))
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"` + strings.ReplaceAll(key, "\n", `\n`) + `":"x"}`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{InputSchemaInvalid}, res.ReasonCodes)
	assert.NotContains(t, res.Message, "\n")
	assert.LessOrEqual(t, len(res.Message), 512)
	assert.True(t, strings.HasPrefix(res.Message, "payload does not match the input schema at /k k k "), res.Message)
	assert.True(t, strings.HasSuffix(res.Message, ": got string, want number"), res.Message)
}

func TestSchemaThatDoesNotCompile(t *testing.T) {
	tests := []struct {
		name          string
		input, output string
		message       string
	}{
		{"not a schema", `{"type":"integer number"}`, "",
			`executor "sum" 1.2.0: input_schema does not compile: not a valid schema at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`},
		{"an output schema", "", `{"minimum":"zero"}`,
			`executor "sum" 1.2.0: output_schema does not compile: not a valid schema at /minimum: got string, want number`},
		{"a remote $ref", `{"$ref":"https://example.com/numbers.json"}`, "",
			`executor "sum" 1.2.0: input_schema does not compile: $ref "https://example.com/numbers.json" is not loaded: an executor's schemas must be self-contained: nothing is loaded from outside`},
		{"a file $ref", "", `{"properties":{"sum":{"$ref":"file:///etc/passwd"}}}`,
			`executor "sum" 1.2.0: output_schema does not compile: $ref "file:///etc/passwd" is not loaded: an executor's schemas must be self-contained: nothing is loaded from outside`},
		{"an unknown draft", `{"$schema":"https://example.com/my-draft"}`, "",
			`executor "sum" 1.2.0: input_schema does not compile: $ref "https://example.com/my-draft" is not loaded: an executor's schemas must be self-contained: nothing is loaded from outside`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := schemaExecutor(tt.input, tt.output, nil)
			p, sink := schemaPipeline(t, e)
			assert.Equal(t, []string{"sum: EXECUTOR_INVALID (" + tt.message + ")"}, p.Registry().Problems())
			res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":[1]}`)})
			require.NoError(t, err)
			assert.Equal(t, StatusBlocked, res.Status)
			assert.Equal(t, []ReasonCode{ExecutorInvalid}, res.ReasonCodes)
			assert.Equal(t, tt.message, res.Message)
			assert.Equal(t, "sum", res.ExecutorID)
			assert.Zero(t, e.calls)
			all := sink.Records()
			require.Len(t, all, 1, "a verdict and no attempt")
			require.NotNil(t, all[0].SchemaDigest, "what it declared is part of its identity")
			assert.Equal(t, wantSchemaDigest(tt.input, tt.output), *all[0].SchemaDigest)
		})
	}
}

// TestSchemaDraftFromDollarSchema: $schema selects an older draft, whose
// keywords then apply (draft-07's array form of items).
func TestSchemaDraftFromDollarSchema(t *testing.T) {
	in := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}]}`
	p, _ := schemaPipeline(t, schemaExecutor(in, "", nil))
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`[1]`)})
	require.NoError(t, err)
	assert.Equal(t, `payload does not match the input schema at /0: got number, want string`, res.Message)
}

func TestSchemaWithLocalRefs(t *testing.T) {
	in := `{"$defs":{"n":{"type":"number"}},"type":"object","properties":{"numbers":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`
	p, _ := schemaPipeline(t, schemaExecutor(in, "", nil))
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":[1,null]}`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{InputSchemaInvalid}, res.ReasonCodes)
	assert.Equal(t, `payload does not match the input schema at /numbers/1: got null, want number`, res.Message)
}

// TestSchemaNumbersAreExact: numbers are compared as the decimals they
// are, not as the floats nearest to them (0.3 is a multiple of 0.1, which
// in float64 arithmetic it is not).
func TestSchemaNumbersAreExact(t *testing.T) {
	p, _ := schemaPipeline(t, schemaExecutor(`{"multipleOf":0.1,"maximum":9007199254740990}`, "", nil))
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`0.3`)})
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, res.Status, res.Message)

	res, err = p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`9007199254740991`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{InputSchemaInvalid}, res.ReasonCodes)
	assert.Equal(t, `payload does not match the input schema at the root: maximum: got 9007199254740991, want 9007199254740990`, res.Message)
}

func TestExecutorWithoutSchemasIsUnchanged(t *testing.T) {
	p, sink := schemaPipeline(t, schemaExecutor("", "", completed("")))
	res, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`"anything"`)})
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, res.Status, "no output is SUCCESS without an output schema")
	all := sink.Records()
	require.Len(t, all, 2)
	for _, r := range all {
		assert.Nil(t, r.SchemaDigest, r.EventType)
	}
	var log bytes.Buffer
	_, err = sink.WriteTo(&log)
	require.NoError(t, err)
	assert.NotContains(t, log.String(), "schema_digest", "the member is absent, not null")
}

func TestSchemaDigestIsOnTheLineAndVerifies(t *testing.T) {
	p, sink := schemaPipeline(t, schemaExecutor(sumInputSchema, sumOutputSchema, completed(`{"sum":3}`)))
	_, err := p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":[1,2]}`)})
	require.NoError(t, err)
	_, err = p.Execute(context.Background(), ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":"1,2"}`)})
	require.NoError(t, err)
	var log bytes.Buffer
	_, err = sink.WriteTo(&log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		assert.Contains(t, l, `,"schema_digest":"`+wantSchemaDigest(sumInputSchema, sumOutputSchema)+`","seq":`)
	}
	rep, err := audit.Verify(&log)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Records)
}

// TestSchemasCompileOnce: executors whose schemas differ only in spelling
// share one compiled schema.
func TestSchemasCompileOnce(t *testing.T) {
	a := schemasOf(sandbox.Manifest{InputSchema: json.RawMessage(`{"type": "object", "required": ["x"]}`)})
	b := schemasOf(sandbox.Manifest{InputSchema: json.RawMessage(`{"required":["x"],"type":"object"}`)})
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.NotSame(t, a, b)
	assert.Same(t, a.input, b.input)
	assert.Equal(t, a.digest, b.digest)
	assert.Same(t, a, schemasOf(sandbox.Manifest{InputSchema: json.RawMessage(`{"type": "object", "required": ["x"]}`)}))
	assert.Same(t, noSchemas, schemasOf(sandbox.Manifest{InputSchema: json.RawMessage(`null`)}))
}
