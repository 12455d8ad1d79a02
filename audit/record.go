package audit

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Event types: every line of a log is one of these.
const (
	// EventActionAudit is the verdict on one action: what was asked, what
	// ran, what came of it.
	EventActionAudit = "action_audit"
	// EventActionAttempt is written before an executor runs (write-ahead):
	// what is about to run on what, as digests. Its verdict names it in
	// attempt_hash; an attempt no verdict names is an execution that never
	// ended in a verdict (the process stopped, or the verdict could not be
	// written).
	EventActionAttempt = "action_attempt"
)

// GenesisPrev is the prev of the first record of a log.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the audit log, as digests, identifiers and
// counters. Its JSON form is fixed by the tags below and by EventType:
//   - a verdict (action_audit) has every member;
//   - an attempt (action_attempt) has action, executor_id,
//     executor_version, module_digest, input_digest, env_digest, trace_id,
//     ts_utc, digest_alg, seq, prev and hash, and no others: the fields
//     marked "verdicts only" must be left zero;
//   - both have schema_digest when it is set (an executor that declares an
//     input or output schema), and lack the member when it is nil.
//
// A line with any other member set does not verify, except a verdict
// without env_digest and attempt_hash: the form logs had before attempts
// existed, which Verify still accepts and no Sink writes (it has no
// schema_digest either).
type Record struct {
	EventType       string   `json:"event_type"` // EventActionAudit or EventActionAttempt; a Sink fills in EventActionAudit when empty
	Action          string   `json:"action"`
	ExecutorID      string   `json:"executor_id"`
	ExecutorVersion string   `json:"executor_version"`
	ModuleDigest    string   `json:"module_digest"` // empty when no executor was resolved (verdicts only)
	Status          string   `json:"status"`        // verdicts only: SUCCESS, FAILED or BLOCKED
	ReasonCodes     []string `json:"reason_codes"`  // verdicts only; written as [] when empty, never null
	TraceID         string   `json:"trace_id"`
	TsUTC           string   `json:"ts_utc"`
	DurationMs      int64    `json:"duration_ms"`         // verdicts only
	FuelUsed        uint64   `json:"fuel_used"`           // verdicts only
	InputDigest     string   `json:"input_digest"`        // empty when the payload had no canonical form (verdicts only)
	EnvDigest       *string  `json:"env_digest"`          // digest of the request's env object; null when it had none
	OutputDigest    *string  `json:"output_digest"`       // verdicts only; null when there was no output
	AttemptHash     *string  `json:"attempt_hash"`        // verdicts only: the hash of its attempt; null when nothing ran
	ExitCode        *int     `json:"exit_code,omitempty"` // verdicts of programs only: the exit status of one that ended by itself; absent otherwise
	DigestAlg       string   `json:"digest_alg"`          // DigestAlg; a Sink fills it in when empty
	Seq             uint64   `json:"seq"`                 // 1-based position in the log, set by the Sink
	Prev            string   `json:"prev"`                // Hash of the previous record, GenesisPrev for seq 1
	Hash            string   `json:"hash"`                // Digest of the record's canonical JSON without hash

	// SchemaDigest joins the executor's identity when it declares an input
	// or output JSON Schema: the digest of the canonical JSON
	// {"input":SCHEMA|null,"output":SCHEMA|null}. Absent (nil) when it
	// declares neither; a verdict repeats its attempt's.
	SchemaDigest *string `json:"schema_digest,omitempty"`
}

// form is the member set a record is written with.
type form int

const (
	formVerdict form = iota // action_audit with env_digest and attempt_hash
	formAttempt             // action_attempt
	formLegacy              // action_audit as written before attempts existed
)

// formOf is the form a Sink writes r in.
func formOf(r *Record) form {
	if r.EventType == EventActionAttempt {
		return formAttempt
	}
	return formVerdict
}

// encodeRecord is the one place a Record becomes bytes: its log line, the
// canonical JSON of the members of its form (without the newline). The line
// is canonical by construction — members in canonical order, strings
// written by the canonicalizer's own string writer, integers as digits —
// once the values canonical JSON cannot carry are refused (invalid UTF-8,
// integers beyond 2^53), as Canonicalize would refuse them. Building it so
// rather than running Canonicalize over it halves what a record costs
// (TestEncodeRecordIsCanonical checks the two agree).
func encodeRecord(r *Record, f form) ([]byte, error) { return appendRecord(nil, r, f) }

