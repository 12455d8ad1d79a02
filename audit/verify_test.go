package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireChainError asserts that err is a *ChainError about line, with a
// reason containing reason.
func requireChainError(t *testing.T, err error, line int, reason string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrChainBroken)
	var ce *ChainError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, line, ce.Line, "line (%v)", err)
	assert.Contains(t, ce.Reason, reason)
}

// canonicalLine re-encodes a decoded line, so an edit leaves valid canonical
// JSON and only the chain can tell.
func canonicalLine(t *testing.T, members map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(members)
	require.NoError(t, err)
	c, err := Canonicalize(raw)
	require.NoError(t, err)
	return string(c.Bytes) + "\n"
}

func decodeLine(t *testing.T, line string) map[string]any {
	t.Helper()
	var members map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &members))
	return members
}

func TestVerifyIntactLog(t *testing.T) {
	for _, n := range []int{0, 1, 2, 50} {
		lines := memoryLog(t, n)
		rep, err := Verify(strings.NewReader(strings.Join(lines, "")))
		require.NoError(t, err)
		assert.Equal(t, n, rep.Records)
		if n == 0 {
			assert.Equal(t, GenesisPrev, rep.LastHash)
		} else {
			assert.Equal(t, decodeLine(t, lines[n-1])["hash"], rep.LastHash)
		}
	}
}

func TestVerifyLongLines(t *testing.T) {
	m := NewMemorySink()
	r := testRecord(1)
	r.Action = strings.Repeat("a", 200_000) // longer than the reader's buffer
	_, err := m.Append(t.Context(), r)
	require.NoError(t, err)
	_, err = m.Append(t.Context(), testRecord(2))
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	rep, err := Verify(&buf)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Records)
}

func TestVerifyDetectsEditOfEveryField(t *testing.T) {
	const n = 5
	lines := memoryLog(t, n)
	for i := range n {
		for field := range decodeLine(t, lines[i]) {
			members := decodeLine(t, lines[i])
			switch v := members[field].(type) {
			case string:
				if isDigest(v) {
					// Still a well-formed digest, just not the right one.
					members[field] = Digest([]byte(v))
				} else {
					members[field] = v + "x"
				}
			case float64:
				members[field] = v + 1
			case []any:
				members[field] = append(v, "EXTRA_CODE")
			case nil:
				members[field] = Digest(nil)
			default:
				t.Fatalf("unexpected %T in %s", v, field)
			}
			edited := slicesWith(lines, i, canonicalLine(t, members))
			_, err := Verify(strings.NewReader(edited))
			requireChainError(t, err, i+1, "")
		}
	}
}

// slicesWith joins lines with lines[i] replaced.
func slicesWith(lines []string, i int, line string) string {
	out := append([]string(nil), lines...)
	out[i] = line
	return strings.Join(out, "")
}

func TestVerifyDetectsTampering(t *testing.T) {
	const n = 6
	lines := memoryLog(t, n)
	join := func(ls ...string) string { return strings.Join(ls, "") }
	without := func(k int) string { // 1-based
		return join(append(append([]string(nil), lines[:k-1]...), lines[k:]...)...)
	}
	swapped := func(k int) string { // lines k and k+1, 1-based
		ls := append([]string(nil), lines...)
		ls[k-1], ls[k] = ls[k], ls[k-1]
		return join(ls...)
	}
	forged := func(k int, edit func(*Record)) string {
		var r Record
		require.NoError(t, json.Unmarshal([]byte(lines[k-1]), &r))
		edit(&r)
		r.Hash = GenesisPrev
		line, err := encodeRecord(&r, formOf(&r))
		require.NoError(t, err)
		r.Hash = Digest(appendHashed(nil, line))
		line, err = encodeRecord(&r, formOf(&r))
		require.NoError(t, err)
		return slicesWith(lines, k-1, string(line)+"\n")
	}
	last := lines[n-1]

	type tamper struct {
		name   string
		log    string
		line   int
		reason string
	}
	cases := []tamper{
		{"last line truncated", join(lines[:n-1]...) + last[:len(last)/2], n, "torn last line"},
		{"last line cut after its JSON", join(lines[:n-1]...) + strings.TrimSuffix(last, "\n"), n, "torn last line"},
		{"last line a single byte", join(lines[:n-1]...) + "{", n, "torn last line"},
		{"garbage line", join(lines...) + "not json\n", n + 1, "invalid JSON"},
		{"empty line", join(lines[:2]...) + "\n" + join(lines[2:]...), 3, "invalid JSON"},
		{"CRLF line end", join(lines[:2]...) + strings.TrimSuffix(lines[2], "\n") + "\r\n" + join(lines[3:]...), 3, "not canonical"},
		{"pretty-printed line", slicesWith(lines, 3, strings.Replace(lines[3], `":`, `": `, -1)), 4, "not canonical"},
		{"member added", func() string {
			m := decodeLine(t, lines[1])
			m["raw_input"] = "secret"
			return slicesWith(lines, 1, canonicalLine(t, m))
		}(), 2, "not an audit record"},
		{"member removed", func() string {
			m := decodeLine(t, lines[1])
			delete(m, "trace_id")
			return slicesWith(lines, 1, canonicalLine(t, m))
		}(), 2, "not an audit record"},
		{"member of the wrong type", func() string {
			m := decodeLine(t, lines[1])
			m["seq"] = "2"
			return slicesWith(lines, 1, canonicalLine(t, m))
		}(), 2, "not an audit record"},
		{"byte flipped", slicesWith(lines, 4, strings.Replace(lines[4], "text_upper", "text_lower", 1)), 5, "hash mismatch"},
		{"duplicate line", join(lines[:3]...) + lines[2] + join(lines[3:]...), 4, "seq out of order"},
		{"forged prev", forged(3, func(r *Record) { r.Prev = Digest([]byte("elsewhere")) }), 3, "prev mismatch"},
		{"forged first prev", forged(1, func(r *Record) { r.Prev = Digest(nil) }), 1, "prev mismatch"},
		{"forged seq", forged(3, func(r *Record) { r.Seq = 7 }), 3, "seq gap"},
	}
	for k := 1; k < n; k++ {
		cases = append(cases,
			tamper{"line removed/" + string(rune('0'+k)), without(k), k, "seq gap"},
			tamper{"lines swapped/" + string(rune('0'+k)), swapped(k), k, "seq out of order"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Verify(strings.NewReader(tc.log))
			requireChainError(t, err, tc.line, tc.reason)
			assert.Equal(t, tc.line-1, rep.Records, "the report covers the intact prefix")
		})
	}
}

func TestVerifyTrailingRemovalNeedsTheHead(t *testing.T) {
	lines := memoryLog(t, 4)
	full, err := Verify(strings.NewReader(strings.Join(lines, "")))
	require.NoError(t, err)
	cut, err := Verify(strings.NewReader(strings.Join(lines[:3], "")))
	require.NoError(t, err, "a log cut at a line boundary is a valid shorter log")
	assert.NotEqual(t, full.LastHash, cut.LastHash, "only a recorded head reveals it")
}

func TestVerifyReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := Verify(iotest.DataErrReader(iotest.ErrReader(boom)))
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrChainBroken)
}
