package weborigin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/weborigin"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "https://app.example", want: "https://app.example"},
		{in: "HTTPS://App.Example:443/", want: "https://app.example"},
		{in: "http://localhost:80", want: "http://localhost"},
		{in: "http://localhost:3000", want: "http://localhost:3000"},
		{in: "http://[::1]:8080", want: "http://[::1]:8080"},
		{in: "chrome-extension://abcdef", want: "chrome-extension://abcdef"},
		{in: "null", err: `"null" is the origin of every sandboxed frame and local file`},
		{in: "app.example", err: `"app.example" is not an origin: write scheme://host[:port], as https://app.example`},
		{in: "https://app.example/path", err: "without a path, query or user"},
		{in: "https://user@app.example", err: "without a path, query or user"},
		{in: "https://*.example", err: "patterns are not supported"},
		{in: "", err: "is not an origin"},
	} {
		got, err := weborigin.Parse(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestSet(t *testing.T) {
	s := weborigin.NewSet([]string{"https://app.example", "http://localhost:3000", "not an origin"})
	assert.True(t, s.Contains("https://app.example"))
	assert.True(t, s.Contains("https://APP.example:443"))
	assert.True(t, s.Contains("http://localhost:3000"))
	assert.False(t, s.Contains("http://localhost:3001"))
	assert.False(t, s.Contains("http://app.example"), "another scheme is another origin")
	assert.False(t, s.Contains("https://app.example.evil"))
	assert.False(t, s.Contains("null"))
	assert.Len(t, s, 2, "the entry that is not an origin is left out")
}

func TestIsLoopback(t *testing.T) {
	for origin, want := range map[string]bool{
		"http://localhost:5173":       true,
		"http://app.localhost":        true,
		"http://127.0.0.1:8080":       true,
		"http://127.1.2.3":            true,
		"http://[::1]:3000":           true,
		"https://localhost.evil":      false,
		"http://evil.example":         false,
		"http://10.0.0.1":             false,
		"http://[::ffff:7f00:1]:3000": true,
		"null":                        false,
	} {
		assert.Equal(t, want, weborigin.IsLoopback(origin), origin)
	}
}