// appendRecord is encodeRecord appending to b, which it reuses when it has
// room (a chain's line buffer).
func appendRecord(b []byte, r *Record, f form) ([]byte, error) {
	if err := r.encodable(); err != nil {
		return nil, err
	}
	size := 980 + len(r.Action) + len(r.ExecutorID) + len(r.ExecutorVersion) + len(r.Status) + len(r.TraceID) + len(r.TsUTC)
	for _, code := range r.ReasonCodes {
		size += len(code) + 3
	}
	if cap(b)-len(b) < size {
		b = append(make([]byte, 0, len(b)+size), b...)
	}
	verdict := f != formAttempt
	// Members in canonical order (RFC 8785 sorts by UTF-16 code units:
	// for these ASCII names, byte order).
	b = append(b, `{"action":`...)
	b = appendString(b, r.Action)
	if f == formVerdict {
		b = append(b, `,"attempt_hash":`...)
		b = appendOptional(b, r.AttemptHash)
	}
	b = append(b, `,"digest_alg":`...)
	b = appendString(b, r.DigestAlg)
	if verdict {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, r.DurationMs, 10)
	}
	if f != formLegacy {
		b = append(b, `,"env_digest":`...)
		b = appendOptional(b, r.EnvDigest)
	}
	b = append(b, `,"event_type":`...)
	b = appendString(b, r.EventType)
	b = append(b, `,"executor_id":`...)
	b = appendString(b, r.ExecutorID)
	b = append(b, `,"executor_version":`...)
	b = appendString(b, r.ExecutorVersion)
	if verdict && r.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
	}
	if verdict {
		b = append(b, `,"fuel_used":`...)
		b = strconv.AppendUint(b, r.FuelUsed, 10)
	}
	b = append(b, `,"hash":`...)
	b = appendString(b, r.Hash)
	b = append(b, `,"input_digest":`...)
	b = appendString(b, r.InputDigest)
	b = append(b, `,"module_digest":`...)
	b = appendString(b, r.ModuleDigest)
	if verdict {
		b = append(b, `,"output_digest":`...)
		b = appendOptional(b, r.OutputDigest)
	}
	b = append(b, `,"prev":`...)
	b = appendString(b, r.Prev)
	if verdict {
		b = append(b, `,"reason_codes":[`...)
		for i, code := range r.ReasonCodes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, code)
		}
		b = append(b, ']')
	}
	if f != formLegacy && r.SchemaDigest != nil {
		b = append(b, `,"schema_digest":`...)
		b = appendString(b, *r.SchemaDigest)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	if verdict {
		b = append(b, `,"status":`...)
		b = appendString(b, r.Status)
	}
	b = append(b, `,"trace_id":`...)
	b = appendString(b, r.TraceID)
	b = append(b, `,"ts_utc":`...)
	b = appendString(b, r.TsUTC)
	return append(b, '}'), nil
}

// encodable refuses the field values canonical JSON cannot carry.
func (r *Record) encodable() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
	}
	for _, m := range [...]struct{ name, value string }{
		{"event_type", r.EventType}, {"action", r.Action}, {"executor_id", r.ExecutorID},
		{"executor_version", r.ExecutorVersion}, {"module_digest", r.ModuleDigest}, {"status", r.Status},
		{"trace_id", r.TraceID}, {"ts_utc", r.TsUTC}, {"input_digest", r.InputDigest},
		{"digest_alg", r.DigestAlg}, {"prev", r.Prev}, {"hash", r.Hash},
	} {
		if !utf8.ValidString(m.value) {
			return bad("%s is not valid UTF-8", m.name)
		}
	}
	for i, code := range r.ReasonCodes {
		if !utf8.ValidString(code) {
			return bad("reason_codes[%d] is not valid UTF-8", i)
		}
	}
	for _, m := range [...]struct {
		name  string
		value *string
	}{{"env_digest", r.EnvDigest}, {"output_digest", r.OutputDigest}, {"attempt_hash", r.AttemptHash}, {"schema_digest", r.SchemaDigest}} {
		if m.value != nil && !utf8.ValidString(*m.value) {
			return bad("%s is not valid UTF-8", m.name)
		}
	}
	switch {
	case r.FuelUsed > maxSafeInteger:
		return bad("fuel_used is beyond 2^53")
	case r.Seq > maxSafeInteger:
		return bad("seq is beyond 2^53")
	case r.DurationMs > maxSafeInteger || r.DurationMs < -maxSafeInteger:
		return bad("duration_ms is beyond 2^53")
	}
	return nil
}

