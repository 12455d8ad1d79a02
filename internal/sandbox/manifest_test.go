package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A limit given as 0 is zero, not "the default"; the default is leaving
// the limit out. Limits that would admit nothing at zero are refused by
// name.
func TestLimitsZeroMeansZero(t *testing.T) {
	manifest := func(limits string) string {
		return `{"executor_id":"x","version":"1.0.0","capabilities":[],"limits":` + limits + `}`
	}
	m, err := ParseManifest([]byte(manifest(`{"max_list_items":0,"max_depth":0,"max_output_bytes":0,"fuel":7}`)))
	require.NoError(t, err)
	l := m.Limits.WithDefaults(DefaultLimits())
	assert.Equal(t, 0, l.MaxListItems, "zero list items, not the default 1000")
	assert.Equal(t, 0, l.MaxDepth)
	assert.Equal(t, int64(0), l.MaxOutputBytes)
	assert.Equal(t, uint64(7), l.Fuel)
	assert.Equal(t, DefaultLimits().TimeoutMs, l.TimeoutMs, "a limit left out takes the default")

	// Zero survives a second layer of defaults, and an override above it.
	over := Limits{MaxListItems: 5}.WithDefaults(m.Limits).WithDefaults(DefaultLimits())
	assert.Equal(t, 5, over.MaxListItems)
	assert.Equal(t, 0, over.MaxDepth)

	// Left out, the same limits are the defaults.
	m, err = ParseManifest([]byte(manifest(`{}`)))
	require.NoError(t, err)
	assert.Equal(t, DefaultLimits(), m.Limits.WithDefaults(DefaultLimits()))

	// An unset fuel is what the timeout that applies covers.
	assert.Equal(t, uint64(60_000_000_000), DefaultLimits().Fuel)
	assert.Equal(t, uint64(5000*defaultFuelPerMs), Limits{TimeoutMs: 5000}.WithDefaults(DefaultLimits()).Fuel)
	assert.Equal(t, uint64(5000*defaultFuelPerMs), Limits{}.WithDefaults(Limits{TimeoutMs: 5000}).WithDefaults(DefaultLimits()).Fuel)
	assert.Equal(t, uint64(3), Limits{TimeoutMs: 5000, Fuel: 3}.WithDefaults(DefaultLimits()).Fuel)
	assert.Equal(t, uint64(8), Limits{TimeoutMs: 5000}.WithDefaults(Limits{Fuel: 8}).WithDefaults(DefaultLimits()).Fuel,
		"a fuel from a layer above the defaults is kept")

	for name, want := range map[string]string{
		"timeout_ms":        "limits.timeout_ms cannot be 0: it would admit nothing (leave it out for the default)",
		"max_payload_bytes": "limits.max_payload_bytes cannot be 0",
		"fuel":              "limits.fuel cannot be 0",
		"memory_pages":      "limits.memory_pages cannot be 0",
	} {
		_, err := ParseManifest([]byte(manifest(`{"` + name + `":0}`)))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), want)
	}
	_, err = ParseManifest([]byte(manifest(`{"max_list_item":3}`)))
	assert.ErrorContains(t, err, `unknown field "max_list_item"`, "a misspelled limit is refused, not defaulted")

	// Written back, a zero limit stays written; unset ones stay out.
	b, err := json.Marshal(Limits{Fuel: 9}.mustZero(t, "max_list_items"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"fuel":9,"max_list_items":0}`, string(b))
	var back Limits
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, Limits{Fuel: 9}.mustZero(t, "max_list_items"), back)

	_, err = Limits{}.SetZero("ttl")
	assert.EqualError(t, err, `"ttl" is not a limit`)
}

func (l Limits) mustZero(t *testing.T, name string) Limits {
	t.Helper()
	l, err := l.SetZero(name)
	require.NoError(t, err)
	return l
}
