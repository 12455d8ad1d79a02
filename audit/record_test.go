package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verdictMembers are the members of an action_audit record: the schema
// docs/DESIGN.md lists, with env_digest and attempt_hash.
var verdictMembers = []string{
	"action", "attempt_hash", "digest_alg", "duration_ms", "env_digest", "event_type", "executor_id",
	"executor_version", "fuel_used", "hash", "input_digest", "module_digest", "output_digest", "prev",
	"reason_codes", "seq", "status", "trace_id", "ts_utc",
}

// attemptMembers are the members of an action_attempt record: digests and
// identifiers only.
var attemptMembers = []string{
	"action", "digest_alg", "env_digest", "event_type", "executor_id", "executor_version",
	"hash", "input_digest", "module_digest", "prev", "seq", "trace_id", "ts_utc",
}

// testRecord is what a pipeline would hand a sink for its i-th action when
// nothing ran (no attempt): a verdict. Every fourth request has an env.
func testRecord(i int) Record {
	out := Digest(fmt.Appendf(nil, `{"out":%d}`, i))
	r := Record{
		Action:          "text_upper@1.2.0",
		ExecutorID:      "text_upper",
		ExecutorVersion: "1.2.0",
		ModuleDigest:    Digest([]byte("module bytes")),
		Status:          "SUCCESS",
		TraceID:         fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
		TsUTC:           "2025-01-01T00:00:00Z",
		DurationMs:      int64(i % 7),
		FuelUsed:        uint64(1000 * i),
		InputDigest:     Digest(fmt.Appendf(nil, `{"in":%d}`, i)),
		OutputDigest:    &out,
	}
	if i%4 == 1 {
		env := Digest(fmt.Appendf(nil, `{"REGION":"eu-%d"}`, i))
		r.EnvDigest = &env
	}
	if i%3 == 2 {
		r.Status, r.ReasonCodes, r.OutputDigest = "BLOCKED", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, nil
	}
	return r
}

// testAttempt is the attempt written before the executor of testRecord(i)
// runs.
func testAttempt(i int) Record {
	v := testRecord(i)
	return Record{
		EventType: EventActionAttempt, Action: v.Action, ExecutorID: v.ExecutorID, ExecutorVersion: v.ExecutorVersion,
		ModuleDigest: v.ModuleDigest, TraceID: v.TraceID, TsUTC: v.TsUTC, InputDigest: v.InputDigest, EnvDigest: v.EnvDigest,
	}
}

// testVerdict is testRecord(i) answering the attempt stored as attempt.
func testVerdict(i int, attempt Record) Record {
	v := testRecord(i)
	v.AttemptHash = &attempt.Hash
	return v
}

// memoryLog appends n records to a MemorySink and returns its lines, each
// with its newline: attempts and their verdicts in turn, so an odd n ends
// in an unanswered attempt.
func memoryLog(t testing.TB, n int) []string {
	t.Helper()
	m := NewMemorySink()
	var a Record
	for k := range n {
		i := k/2 + 1
		var err error
		if k%2 == 0 {
			a, err = m.Append(context.Background(), testAttempt(i))
		} else {
			_, err = m.Append(context.Background(), testVerdict(i, a))
		}
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	_, err := m.WriteTo(&buf)
	require.NoError(t, err)
	return strings.SplitAfter(buf.String(), "\n")[:n]
}

func TestRecordSchema(t *testing.T) {
	var tags []string
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	assert.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(verdictMembers), "exit_code", "schema_digest"))), tags,
		"Record's JSON tags are the verdict's members, a program's exit_code, and the schema_digest of an executor with schemas")

	// The executor contract's required members of an action_audit record.
	for _, required := range []string{"event_type", "executor_id", "executor_version", "status", "trace_id", "duration_ms", "input_digest", "output_digest"} {
		assert.Contains(t, verdictMembers, required)
	}

	m := NewMemorySink()
	ok := testRecord(1)
	blocked := testRecord(2)
	blocked.Status, blocked.ReasonCodes, blocked.OutputDigest, blocked.ModuleDigest = "BLOCKED", []string{"ACTION_UNKNOWN"}, nil, ""
	plain := testRecord(3)
	plain.ReasonCodes = nil
	attempt := testAttempt(4)
	for _, r := range []Record{ok, blocked, plain, attempt} {
		_, err := m.Append(context.Background(), r)
		require.NoError(t, err)
	}
	a := m.Records()[3]
	_, err := m.Append(context.Background(), testVerdict(4, a))
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 5)

	for i, line := range lines {
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &members))
		want, event := verdictMembers, `"action_audit"`
		if i == 3 {
			want, event = attemptMembers, `"action_attempt"`
		}
		assert.Equal(t, want, slices.Sorted(maps.Keys(members)), "line %d has exactly the members of its type", i+1)
		assert.JSONEq(t, event, string(members["event_type"]))
		assert.JSONEq(t, `"blake3"`, string(members["digest_alg"]))
	}
	assert.Contains(t, lines[0], `"output_digest":"`+*ok.OutputDigest+`"`)
	assert.Contains(t, lines[0], `"env_digest":"`+*ok.EnvDigest+`"`)
	assert.Contains(t, lines[0], `"attempt_hash":null`, "nothing ran: no attempt")
	assert.Contains(t, lines[1], `"output_digest":null`)
	assert.Contains(t, lines[1], `"env_digest":null`, "no env: null")
	assert.Contains(t, lines[1], `"module_digest":""`)
	assert.Contains(t, lines[1], `"reason_codes":["ACTION_UNKNOWN"]`)
	assert.Contains(t, lines[2], `"reason_codes":[]`, "nil reason codes are written as [], never null")
	assert.Contains(t, lines[4], `"attempt_hash":"`+a.Hash+`"`, "the verdict names its attempt")
}

