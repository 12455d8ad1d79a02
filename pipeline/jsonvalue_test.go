package pipeline

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// decodeCanonical gives what the schema library's own decoder gives, on
// canonical JSON.
func TestDecodeCanonicalSameAsLibrary(t *testing.T) {
	for _, src := range []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5`, `1e+30`, `9007199254740991`, `123456789.125`,
		`"plain"`, `"é😀 \"quoted\" back\\slash \n\u0001"`,
		`{"a":[1,2,{"b":null,"c":"x"}],"d":{"e":[]},"f":-0.25}`,
		`[[[[["deep"]]]],{"k":[true,false]}]`,
	} {
		c, err := audit.Canonicalize([]byte(src))
		require.NoError(t, err, src)
		got, err := decodeCanonical(c.Bytes)
		require.NoError(t, err, src)
		want, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Bytes))
		require.NoError(t, err, src)
		assert.Equal(t, want, got, src)
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a" :1}`, `tru`, `"open`, `1 `, `{}x`, `-`} {
		_, err := decodeCanonical([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}
