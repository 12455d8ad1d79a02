package audit_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// jcsCase is one RFC 8785 vector from testdata/jcs.
type jcsCase struct {
	name string
	// A document vector: input JSON text and the exact canonical bytes.
	in, want []byte
	// A number vector (Appendix B): IEEE 754 bits, their JCS text, and what
	// Canonicalize does with that text ("same", "refused", "nonfinite").
	bits    uint64
	text    string
	outcome string
}

func loadJCSCases(t *testing.T) []jcsCase {
	t.Helper()
	var cases []jcsCase
	inputs, err := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := filepath.Base(in)
		inBytes, err := os.ReadFile(in)
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("testdata", "jcs", "output", name))
		require.NoError(t, err)
		cases = append(cases, jcsCase{name: name, in: inBytes, want: want})
	}

	f, err := os.Open(filepath.Join("testdata", "jcs", "numbers.txt"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		require.Len(t, fields, 3, "numbers.txt: %q", sc.Text())
		raw, err := hex.DecodeString(fields[0])
		require.NoError(t, err)
		cases = append(cases, jcsCase{
			name:    "number/" + fields[0],
			bits:    binary.BigEndian.Uint64(raw),
			text:    fields[1],
			outcome: fields[2],
		})
	}
	require.NoError(t, sc.Err())
	return cases
}

func TestJCSVectors(t *testing.T) {
	for _, tc := range loadJCSCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in != nil {
				got, err := audit.Canonicalize(tc.in)
				require.NoError(t, err)
				assert.Equal(t, string(tc.want), string(got.Bytes))
				return
			}
			f := math.Float64frombits(tc.bits)
			if tc.outcome == "nonfinite" {
				assert.Panics(t, func() { audit.AppendNumber(nil, f) })
				return
			}
			assert.Equal(t, tc.text, string(audit.AppendNumber(nil, f)))

			// The same double, spelled differently, canonicalizes to the
			// RFC's text too (or is refused, consistently).
			for _, spelling := range []string{tc.text, strconv.FormatFloat(f, 'e', 20, 64), strconv.FormatFloat(f, 'E', -1, 64)} {
				got, err := audit.Canonicalize([]byte(spelling))
				switch tc.outcome {
				case "same":
					require.NoError(t, err, spelling)
					assert.Equal(t, tc.text, string(got.Bytes), spelling)
				case "refused":
					require.ErrorIs(t, err, audit.ErrNotJSON, spelling)
				default:
					t.Fatalf("numbers.txt: unknown outcome %q", tc.outcome)
				}
			}
		})
	}
}

