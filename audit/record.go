package audit

import (
	"bytes"
	"fmt"
	"strconv"
)

// EventActionAudit is the event_type of every Record.
const EventActionAudit = "action_audit"

// GenesisPrev is the prev of the first record of a log.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the audit log: what was asked, what ran, what came
// of it, as digests and counters. Its JSON form is fixed by the tags below;
// a line with any other member does not verify.
type Record struct {
	EventType       string   `json:"event_type"` // EventActionAudit; a Sink fills it in when empty
	Action          string   `json:"action"`
	ExecutorID      string   `json:"executor_id"`
	ExecutorVersion string   `json:"executor_version"`
	ModuleDigest    string   `json:"module_digest"` // empty when no executor was resolved
	Status          string   `json:"status"`        // SUCCESS, FAILED or BLOCKED
	ReasonCodes     []string `json:"reason_codes"`  // written as [] when empty, never null
	TraceID         string   `json:"trace_id"`
	TsUTC           string   `json:"ts_utc"`
	DurationMs      int64    `json:"duration_ms"`
	FuelUsed        uint64   `json:"fuel_used"`
	InputDigest     string   `json:"input_digest"`  // empty when the payload had no canonical form
	OutputDigest    *string  `json:"output_digest"` // null when there was no output
	DigestAlg       string   `json:"digest_alg"`    // DigestAlg; a Sink fills it in when empty
	Seq             uint64   `json:"seq"`           // 1-based position in the log, set by the Sink
	Prev            string   `json:"prev"`          // Hash of the previous record, GenesisPrev for seq 1
	Hash            string   `json:"hash"`          // Digest of the record's canonical JSON without hash
}

// encodeRecord is the one place a Record becomes bytes: its log line, the
// canonical JSON of all its members (without the newline). Going through
// Canonicalize keeps the log in the form the digests are defined over, and
// refuses field values canonical JSON cannot carry (invalid UTF-8, integers
// beyond 2^53).
func encodeRecord(r *Record) ([]byte, error) {
	size := 720 + len(r.Action) + len(r.ExecutorID) + len(r.ExecutorVersion) + len(r.Status) + len(r.TraceID) + len(r.TsUTC)
	for _, code := range r.ReasonCodes {
		size += len(code) + 3
	}
	b := make([]byte, 0, size)
	// Members in canonical order, so Canonicalize validates without sorting.
	b = append(b, `{"action":`...)
	b = appendString(b, r.Action)
	b = append(b, `,"digest_alg":`...)
	b = appendString(b, r.DigestAlg)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, r.DurationMs, 10)
	b = append(b, `,"event_type":`...)
	b = appendString(b, r.EventType)
	b = append(b, `,"executor_id":`...)
	b = appendString(b, r.ExecutorID)
	b = append(b, `,"executor_version":`...)
	b = appendString(b, r.ExecutorVersion)
	b = append(b, `,"fuel_used":`...)
	b = strconv.AppendUint(b, r.FuelUsed, 10)
	b = append(b, `,"hash":`...)
	b = appendString(b, r.Hash)
	b = append(b, `,"input_digest":`...)
	b = appendString(b, r.InputDigest)
	b = append(b, `,"module_digest":`...)
	b = appendString(b, r.ModuleDigest)
	b = append(b, `,"output_digest":`...)
	if r.OutputDigest == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *r.OutputDigest)
	}
	b = append(b, `,"prev":`...)
	b = appendString(b, r.Prev)
	b = append(b, `,"reason_codes":[`...)
	for i, code := range r.ReasonCodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, code)
	}
	b = append(b, `],"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, r.Status)
	b = append(b, `,"trace_id":`...)
	b = appendString(b, r.TraceID)
	b = append(b, `,"ts_utc":`...)
	b = appendString(b, r.TsUTC)
	b = append(b, '}')
	c, err := Canonicalize(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	return c.Bytes, nil
}

// hashMember returns where the hash member (with its leading comma) sits in
// a log line: "hash" sorts right after "fuel_used" and before
// "input_digest". A `,"` cannot occur inside a canonical string (its quotes
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
	case r.EventType != EventActionAudit:
		return bad("event_type must be %q", EventActionAudit)
	case r.DigestAlg != DigestAlg:
		return bad("digest_alg must be %q", DigestAlg)
	case r.Status != "SUCCESS" && r.Status != "FAILED" && r.Status != "BLOCKED":
		return bad("status must be SUCCESS, FAILED or BLOCKED")
	case r.Status != "SUCCESS" && len(r.ReasonCodes) == 0:
		return bad("reason_codes must not be empty unless status is SUCCESS")
	case r.InputDigest != "" && !isDigest(r.InputDigest):
		return bad("input_digest is not a %s digest", DigestAlg)
	case r.InputDigest == "" && r.Status == "SUCCESS":
		return bad("input_digest is required for a SUCCESS")
	case r.ModuleDigest != "" && !isDigest(r.ModuleDigest):
		return bad("module_digest is not a %s digest", DigestAlg)
	case r.OutputDigest != nil && !isDigest(*r.OutputDigest):
		return bad("output_digest is not a %s digest", DigestAlg)
	case r.DurationMs < 0:
		return bad("duration_ms is negative")
	}
	for i, code := range r.ReasonCodes {
		if !isReasonCode(code) {
			return bad("reason_codes[%d] is not an upper-case reason code", i)
		}
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