func TestRecordHashAndLinks(t *testing.T) {
	lines := memoryLog(t, 4)
	prev := GenesisPrev
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\n")
		c, err := Canonicalize([]byte(line))
		require.NoError(t, err)
		assert.Equal(t, line, string(c.Bytes), "a log line is canonical JSON")

		// The hash, recomputed independently: the canonical JSON of the
		// record without its hash member.
		var members map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &members))
		hash := members["hash"]
		delete(members, "hash")
		body, err := json.Marshal(members)
		require.NoError(t, err)
		c, err = Canonicalize(body)
		require.NoError(t, err)
		assert.Equal(t, Digest(c.Bytes), hash, "line %d", i+1)

		assert.Equal(t, prev, members["prev"], "line %d links to the one before", i+1)
		assert.EqualValues(t, i+1, members["seq"])
		prev = hash.(string)
	}
}

func TestAppendRejectsInvalidRecords(t *testing.T) {
	notDigest := "hello, raw payload"
	for _, tc := range []struct {
		name   string
		modify func(*Record)
	}{
		{"raw payload as input digest", func(r *Record) { r.InputDigest = notDigest }},
		{"empty input digest", func(r *Record) { r.InputDigest = "" }},
		{"upper-case digest", func(r *Record) { r.InputDigest = strings.ToUpper(r.InputDigest) }},
		{"raw output as output digest", func(r *Record) { r.OutputDigest = &notDigest }},
		{"bad module digest", func(r *Record) { r.ModuleDigest = "sha256:abc" }},
		{"wrong event type", func(r *Record) { r.EventType = "action" }},
		{"wrong digest algorithm", func(r *Record) { r.DigestAlg = "sha256" }},
		{"unknown status", func(r *Record) { r.Status = "OK" }},
		{"failure without reason", func(r *Record) { r.Status, r.ReasonCodes = "FAILED", nil }},
		{"guest error text as reason", func(r *Record) {
			r.Status, r.ReasonCodes = "FAILED", []string{"EXECUTOR_EXCEPTION", "panic: key=secret"}
		}},
		{"negative duration", func(r *Record) { r.DurationMs = -1 }},
		{"fuel beyond 2^53", func(r *Record) { r.FuelUsed = 1<<53 + 1 }},
		{"invalid UTF-8 in action", func(r *Record) { r.Action = "text\xffupper" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range []Sink{NewMemorySink(), openTemp(t)} {
				r := testRecord(1)
				tc.modify(&r)
				_, err := s.Append(context.Background(), r)
				require.ErrorIs(t, err, ErrInvalidRecord)
				assert.NotErrorIs(t, err, ErrSinkFailed)

				// A refused record takes no seq and does not fail the sink.
				got, err := s.Append(context.Background(), testRecord(1))
				require.NoError(t, err)
				assert.EqualValues(t, 1, got.Seq)
				require.NoError(t, s.Close())
			}
		})
	}
}

func TestAppendFillsConstantsAndCopies(t *testing.T) {
	m := NewMemorySink()
	r := testRecord(1)
	r.ReasonCodes = []string{"OK_CODE"}
	r.Seq, r.Prev, r.Hash = 99, "forged", "forged"
	got, err := m.Append(context.Background(), r)
	require.NoError(t, err)
	assert.Equal(t, EventActionAudit, got.EventType)
	assert.Equal(t, DigestAlg, got.DigestAlg)
	assert.EqualValues(t, 1, got.Seq, "the sink, not the caller, sets seq")
	assert.Equal(t, GenesisPrev, got.Prev)
	assert.True(t, isDigest(got.Hash))

	// The stored record shares no memory with the caller's or the result.
	r.ReasonCodes[0] = "CHANGED"
	*r.OutputDigest = "changed"
	got.ReasonCodes[0] = "CHANGED"
	stored := m.Records()
	require.Len(t, stored, 1)
	assert.Equal(t, []string{"OK_CODE"}, stored[0].ReasonCodes)
	assert.True(t, isDigest(*stored[0].OutputDigest))
}