func TestAppendNumber(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{100, "100"},
		{123456789, "123456789"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e21, "1.5e+21"},
		{1e-6, "0.000001"},
		{1.5e-6, "0.0000015"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{123e-20, "1.23e-18"},
		{0.5, "0.5"},
		{12.5e-3, "0.0125"},
		{9007199254740993, "9007199254740992"},
		{18014398509481984, "18014398509481984"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
	} {
		assert.Equal(t, tc.want, string(audit.AppendNumber(nil, tc.in)), "%v", tc.in)
	}
	assert.Equal(t, "x:1.5", string(audit.AppendNumber([]byte("x:"), 1.5)), "appends to dst")
	assert.Panics(t, func() { audit.AppendNumber(nil, math.NaN()) })
	assert.Panics(t, func() { audit.AppendNumber(nil, math.Inf(1)) })
	assert.Panics(t, func() { audit.AppendNumber(nil, math.Inf(-1)) })
}

func TestCanonicalizeAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"scalar with whitespace", " \t\r\n true \n", "true"},
		{"null", "null", "null"},
		{"false", "false", "false"},
		{"empty object", " { } ", "{}"},
		{"empty array", "[ ]", "[]"},
		{"string", `"abc"`, `"abc"`},
		{"whitespace removed", "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }", `{"a":[1,2],"b":{}}`},
		{"keys sorted", `{"b":1,"a":2,"c":3}`, `{"a":2,"b":1,"c":3}`},
		{"nested keys sorted", `{"z":{"y":1,"x":[{"d":1,"c":2}]},"a":0}`, `{"a":0,"z":{"x":[{"c":2,"d":1}],"y":1}}`},
		{"unsorted inside sorted inside unsorted",
			`{"z":[{"b":1,"a":{"d":[{"y":1,"x":2}],"c":3}}],"m":{"k":{"j":1,"i":2}},"a":0}`,
			`{"a":0,"m":{"k":{"i":2,"j":1}},"z":[{"a":{"c":3,"d":[{"x":2,"y":1}]},"b":1}]}`},
		{"prefix sorts first", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"escaped key sorts by its value", `{"\n":1,"A":2,"\u0000":3}`, `{"\u0000":3,"\n":1,"A":2}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"minus zero", `-0`, `0`},
		{"minus zero float", `-0.0e5`, `0`},
		{"max safe integer", `9007199254740992`, `9007199254740992`},
		{"min safe integer", `-9007199254740992`, `-9007199254740992`},
		{"integer-valued float", `4.0`, `4`},
		{"exponent integer", `1E2`, `100`},
		{"large with exponent", `1e21`, `1e+21`},
		{"huge with exponent", `1.5E300`, `1.5e+300`},
		{"small", `0.000001`, `0.000001`},
		{"smaller", `0.0000001`, `1e-7`},
		{"underflow rounds to zero", `1e-400`, `0`},
		{"fraction beyond 2^53 rounds", `9007199254740993.0`, `9007199254740992`},
		{"long mantissa", `0.1000000000000000000000000000000000001`, `0.1`},
		{"escapes resolved", `"\/\u0041\u00e9\"\\"`, `"/Aé\"\\"`},
		{"short escapes kept", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"other controls as lowercase hex", `"\u0000\u001F\u000B"`, `"\u0000\u001f\u000b"`},
		{"DEL literal", `"\u007f"`, "\"\x7f\""},
		{"non-ASCII literal", `"\u20AC"`, `"€"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"non-BMP literal", `"😀"`, `"😀"`},
		{"noncharacter kept", `"\uffff"`, "\"\uffff\""},
		{"no normalization", `["\u00e9","e\u0301"]`, "[\"é\",\"e\u0301\"]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := audit.Canonicalize([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got.Bytes))
		})
	}
}

