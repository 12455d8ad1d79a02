package jstool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// ToolExports names what may be a tool: named exports and the default
// export's properties with execute or that are functions, "default" for a
// default export that is a tool, and nothing else.
func TestToolExports(t *testing.T) {
	e := engine(t, sandbox.EngineWazero)
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"named exports", `export const shout = { execute: () => 1 };
export const factory = () => ({ execute: () => 2 });
export class Greeter { execute() {} }
export const notool = 42;
export const obj = { nothing: true };`, []string{"Greeter", "factory", "shout"}},
		{"module.exports of tools", `export default { hello: { execute: () => 1 }, version: 3, make: () => ({ execute() {} }) };`, []string{"hello", "make"}},
		{"one tool as the default export", `export default { execute: () => 1, helper: { execute: () => 2 } };`, []string{"default"}},
		{"nothing", `export const x = 1;`, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := jstool.ToolExports(context.Background(), e, jstool.Bundle{Source: []byte(c.src), Entry: "pkg@1.0.0"})
			require.NoError(t, err)
			if got == nil {
				got = []string{}
			}
			assert.Equal(t, c.want, got)
		})
	}
}
