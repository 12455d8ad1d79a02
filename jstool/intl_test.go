package jstool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// intlDifferences are the calls of testdata/intl/intl.mjs whose result in
// wasmgate is not node's, and why (docs/JAVASCRIPT.md's Intl section says
// the same). TestIntlGivesWhatNodeGives fails when another call differs,
// and when one of these starts to agree.
var intlDifferences = map[string]string{
	"dtf en full+long":           `CLDR's "atTime" date-time patterns ("{1} 'at' {0}") are not in FormatJS's data: full and long dates join their time with ", "`,
	"dtf en formatRange times":   `FormatJS's formatRange repeats a day period both ends share ("12:00 AM – 5:00 AM"), where ICU writes it once`,
	"supportedValuesOf calendar": "FormatJS's DateTimeFormat formats the Gregorian calendar only (and iso8601), so only those are listed; node lists ICU's 18",
}

// runNodeIntl runs the intl fixture in node as a user's machine with an
// American English locale and UTC would.
func runNodeIntl(t *testing.T) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	cmd := exec.Command(node, "run_node.mjs", "../intl/intl.mjs")
	cmd.Dir = filepath.Join("testdata", "node")
	// Only LANG names the locale: the LC_ variables and LANGUAGE, which
	// ICU reads first, are left out.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") && !strings.HasPrefix(kv, "TZ=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TZ=UTC", "LANG=en_US.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	return out
}

func TestIntlGivesWhatNodeGives(t *testing.T) {
	testenv.GuestOnly(t)
	want := runNodeIntl(t)
	// The fixture is a sweep of 92 calls in one run (23 billion fuel,
	// most of it the first DateTimeFormat of each locale), more than one
	// tool call's default of 20 billion: it gets twice what it needs, and
	// a clock ten times what that lasts at the slowest rate measured.
	res := run(t, engine(t, sandbox.EngineWazero), filepath.Join("..", "intl", "intl.mjs"), "", `{}`,
		sandbox.Limits{Fuel: 46_000_000_000, TimeoutMs: 480_000})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	var got, node map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.NoError(t, json.Unmarshal(want, &node))
	require.Len(t, got, len(node))
	for name, n := range node {
		g, ok := got[name]
		require.True(t, ok, name)
		var gc, nc bytes.Buffer
		require.NoError(t, json.Compact(&gc, g))
		require.NoError(t, json.Compact(&nc, n))
		same := bytes.Equal(gc.Bytes(), nc.Bytes())
		why, known := intlDifferences[name]
		switch {
		case same && known:
			t.Errorf("%s now gives what node gives: remove it from intlDifferences (%s)", name, why)
		case !same && !known:
			t.Errorf("%s differs from node\nnode:     %s\nwasmgate: %s", name, nc.String(), gc.String())
		}
	}
	for name := range intlDifferences {
		assert.Contains(t, node, name, "intlDifferences names a call the fixture lacks")
	}
}

// A tool that neither names Intl nor calls a locale-sensitive method gets
// none of it: its bundle, snapshot and fuel are what they were.
func TestIntlIsBundledOnlyWhenUsed(t *testing.T) {
	testenv.GuestOnly(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	const glue, ponyfills, dateZone = "// wasmgate-node:wasmgate:internal/intl\n", "// wasmgate-node:wasmgate:lib/intl\n", "// wasmgate-node:wasmgate:internal/date_zone_name\n"
	cases := []struct {
		name, src  string
		intl, zone bool
	}{
		{"no Intl", "export function execute(p) { return p.text.trim(); }\n", false, false},
		{"names Date", "export function execute() { return String(new Date(0)); }\n", false, true},
		{"names Intl", "export function execute() { return new Intl.NumberFormat().format(1e6); }\n", true, true},
		{"calls localeCompare", "export function execute(p) { return p.a.localeCompare(p.b); }\n", true, true},
		{"calls toLocaleString through call", "export function execute(p) { return Number.prototype.toLocaleString.call(p.n); }\n", true, true},
		{"a toLocaleString property is not a call", "export const x = { toLocaleString: 1 };\nexport function execute() { return x.toLocaleString; }\n", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := jstool.BundleFile(write(strings.ReplaceAll(c.name, " ", "_")+".mjs", c.src))
			require.NoError(t, err)
			src := string(b.Source)
			assert.Equal(t, c.intl, strings.Contains(src, glue), "Intl's module")
			assert.Equal(t, c.intl, strings.Contains(src, ponyfills), "FormatJS's ponyfills")
			assert.Equal(t, c.zone, strings.Contains(src, dateZone), "the zone name's module")
			if !c.intl {
				assert.Less(t, len(src), 20_000)
			}
		})
	}
}

// The same Intl calls give the same output and fuel on every run and
// engine: the data, the clock and the zone are the sandbox's, never the
// host's.
func TestIntlIsDeterministicOnEveryEngine(t *testing.T) {
	testenv.GuestOnly(t)
	ctx := context.Background()
	// A few calls, not the whole table: the interpreter engine runs it too.
	file := filepath.Join(t.TempDir(), "tool.mjs")
	require.NoError(t, os.WriteFile(file, []byte(`export function execute(p) {
  const d = new Date(Date.UTC(2024, 0, 15, 13, 5, 9));
  return [d.toLocaleString(), new Intl.NumberFormat("en-US", { style: "currency", currency: "EUR" }).format(p.n),
    new Intl.DateTimeFormat("en-US", { timeStyle: "short", timeZone: "Asia/Tokyo" }).format(d),
    ["b", "a", "C"].sort((x, y) => x.localeCompare(y)), String(d)];
}
`), 0o644))
	b, err := jstool.BundleFile(file)
	require.NoError(t, err)
	in := []byte(`{"n":1234.5}`)
	var first sandbox.Outcome
	for _, name := range enginetest.JSEnginesCompared() {
		if name == sandbox.EngineWazeroInterp {
			// Loading Intl (8·10⁹ fuel) outlasts LoadLimits' clock on the
			// interpreter; the compiled engines are the ones compared.
			continue
		}
		tool, err := jstool.Load(ctx, engine(t, name), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "intl", Version: "1.0.0"}})
		require.NoError(t, err, name)
		t.Logf("%s: bundle %d bytes, snapshot %d bytes, load fuel %d", name, len(b.Source), tool.SnapshotBytes(), tool.LoadFuel())
		for range 2 {
			// Fuel far beyond what the calls need, and a clock far beyond
			// what it lasts, so that fuel alone could decide.
			out, err := tool.Execute(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in),
				Limits: sandbox.Limits{Fuel: 20_000_000_000, TimeoutMs: 3_000_000}})
			require.NoError(t, err)
			require.Equal(t, sandbox.Completed, out.Kind, out.Message)
			if first.Output == nil {
				first = out
				t.Logf("%s: the calls cost %d fuel", name, out.FuelUsed)
				continue
			}
			assert.Equal(t, string(first.Output), string(out.Output), name)
			assert.Equal(t, first.FuelUsed, out.FuelUsed, name)
		}
	}
}