func TestCanonicalizeEveryControlCharacter(t *testing.T) {
	short := map[rune]string{'\b': `\b`, '\t': `\t`, '\n': `\n`, '\f': `\f`, '\r': `\r`}
	for r := rune(0); r < 0x20; r++ {
		in := `"\u` + strconv.FormatInt(int64(r)|0x10000, 16)[1:] + `"`
		want, ok := short[r]
		if !ok {
			want = `\u00` + strconv.FormatInt(int64(r)|0x100, 16)[1:]
		}
		got, err := audit.Canonicalize([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, `"`+want+`"`, string(got.Bytes), in)
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		offset   int
		msg      string
	}{
		{"empty", "", 0, "unexpected end of input"},
		{"only whitespace", "  \n", 3, "unexpected end of input"},
		{"byte order mark", "\xef\xbb\xbf{}", 0, "byte order mark"},
		{"unclosed object", `{`, 1, "expected object member name"},
		{"unclosed array", `[1`, 2, "unexpected end of input"},
		{"trailing comma in array", `[1,]`, 3, "unexpected character"},
		{"trailing comma in object", `{"a":1,}`, 7, "expected object member name"},
		{"single quotes", `{'a':1}`, 1, "expected object member name"},
		{"missing colon", `{"a" 1}`, 5, "expected ':'"},
		{"missing comma", `[1 2]`, 3, "expected ',' or ']'"},
		{"two top-level values", `1 2`, 2, "unexpected data after top-level value"},
		{"comment", `// x`, 0, "unexpected character"},
		{"bare word", `nil`, 0, "invalid literal"},
		{"truncated literal", `tru`, 0, "invalid literal"},
		{"leading zero", `01`, 1, "unexpected data after top-level value"},
		{"leading plus", `+1`, 0, "unexpected character"},
		{"bare dot", `.5`, 0, "unexpected character"},
		{"trailing dot", `1.`, 2, "digit expected after '.'"},
		{"empty exponent", `1e`, 2, "digit expected in exponent"},
		{"lone minus", `-`, 1, "invalid number"},
		{"hex number", `0x10`, 1, "unexpected data after top-level value"},
		{"NaN", `NaN`, 0, "NaN and Infinity"},
		{"Infinity", `[Infinity]`, 1, "NaN and Infinity"},
		{"minus Infinity", `-Infinity`, 0, "NaN and Infinity"},
		{"overflow", `1e309`, 0, "overflows float64"},
		{"negative overflow", `[-1.8e308]`, 1, "overflows float64"},
		{"integer above 2^53", `9007199254740993`, 0, "beyond ±2^53"},
		{"integer below -2^53", `-9007199254740993`, 0, "beyond ±2^53"},
		{"20-digit integer", `{"id":12345678901234567890}`, 6, "beyond ±2^53"},
		{"integer form beyond 2^53 via exponent", `1e20`, 0, "beyond ±2^53"},
		{"integer form beyond 2^53 via fraction", `123456789012345678.5`, 0, "beyond ±2^53"},
		{"unterminated string", `"abc`, 0, "unterminated string"},
		{"raw newline in string", "\"a\nb\"", 2, "control character"},
		{"raw tab in string", "\"a\tb\"", 2, "control character"},
		{"invalid escape", `"\x41"`, 1, "invalid escape"},
		{"short unicode escape", `"\u12"`, 1, `invalid \u escape`},
		{"non-hex unicode escape", `"\u12G4"`, 1, `invalid \u escape`},
		{"invalid UTF-8", "\"a\xffb\"", 2, "invalid UTF-8"},
		{"truncated UTF-8", "\"\xe2\x82\"", 1, "invalid UTF-8"},
		{"overlong UTF-8", "\"\xc0\xaf\"", 1, "invalid UTF-8"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", 1, "invalid UTF-8"},
		{"UTF-8 outside strings", "\xc3\xa9", 0, "unexpected character"},
		{"lone high surrogate", `"\uD800"`, 1, "lone surrogate"},
		{"lone low surrogate", `"\uDC00"`, 1, "lone surrogate"},
		{"high surrogate then letter", `"\uD800\u0041"`, 1, "lone surrogate"},
		{"high surrogate then text", `"\uD83Dx"`, 1, "lone surrogate"},
		{"reversed pair", `"\uDE00\uD83D"`, 1, "lone surrogate"},
		{"two high surrogates", `"\uD83D\uD83D"`, 1, "lone surrogate"},
		{"lone surrogate in key", `{"\udfff":1}`, 2, "lone surrogate"},
		{"duplicate key", `{"a":1,"a":2}`, 7, "duplicate object key"},
		{"duplicate key after unescaping", `{"a":1,"\u0061":2}`, 7, "duplicate object key"},
		{"duplicate key out of order", `{"b":1,"a":2,"b":3}`, 13, "duplicate object key"},
		{"duplicate escaped key out of order", `{"\n":1,"a":2,"\u000a":3}`, 14, "duplicate object key"},
		{"duplicate nested key", `[{"x":{"k":1,"k":1}}]`, 13, "duplicate object key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Canonicalize([]byte(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, audit.ErrNotJSON)
			assert.NotErrorIs(t, err, audit.ErrTooDeep)
			var se *audit.SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.offset, se.Offset, "offset (%v)", err)
			assert.Contains(t, se.Msg, tc.msg)
		})
	}
}

func TestCanonicalizeErrorNeverQuotesInput(t *testing.T) {
	_, err := audit.Canonicalize([]byte(`{"password":"hunter2","password":"hunter2"}`))
	require.ErrorIs(t, err, audit.ErrNotJSON)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.NotContains(t, err.Error(), "password")
}

