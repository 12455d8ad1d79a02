package jstool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// loadTool loads export of the tool in file (under testdata/tools) with
// manifest m on the shared wazero engine.
func loadTool(t *testing.T, file, export string, m sandbox.Manifest) *jstool.Tool {
	t.Helper()
	b, err := jstool.BundleFile(filepath.Join(tools, file))
	require.NoError(t, err)
	tool, err := jstool.Load(context.Background(), engine(t, sandbox.EngineWazero), jstool.Spec{Bundle: b, Export: export, Manifest: m})
	require.NoError(t, err)
	return tool
}

func TestToolInfo(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tools, "ai", "node_modules", "zod3")); err != nil {
		t.Fatalf("the ai package fixture is not installed (make testdata-js runs npm ci in %s): %v", filepath.Join(tools, "ai"), err)
	}
	const echo = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	cases := []struct {
		name, file, export string
		want               jstool.ToolInfo
		input, output      string // the schemas' exact bytes
	}{
		{name: "zod 4, through Standard JSON Schema", file: "ai/weather.ts", export: "weather",
			want: jstool.ToolInfo{Description: "Get the weather in a location"},
			input: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
				`"properties":{"location":{"type":"string","description":"The location"}},"required":["location"]}`},
		{name: "the ai package's jsonSchema(), and a zod 4 output schema", file: "ai/json_schema.ts", export: "forecast",
			want: jstool.ToolInfo{Title: "Forecast", Description: "The forecast for a city, a day at a time"},
			input: `{"type":"object","properties":{"city":{"type":"string","minLength":1},` +
				`"days":{"type":"integer","minimum":1,"maximum":7,"default":3}},"required":["city"],"additionalProperties":false}`,
			// zod describes an output object's keys as the only ones: it
			// strips the others.
			output: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"city":{"type":"string"},` +
				`"days":{"type":"array","items":{"type":"object","properties":{"day":{"type":"integer","minimum":-9007199254740991,` +
				`"maximum":9007199254740991},"high":{"type":"number"}},"required":["day","high"],"additionalProperties":false}}},` +
				`"required":["city","days"],"additionalProperties":false}`},
		{name: "zod 3 as parameters, converted by the prelude", file: "ai/zod3.ts", export: "report",
			want: jstool.ToolInfo{Description: "A weather report"},
			input: `{"type":"object","properties":{` +
				`"city":{"type":"string","minLength":1,"maxLength":80,"description":"The city"},` +
				`"code":{"type":"string","pattern":"^[A-Z]{3}$"},` +
				`"email":{"type":"string","format":"email"},` +
				`"days":{"type":"integer","minimum":1,"maximum":7,"default":3},` +
				`"ratio":{"anyOf":[{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},{"type":"null"}]},` +
				`"unit":{"type":"string","enum":["C","F"]},` +
				`"level":{"type":"number","enum":[0,1]},` +
				`"kind":{"type":"string","enum":["daily","hourly"]},` +
				`"exact":{"type":"boolean","const":true},` +
				`"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":5},` +
				`"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"minItems":2,"maxItems":2},` +
				`"extra":{"type":"object","additionalProperties":{"type":"boolean"}},` +
				`"either":{"anyOf":[{"type":"string"},{"type":"number"}]},` +
				`"trimmed":{"type":"string"},` +
				`"when":{},` + // a date: JSON has none
				`"anything":{}},` +
				`"required":["city","ratio","unit","kind","exact","tags","pair","extra","either","trimmed"],"additionalProperties":false}`,
			// A default is always in the output; a transform's output is
			// whatever it returns.
			output: `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"number","default":3},"size":{}},` +
				`"required":["city","days","size"],"additionalProperties":false}`},
		{name: "plain JSON Schema objects", file: "described.js", export: "plain",
			want:  jstool.ToolInfo{Title: "Echo", Description: "Gives back what it is given"},
			input: echo, output: echo},
		{name: "jsonSchema()'s shape with a promise", file: "described.js", export: "promised",
			want: jstool.ToolInfo{Description: "A schema that comes later"}, input: echo},
		{name: "a promise that never settles", file: "described.js", export: "neverSettles",
			want: jstool.ToolInfo{Notes: []string{"the input schema (inputSchema): its promise did not settle while the tool loaded"}}},
		{name: "a getter that throws", file: "described.js", export: "getterThrows",
			want: jstool.ToolInfo{Description: "Its schema cannot be read",
				Notes: []string{"reading the tool's inputSchema threw Error: no schema today"}}},
		{name: "a conversion that throws", file: "described.js", export: "conversionThrows",
			want: jstool.ToolInfo{Notes: []string{
				"the input schema (inputSchema): converting it to JSON Schema threw Error: draft-2020-12 is not supported"}}},
		{name: "an object that is no schema", file: "described.js", export: "notASchema",
			want: jstool.ToolInfo{Notes: []string{"the input schema (inputSchema): it is not a JSON Schema (it holds a function), " +
				"nor a schema wasmgate converts (zod 3 or 4, Standard JSON Schema, the ai package's jsonSchema())"}}},
		{name: "a schema over 256 KiB", file: "described.js", export: "tooLarge",
			want: jstool.ToolInfo{Notes: []string{"the input schema (inputSchema): its JSON Schema is over 262144 bytes"}}},
		{name: "a factory says nothing", file: "described.js", export: "factory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := loadTool(t, c.file, c.export, sandbox.Manifest{ExecutorID: "described", Version: "1.0.0"})
			got := tool.Info()
			assert.Equal(t, c.input, string(got.InputSchema), "input schema")
			assert.Equal(t, c.output, string(got.OutputSchema), "output schema")
			got.InputSchema, got.OutputSchema = nil, nil
			assert.Equal(t, c.want, got)

			// The manifest carries what the tool says, as it says it.
			m := tool.Manifest()
			assert.Equal(t, c.want.Title, m.Title)
			assert.Equal(t, c.want.Description, m.Description)
			assert.Equal(t, c.input, string(m.InputSchema))
			assert.Equal(t, c.output, string(m.OutputSchema))
		})
	}
}

func TestManifestWinsOverWhatTheToolSays(t *testing.T) {
	declared := json.RawMessage(`{"type":"object"}`)
	tool := loadTool(t, "described.js", "plain", sandbox.Manifest{ExecutorID: "echo", Version: "1.0.0",
		Description: "Echoes", InputSchema: declared})
	m := tool.Manifest()
	assert.Equal(t, "echo", m.ExecutorID)
	assert.Equal(t, "Echo", m.Title, "the manifest has no title: the tool's")
	assert.Equal(t, "Echoes", m.Description)
	assert.Equal(t, `{"type":"object"}`, string(m.InputSchema))
	assert.Equal(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, string(m.OutputSchema))
	// Info is what the tool says, whatever the manifest declares.
	assert.Equal(t, "Gives back what it is given", tool.Info().Description)

	// Reading the schemas at load time changes nothing in an execution.
	in := []byte(`{"text":"hi"}`)
	for _, run := range []func(context.Context, sandbox.Input) (sandbox.Outcome, error){tool.Execute, tool.ExecuteCold} {
		out, err := run(context.Background(), sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in)})
		require.NoError(t, err)
		require.Equal(t, sandbox.Completed, out.Kind, out.Message)
		assert.Equal(t, `{"text":"hi"}`, string(out.Output))
	}
}
