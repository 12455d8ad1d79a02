package tscheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23, item 4: the type check of an untrusted script reads only the
// script's tree and runs under a time and a memory bound.

// hostSecret is what the host files outside a test's tree hold.
const hostSecret = "s3cret-outside-the-tree"

func TestCheckRefusesFilesOutsideTheTree(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // under the project, besides the script (main.ts)
		script  func(outside string) string
		problem func(outside string) string
	}{
		{"an import of a host JSON file",
			nil,
			func(o string) string {
				return `import k from "` + o + `/secret.json";` + "\nexport const n: number = k;\n"
			},
			func(o string) string { return `"` + o + `/secret.json" is outside it` }},
		{"an import type",
			nil,
			func(o string) string {
				return `import type { Key } from "` + o + `/types.ts";` + "\nexport const n: Key = 1;\n"
			},
			func(o string) string { return `"` + o + `/types.ts" is outside it` }},
		{"a reference directive",
			nil,
			func(o string) string {
				return `/// <reference path="` + o + `/ref.d.ts" />` + "\nexport const n: number = refd;\n"
			},
			func(o string) string { return `"` + o + `/ref.d.ts" is outside it` }},
		{"an import through ..",
			nil,
			func(string) string { return "import k from \"../secret.json\";\nexport const n: number = k;\n" },
			func(string) string { return `"../secret.json" is outside it` }},
		{"a link pointing out",
			map[string]string{"types.d.ts": "->../types.ts"},
			func(string) string { return "import type { Key } from \"./types.d.ts\";\nexport const n: Key = 1;\n" },
			func(string) string { return `"./types.d.ts" is outside it (it resolves to ../types.ts)` }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			writeScript(t, dir, "secret.json", `{"apiKey":"`+hostSecret+`"}`)
			writeScript(t, dir, "types.ts", `export type Key = { apiKey: "`+hostSecret+`" };`+"\n")
			writeScript(t, dir, "ref.d.ts", `declare var refd: { apiKey: "`+hostSecret+`" };`+"\n")
			writeScript(t, dir, "proj/package.json", `{"name":"proj"}`)
			for name, content := range tc.files {
				if target, ok := strings.CutPrefix(content, "->"); ok {
					require.NoError(t, os.Symlink(target, filepath.Join(dir, "proj", name)))
					continue
				}
				writeScript(t, dir, "proj/"+name, content)
			}
			script := writeScript(t, dir, "proj/main.ts", tc.script(dir))

			diags, err := checker(t).Check(context.Background(), script, map[string][]byte{"toolscript.d.ts": toolscriptAmbient})
			assert.Empty(t, diags)
			var te *TreeError
			require.ErrorAs(t, err, &te, "the check ran")
			problem := script + `: imports must stay inside the script's tree: "." (the nearest directory up from the entry holding package.json, else the entry's own) and the node_modules packages found from there, links resolved; ` + tc.problem(dir)
			assert.Equal(t, []string{problem}, te.Problems)
			assert.EqualError(t, err, "tscheck: cannot type-check "+script+": "+problem)
			assert.NotContains(t, err.Error(), hostSecret)
		})
	}
}

func TestCheckReadsTheTreeAndItsPackages(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeScript(t, dir, "node_modules/up/package.json", `{"name":"up","types":"index.d.ts"}`)
	writeScript(t, dir, "node_modules/up/index.d.ts", "export declare const up: number;\n")
	writeScript(t, dir, "proj/package.json", `{"name":"proj"}`)
	writeScript(t, dir, "proj/node_modules/dep/package.json", `{"name":"dep","types":"index.d.ts"}`)
	writeScript(t, dir, "proj/node_modules/dep/index.d.ts", "export declare const dep: string;\n")
	writeScript(t, dir, "proj/lib/half.ts", "export const half = (n: number) => n / 2;\n")
	writeScript(t, dir, "proj/data.json", `{"k": 1}`)
	script := writeScript(t, dir, "proj/src/main.ts", `/// <reference path="../lib/half.ts" />
import { up } from "up";
import { dep } from "dep";
import type { half } from "../lib/half.ts";
import data from "../data.json";
export const n: number = up + data.k + (null as unknown as typeof half)(dep.length);
`)
	assert.Empty(t, check(t, script, nil))
}

// pathological is a script whose check runs until a bound stops it.
const pathological = "testdata/pathological.ts"

func TestCheckStopsAtTheTimeBound(t *testing.T) {
	// The memory bound is out of reach in the time given: only time can
	// stop the compiler.
	c := checker(t)
	c.Timeout, c.MaxMemory = 500*time.Millisecond, 64<<30
	diags, err := c.Check(context.Background(), pathological, map[string][]byte{})
	assert.Empty(t, diags)
	require.ErrorIs(t, err, ErrTimeBound)
	assert.False(t, errors.Is(err, ErrMemoryBound))
	assert.EqualError(t, err, "tscheck: type-checking testdata/pathological.ts took longer than the time bound, 500ms (Checker.Timeout): the compiler was stopped")
}

func TestCheckStopsAtTheMemoryBound(t *testing.T) {
	if _, err := residentBytes(os.Getpid()); err != nil {
		t.Skipf("resident memory cannot be read here: %v", err)
	}
	// The time bound is out of reach: the compiler doubles its memory
	// every step, so only memory can stop it.
	c := checker(t)
	c.Timeout, c.MaxMemory = 10*time.Minute, 256<<20
	diags, err := c.Check(context.Background(), pathological, map[string][]byte{})
	assert.Empty(t, diags)
	require.ErrorIs(t, err, ErrMemoryBound)
	assert.False(t, errors.Is(err, ErrTimeBound))
	assert.EqualError(t, err, "tscheck: type-checking testdata/pathological.ts used more than the memory bound, 256 MiB (Checker.MaxMemory): the compiler was stopped")
}

func TestCheckBoundsDefaults(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	assert.Equal(t, bounds{deadline: start.Add(DefaultTimeout), timeout: DefaultTimeout, maxMemory: DefaultMaxMemory},
		Checker{}.bounds(start))
	assert.Equal(t, bounds{deadline: start.Add(time.Second), timeout: time.Second, maxMemory: 5 << 20},
		Checker{Timeout: time.Second, MaxMemory: 5 << 20}.bounds(start))
}

func TestOutputIsBoundedToo(t *testing.T) {
	stopped := 0
	out := &boundedOutput{max: 10, over: func() { stopped++ }}
	n, err := out.stream(0).Write([]byte("12345"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	_, _ = out.stream(1).Write([]byte("678901"))
	_, _ = out.stream(1).Write([]byte("more"))
	assert.Equal(t, 1, stopped)
	assert.Equal(t, "12345", out.bufs[0].String())
	assert.Empty(t, out.bufs[1].String())
}