func TestCanonicalizeDepthLimit(t *testing.T) {
	nest := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	t.Run("MaxNesting arrays accepted", func(t *testing.T) {
		got, err := audit.Canonicalize(nest(audit.MaxNesting, "[", "]"))
		require.NoError(t, err)
		assert.Equal(t, audit.MaxNesting, got.Depth)
	})
	t.Run("MaxNesting objects accepted", func(t *testing.T) {
		in := strings.Repeat(`{"a":`, audit.MaxNesting-1) + "{}" + strings.Repeat("}", audit.MaxNesting-1)
		got, err := audit.Canonicalize([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, audit.MaxNesting, got.Depth)
	})
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"one past the limit", nest(audit.MaxNesting+1, "[", "]")},
		{"objects past the limit", []byte(strings.Repeat(`{"a":`, audit.MaxNesting) + "{}")},
		{"a million unclosed brackets", []byte(strings.Repeat("[", 1_000_000))},
		{"valid prefix, then too deep", []byte(`[1,{"a":` + strings.Repeat("[", audit.MaxNesting))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Canonicalize(tc.in)
			require.ErrorIs(t, err, audit.ErrTooDeep)
			assert.NotErrorIs(t, err, audit.ErrNotJSON)
			var se *audit.SyntaxError
			require.ErrorAs(t, err, &se)
		})
	}
}

func TestCanonicalizeShape(t *testing.T) {
	for _, tc := range []struct {
		in             string
		depth, longest int
	}{
		{`1`, 0, 0},
		{`"s"`, 0, 0},
		{`null`, 0, 0},
		{`[]`, 1, 0},
		{`{}`, 1, 0},
		{`[1]`, 1, 1},
		{`[1,2,3]`, 1, 3},
		{`{"a":1,"b":2,"c":3,"d":4}`, 1, 0},
		{`{"a":[{}]}`, 3, 1},
		{`[[1,2,3],[1]]`, 2, 3},
		{`[[1],[1,2,3,4,5],[]]`, 2, 5},
		{`{"a":[1,2],"b":[[],[1,2,3,4]]}`, 3, 4},
		{`[[[[[]]]]]`, 5, 1},
		{`{"a":{"b":{"c":"d"}}}`, 3, 0},
	} {
		got, err := audit.Canonicalize([]byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.depth, got.Depth, "depth of %s", tc.in)
		assert.Equal(t, tc.longest, got.LongestList, "longest list of %s", tc.in)
	}
}

func TestCanonicalizeSpellingIndependence(t *testing.T) {
	// One value, many spellings: one canonical form, one digest.
	spellings := []string{
		`{"n":[1,2.5,-0,1e2],"s":"é\n","o":{"y":true,"x":null}}`,
		`{"o":{"x":null,"y":true},"s":"\u00e9\u000a","n":[1.0,25e-1,0,100]}`,
		"\n{ \"s\" : \"\\u00E9\\n\" ,\r\n\t\"o\" : { \"y\" : true , \"x\" : null } , \"n\" : [ 10E-1 , 2.50 , -0.0 , 1E+2 ] }\n",
	}
	want := `{"n":[1,2.5,0,100],"o":{"x":null,"y":true},"s":"é\n"}`
	for _, s := range spellings {
		got, err := audit.Canonicalize([]byte(s))
		require.NoError(t, err, s)
		assert.Equal(t, want, string(got.Bytes), s)
		assert.Equal(t, audit.Digest([]byte(want)), audit.Digest(got.Bytes))
	}
}