// appendOptional appends s as a JSON string, or null when it is nil.
func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// hashMember returns where the hash member (with its leading comma) sits in
// a log line: in every form, "hash" is preceded by another member and
// followed by "input_digest". A `,"` cannot occur inside a canonical string (its quotes
// are escaped), so these two markers find member boundaries and nothing else.
func hashMember(line []byte) (start, end int) {
	return bytes.Index(line, []byte(`,"hash":`)), bytes.Index(line, []byte(`,"input_digest":`))
}

// appendHashed appends to dst what a record's hash is taken over: its log
// line with the hash member cut out, which is the canonical JSON of the
// record without hash (cutting a member out keeps JSON canonical).
func appendHashed(dst, line []byte) []byte {
	start, end := hashMember(line)
	return append(append(dst, line[:start]...), line[end:]...)
}

// check enforces what the schema promises beyond JSON types. The digest and
// reason-code shapes matter most: they are what keeps raw payloads and guest
// error text out of the log even if a caller mixes up fields.
func (r *Record) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
	}
	switch {
	case r.EventType != EventActionAudit && r.EventType != EventActionAttempt:
		return bad("event_type must be %q or %q", EventActionAudit, EventActionAttempt)
	case r.DigestAlg != DigestAlg:
		return bad("digest_alg must be %q", DigestAlg)
	case r.InputDigest != "" && !isDigest(r.InputDigest):
		return bad("input_digest is not a %s digest", DigestAlg)
	case r.ModuleDigest != "" && !isDigest(r.ModuleDigest):
		return bad("module_digest is not a %s digest", DigestAlg)
	case r.EnvDigest != nil && !isDigest(*r.EnvDigest):
		return bad("env_digest is not a %s digest", DigestAlg)
	case r.OutputDigest != nil && !isDigest(*r.OutputDigest):
		return bad("output_digest is not a %s digest", DigestAlg)
	case r.AttemptHash != nil && !isDigest(*r.AttemptHash):
		return bad("attempt_hash is not a %s digest", DigestAlg)
	case r.SchemaDigest != nil && !isDigest(*r.SchemaDigest):
		return bad("schema_digest is not a %s digest", DigestAlg)
	}
	if r.EventType == EventActionAttempt {
		return r.checkAttempt(bad)
	}
	switch {
	case r.Status != "SUCCESS" && r.Status != "FAILED" && r.Status != "BLOCKED":
		return bad("status must be SUCCESS, FAILED or BLOCKED")
	case r.Status != "SUCCESS" && len(r.ReasonCodes) == 0:
		return bad("reason_codes must not be empty unless status is SUCCESS")
	case r.InputDigest == "" && r.Status == "SUCCESS":
		return bad("input_digest is required for a SUCCESS")
	case r.DurationMs < 0:
		return bad("duration_ms is negative")
	case r.ExitCode != nil && (*r.ExitCode < 0 || *r.ExitCode > 255):
		return bad("exit_code must be an exit status, 0 to 255")
	}
	for i, code := range r.ReasonCodes {
		if !isReasonCode(code) {
			return bad("reason_codes[%d] is not an upper-case reason code", i)
		}
	}
	return nil
}

// checkAttempt checks what only an attempt must satisfy. An attempt is
// written once an executor is resolved and the payload canonicalized, so it
// names both; members it does not have must be zero, or they would be
// dropped from the line without a word.
func (r *Record) checkAttempt(bad func(string, ...any) error) error {
	switch {
	case r.ExecutorID == "":
		return bad("executor_id is required in an %s", EventActionAttempt)
	case r.ModuleDigest == "":
		return bad("module_digest is required in an %s", EventActionAttempt)
	case r.InputDigest == "":
		return bad("input_digest is required in an %s", EventActionAttempt)
	case r.Status != "":
		return bad("status is not a member of an %s", EventActionAttempt)
	case len(r.ReasonCodes) > 0:
		return bad("reason_codes is not a member of an %s", EventActionAttempt)
	case r.DurationMs != 0:
		return bad("duration_ms is not a member of an %s", EventActionAttempt)
	case r.FuelUsed != 0:
		return bad("fuel_used is not a member of an %s", EventActionAttempt)
	case r.OutputDigest != nil:
		return bad("output_digest is not a member of an %s", EventActionAttempt)
	case r.AttemptHash != nil:
		return bad("attempt_hash is not a member of an %s", EventActionAttempt)
	case r.ExitCode != nil:
		return bad("exit_code is not a member of an %s", EventActionAttempt)
	}
	return nil
}

func isReasonCode(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
