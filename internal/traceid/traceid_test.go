package traceid_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmgate/wasmgate/internal/traceid"
)

func TestParse(t *testing.T) {
	const want = "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"dashed", want, want, true},
		{"upper case", "4BF92F35-77B3-4DA6-A3CE-929D0E0E4736", want, true},
		{"no dashes", "4bf92f3577b34da6a3ce929d0e0e4736", want, true},
		{"some dashes", "4bf92f35-77b34da6a3ce929d0e0e4736", want, true},
		{"too short", "4bf92f35-77b3-4da6-a3ce-929d0e0e473", "", false},
		{"not hex", "4bf92f35-77b3-4da6-a3ce-929d0e0e473g", "", false},
		{"space around", " " + want, "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := traceid.Parse(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValid(t *testing.T) {
	assert.True(t, traceid.Valid("4bf92f35-77b3-4da6-a3ce-929d0e0e4736"))
	assert.True(t, traceid.Valid("4BF92F35-77B3-4DA6-A3CE-929D0E0E4736"), "either case, as given")
	assert.False(t, traceid.Valid("4bf92f3577b34da6a3ce929d0e0e4736"), "an ActionRequest's trace_id has its dashes")
	assert.False(t, traceid.Valid(""))
}

func TestFromTraceparent(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"valid", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", true},
		{"space around", "  00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ", "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", true},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
		{"upper case", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", false},
		{"no parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-01", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := traceid.FromTraceparent(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNew(t *testing.T) {
	a, b := traceid.New(), traceid.New()
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, a, "a version 4 UUID")
	assert.True(t, traceid.Valid(a))
	assert.NotEqual(t, a, b)
}