func TestCanonicalizeSortsByUTF16(t *testing.T) {
	// U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FFFF even though
	// its code point (and its UTF-8 bytes) are larger.
	for _, in := range []string{
		`{"\uffff":1,"\ud83d\ude00":2}`,
		`{"\ud83d\ude00":2,"\uffff":1}`,
		"{\"\uffff\":1,\"\U0001F600\":2}",
	} {
		got, err := audit.Canonicalize([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, "{\"\U0001F600\":2,\"\uffff\":1}", string(got.Bytes), in)
	}
	for _, tc := range []struct{ in, want string }{
		// Below the surrogate range code point order and UTF-16 order agree.
		{`{"\ud7ff":1,"\ud800\udc00":2}`, "{\"\ud7ff\":1,\"\U00010000\":2}"},
		// Between supplementary characters too.
		{`{"\udbff\udfff":1,"\ud800\udc00":2}`, "{\"\U00010000\":2,\"\U0010FFFF\":1}"},
		// U+E000 is the first BMP character after the surrogates.
		{`{"\ue000":1,"\udbff\udfff":2}`, "{\"\U0010FFFF\":2,\"\ue000\":1}"},
		// Comparison goes on past a common prefix.
		{`{"a\uffff":1,"a\ud83d\ude00":2,"a":3}`, "{\"a\":3,\"a\U0001F600\":2,\"a\uffff\":1}"},
	} {
		got, err := audit.Canonicalize([]byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, string(got.Bytes), tc.in)
	}
}

func TestCanonicalizeLargeObject(t *testing.T) {
	// Many members in reverse order exercise the sort-and-rewrite path with
	// nested objects inside the members being moved.
	var sb strings.Builder
	sb.WriteString("{")
	for i := 999; i >= 0; i-- {
		if i != 999 {
			sb.WriteString(",")
		}
		sb.WriteString(`"k` + strconv.Itoa(i) + `":{"z":` + strconv.Itoa(i) + `,"a":[` + strconv.Itoa(i) + `]}`)
	}
	sb.WriteString("}")
	got, err := audit.Canonicalize([]byte(sb.String()))
	require.NoError(t, err)

	var v map[string]any
	require.NoError(t, json.Unmarshal(got.Bytes, &v))
	assert.Len(t, v, 1000)
	again, err := audit.Canonicalize(got.Bytes)
	require.NoError(t, err)
	assert.Equal(t, string(got.Bytes), string(again.Bytes))
	assert.True(t, strings.HasPrefix(string(got.Bytes), `{"k0":{"a":[0],"z":0},"k1":{"a":[1],"z":1},"k10":`))
}

func TestCanonicalizeDeepUnsortedObjects(t *testing.T) {
	// Every level is out of order. Reordering each object as it closed
	// would copy the inner levels once per ancestor: quadratic work from a
	// linear input. The test pins the result; BenchmarkCanonicalize/deep
	// shows the cost stays linear.
	n := audit.MaxNesting
	in := strings.Repeat(`{"b":`, n) + "0" + strings.Repeat(`,"a":1}`, n)
	want := strings.Repeat(`{"a":1,"b":`, n) + "0" + strings.Repeat("}", n)
	got, err := audit.Canonicalize([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, want, string(got.Bytes))
	assert.Equal(t, n, got.Depth)
}

func TestCanonicalizeDoesNotRetainInput(t *testing.T) {
	in := []byte(`{"b":[1,2],"a":"x"}`)
	got, err := audit.Canonicalize(in)
	require.NoError(t, err)
	want := string(got.Bytes)
	copy(in, strings.Repeat("?", len(in)))
	_, err = audit.Canonicalize([]byte(`{"other":"value","more":[true]}`))
	require.NoError(t, err)
	assert.Equal(t, want, string(got.Bytes), "result must not alias input or pooled buffers")
}

func FuzzCanonicalize(f *testing.F) {
	seeds := []string{
		`{}`, `[]`, `0`, `-0`, `1e21`, `1e-7`, `"\ud83d\ude00"`, `{"b":1,"a":2}`,
		`{"a":1,"\u0061":2}`, `"\uD800"`, `[1,[2,[3]]]`, `9007199254740993`, `1e400`,
		`{"\uffff":1,"\ud83d\ude00":2}`, `[0.1,1.5e300,123456789.125]`, "\"\xff\"",
		`{"z":{"y":{"x":[{"b":null,"a":true}]}}}`, ` [ "\u0000\u001f\\\/" ] `,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	if inputs, err := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json")); err == nil {
		for _, p := range inputs {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := audit.Canonicalize(raw)
		if err != nil {
			if !errors.Is(err, audit.ErrNotJSON) && !errors.Is(err, audit.ErrTooDeep) {
				t.Fatalf("error matches no sentinel: %v", err)
			}
			var se *audit.SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(raw) {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted input encoding/json rejects: %q", raw)
		}
		if !json.Valid(got.Bytes) {
			t.Fatalf("output is not JSON: %q -> %q", raw, got.Bytes)
		}
		again, err := audit.Canonicalize(got.Bytes)
		if err != nil {
			t.Fatalf("output refused: %q -> %q: %v", raw, got.Bytes, err)
		}
		if string(again.Bytes) != string(got.Bytes) {
			t.Fatalf("not a fixed point: %q -> %q -> %q", raw, got.Bytes, again.Bytes)
		}
		if again.Depth != got.Depth || again.LongestList != got.LongestList {
			t.Fatalf("shape changed: %+v vs %+v", got, again)
		}
		// Same value as encoding/json sees it (duplicates, lone surrogates
		// and bad UTF-8, where it differs, are refused above).
		var a, b any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if err := json.Unmarshal(got.Bytes, &b); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %q -> %q", raw, got.Bytes)
		}
	})
}

func BenchmarkCanonicalize(b *testing.B) {
	payloads := map[string]string{
		"small": `{"text":"hello, world","upper":true,"n":42}`,
		"request": `{"action":"text_upper@1.2.0","payload":{"items":[{"id":1,"name":"alpha","tags":["x","y"],"score":0.75},` +
			`{"id":2,"name":"beta","tags":[],"score":1e-7},{"id":3,"name":"gamma \u00e9","tags":["z"],"score":12.5}],` +
			`"options":{"locale":"en-US","limit":100,"strict":false}},"trace_id":"0b6c1c5e-2d0a-4a8f-9d59-4b8a0c1b2f3e",` +
			`"ts_utc":"2025-01-01T00:00:00Z"}`,
		"unsorted": `{"z":1,"y":2,"x":3,"w":{"d":4,"c":5,"b":6,"a":7},"v":[{"q":1,"p":2}],"u":"text","t":null,"s":true}`,
	}
	var big strings.Builder
	big.WriteString(`{"rows":[`)
	for i := range 1000 {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`{"id":` + strconv.Itoa(i) + `,"label":"row ` + strconv.Itoa(i) + `","value":` + strconv.FormatFloat(float64(i)/7, 'g', -1, 64) + `,"ok":true}`)
	}
	big.WriteString(`]}`)
	payloads["64KiB"] = big.String()
	payloads["deep"] = strings.Repeat(`{"b":`, 5000) + "0" + strings.Repeat(`,"a":1}`, 5000)
	for _, name := range []string{"small", "request", "unsorted", "64KiB", "deep"} {
		in := []byte(payloads[name])
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := audit.Canonicalize(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendNumber(b *testing.B) {
	buf := make([]byte, 0, 32)
	for _, f := range []float64{42, 333333333.3333333, 1e-7, 1.7976931348623157e+308} {
		b.Run(strconv.FormatFloat(f, 'g', -1, 64), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = audit.AppendNumber(buf[:0], f)
			}
		})
	}
}

func TestCanonicalizeDecimalsMatchFloatRoundTrip(t *testing.T) {
	// Decimals are copied without a float round trip when that is provably
	// the same; compare against the round trip on many shapes.
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int, lead bool) string {
		var sb strings.Builder
		for i := range n {
			d := rng.IntN(10)
			if i == 0 && lead && d == 0 {
				d = 1 + rng.IntN(9)
			}
			sb.WriteByte(byte('0' + d))
		}
		return sb.String()
	}
	for range 200_000 {
		intPart := "0"
		if n := rng.IntN(16); n > 0 {
			intPart = digits(n, true)
		}
		frac := strings.Repeat("0", rng.IntN(8)) + digits(1+rng.IntN(17), false)
		lit := intPart + "." + frac
		if rng.IntN(2) == 0 {
			lit = "-" + lit
		}
		f, err := strconv.ParseFloat(lit, 64)
		require.NoError(t, err)
		got, err := audit.Canonicalize([]byte(lit))
		require.NoError(t, err, lit)
		require.Equal(t, string(audit.AppendNumber(nil, f)), string(got.Bytes), lit)
	}
}