// TestEncodeRecordIsCanonical checks that a line built member by member is
// what Canonicalize makes of it, for every form and for strings that need
// escaping, and that what canonical JSON cannot carry is refused.
func TestEncodeRecordIsCanonical(t *testing.T) {
	tricky := []string{"", "plain", "quote \" backslash \\ slash /", "\b\f\n\r\t\x00\x01\x1f\x7f", "é ü ß 日本 😀", "\u2028\u2029", "<>&'", strings.Repeat("x", 5000)}
	for i, s := range tricky {
		for _, f := range []form{formVerdict, formAttempt, formLegacy} {
			r := testRecord(i + 1)
			if f == formAttempt {
				r = testAttempt(i + 1)
			}
			r.Action, r.TraceID, r.TsUTC, r.ExecutorVersion, r.Prev, r.Hash = s, s+"t", s+"u", s+"v", s+"p", s+"h"
			r.FuelUsed, r.Seq, r.DurationMs = maxSafeInteger, maxSafeInteger, -maxSafeInteger
			if f == formAttempt {
				r.FuelUsed, r.DurationMs = 0, 0
			}
			line, err := encodeRecord(&r, f)
			require.NoError(t, err)
			c, err := Canonicalize(line)
			require.NoError(t, err, "%q", line)
			assert.Equal(t, string(c.Bytes), string(line), "form %d, string %d", f, i)
		}
	}
	for name, modify := range map[string]func(*Record){
		"action is not valid UTF-8":          func(r *Record) { r.Action = "a\xffb" },
		"reason_codes[1] is not valid UTF-8": func(r *Record) { r.ReasonCodes = []string{"A", "\xed\xa0\x80"} },
		"env_digest is not valid UTF-8":      func(r *Record) { d := "\xc3"; r.EnvDigest = &d },
		"fuel_used is beyond 2^53":           func(r *Record) { r.FuelUsed = maxSafeInteger + 1 },
		"seq is beyond 2^53":                 func(r *Record) { r.Seq = maxSafeInteger + 1 },
	} {
		r := testRecord(2)
		modify(&r)
		_, err := encodeRecord(&r, formVerdict)
		require.ErrorIs(t, err, ErrInvalidRecord, name)
		assert.ErrorContains(t, err, name)
	}
}

// A program's verdict carries its exit status (exit_code, in its canonical
// place); other records have none, and the chain verifies with both.
func TestRecordExitCode(t *testing.T) {
	m := NewMemorySink()
	a, err := m.Append(context.Background(), testAttempt(1))
	require.NoError(t, err)
	v := testVerdict(1, a)
	code := 5
	v.ExitCode = &code
	_, err = m.Append(context.Background(), v)
	require.NoError(t, err)
	_, err = m.Append(context.Background(), testRecord(2))
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.NotContains(t, lines[0], "exit_code", "an attempt has none")
	assert.Contains(t, lines[1], `"executor_version":"1.2.0","exit_code":5,"fuel_used":`)
	assert.NotContains(t, lines[2], "exit_code", "an action's verdict has none")
	c, err := Canonicalize([]byte(lines[1]))
	require.NoError(t, err)
	assert.Equal(t, lines[1], string(c.Bytes), "canonical with exit_code")

	res, err := Verify(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Records)

	bad := testRecord(3)
	code = 256
	bad.ExitCode = &code
	_, err = m.Append(context.Background(), bad)
	require.ErrorIs(t, err, ErrInvalidRecord)
	assert.Contains(t, err.Error(), "exit_code must be an exit status, 0 to 255")
}

// TestSchemaDigestMember: an executor's schema digest is a member of its
// attempt and its verdict when set, placed in canonical order, absent
// when not, and a verdict must repeat its attempt's.
func TestSchemaDigestMember(t *testing.T) {
	schemas := Digest([]byte(`{"input":{"type":"object"},"output":null}`))
	m := NewMemorySink()
	at := testAttempt(1)
	at.SchemaDigest = &schemas
	a, err := m.Append(context.Background(), at)
	require.NoError(t, err)
	v := testVerdict(1, a)
	v.SchemaDigest = &schemas
	_, err = m.Append(context.Background(), v)
	require.NoError(t, err)

	_, err = m.Append(context.Background(), testVerdict(2, a))
	require.Error(t, err, "the attempt is answered already")

	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		assert.Contains(t, l, `,"prev":"`)
		assert.Contains(t, l, `,"schema_digest":"`+schemas+`","seq":`)
	}
	rep, err := Verify(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Records)
	assert.Empty(t, rep.Unanswered)

	// A verdict without its attempt's schema digest is refused by a sink.
	m = NewMemorySink()
	a, err = m.Append(context.Background(), at)
	require.NoError(t, err)
	_, err = m.Append(context.Background(), testVerdict(1, a))
	require.ErrorIs(t, err, ErrInvalidRecord)
	assert.ErrorContains(t, err, "schema_digest differs")

	// A schema digest that is no digest is refused.
	raw := `{"type":"object"}`
	bad := testRecord(3)
	bad.SchemaDigest = &raw
	_, err = NewMemorySink().Append(context.Background(), bad)
	require.ErrorIs(t, err, ErrInvalidRecord)
	assert.ErrorContains(t, err, "schema_digest is not a blake3 digest")
}
