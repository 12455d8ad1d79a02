package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// VerifyReport describes the part of a log that verified.
type VerifyReport struct {
	Records  int    // records checked and found intact, from line 1 on
	LastHash string // hash of the last of them, GenesisPrev if none
	// Attempts counts the action_attempt records among Records.
	Attempts int
	// Unanswered lists, in log order, the attempts among Records that no
	// verdict answers: executions that never ended in a verdict (the
	// process stopped while they ran, or their verdict could not be
	// written), or that are still running when a live log is read.
	Unanswered []UnansweredAttempt
}

// UnansweredAttempt is an action_attempt no verdict answers.
type UnansweredAttempt struct {
	Line    int    // 1-based line number
	Seq     uint64 // its seq
	Hash    string // its hash, which a verdict would name in attempt_hash
	Action  string
	TraceID string
}

// Verify reads a JSON Lines audit log and checks every line: canonical JSON,
// exactly the members of its record type, a hash that matches the content,
// seq counting up from 1, prev naming the previous record's hash, a newline
// at the end, and for a verdict that names its attempt (attempt_hash), an
// earlier attempt no other verdict answers, which the verdict repeats
// (action, executor, module, input, env and schema digests, trace_id,
// ts_utc). An empty log is valid, and so are logs written before attempts
// existed.
//
// Attempts without a verdict do not make a log invalid: they are listed in
// the report.
//
// # Errors
//
// The first line that fails is reported as a *ChainError (errors.Is
// ErrChainBroken, and ErrTornTail when it is a torn last line) with its
// 1-based line number; the report then covers the records before it. A
// read error is returned wrapped, as it is.
//
// # Notes
//
// Removing records from the end of a log leaves a valid, shorter log. To
// detect that, keep LastHash somewhere the log's writer cannot change, and
// compare.
func Verify(r io.Reader) (VerifyReport, error) {
	v := newVerifier()
	err := v.scan(r)
	rep := VerifyReport{Records: int(v.seq), LastHash: v.prev, Attempts: v.attempts}
	for hash, a := range v.open {
		rep.Unanswered = append(rep.Unanswered, UnansweredAttempt{Line: a.line, Seq: a.seq, Hash: hash, Action: a.action, TraceID: a.traceID})
	}
	slices.SortFunc(rep.Unanswered, func(a, b UnansweredAttempt) int { return a.Line - b.Line })
	return rep, err
}

// verifier checks a log line by line. FileSink runs the same checks on the
// file it is about to extend, so the log it resumes is the log Verify accepts.
type verifier struct {
	line     int    // lines seen
	seq      uint64 // seq of the last good record
	prev     string // hash of the last good record
	attempts int
	open     map[string]openAttempt // unanswered attempts, by hash

	// gap is a seq jump found on the previous line. It is reported after
	// one more line is seen, to tell a removed record (the next line jumps
	// too) from reordered ones (the next line has the missing seq).
	gap    *ChainError
	gapSeq uint64

	scratch []byte
	last    Record // the last good record
}

// openAttempt is an unanswered attempt and where it is.
type openAttempt struct {
	attempt
	line int
	seq  uint64
}

func newVerifier() *verifier { return &verifier{prev: GenesisPrev, open: map[string]openAttempt{}} }

func (v *verifier) scan(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit: read log: %w", err)
		}
		if len(line) > 0 {
			if cerr := v.check(line); cerr != nil {
				return cerr
			}
		}
		if err != nil { // io.EOF
			if v.gap != nil {
				return v.gap
			}
			return nil
		}
	}
}

func (v *verifier) check(line []byte) error {
	v.line++
	if v.gap != nil {
		var next struct {
			Seq uint64 `json:"seq"`
		}
		if json.Unmarshal(line, &next) == nil && next.Seq == v.seq+1 {
			v.gap.Reason = fmt.Sprintf("seq out of order: expected %d, found %d (records were reordered)", v.seq+1, v.gapSeq)
		}
		return v.gap
	}
	fail := func(format string, args ...any) *ChainError {
		return &ChainError{Line: v.line, Reason: fmt.Sprintf(format, args...)}
	}
	body, ok := bytes.CutSuffix(line, []byte{'\n'})
	if !ok {
		return &ChainError{Line: v.line, Reason: "torn last line: no trailing newline (an append was cut short)", Torn: true}
	}
	c, err := Canonicalize(body)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return fail("invalid JSON: %s at offset %d", se.Msg, se.Offset)
		}
		return fail("invalid JSON")
	}
	if !bytes.Equal(c.Bytes, body) {
		return fail("not canonical JSON")
	}
	var rec Record
	if err := json.Unmarshal(body, &rec); err != nil {
		return fail("not an audit record: %v", err)
	}
	f := formOf(&rec)
	if f == formVerdict && !bytes.Contains(body, []byte(`,"env_digest":`)) {
		// A verdict written before attempts and env digests existed.
		f = formLegacy
	}
	if enc, err := encodeRecord(&rec, f); err != nil || !bytes.Equal(enc, body) {
		return fail("not an audit record: members differ from the schema")
	}
	if err := rec.check(); err != nil {
		return fail("not an audit record: %s", strings.TrimPrefix(err.Error(), ErrInvalidRecord.Error()+": "))
	}
	v.scratch = appendHashed(v.scratch[:0], body)
	if Digest(v.scratch) != rec.Hash {
		return fail("hash mismatch: the record was edited")
	}
	switch want := v.seq + 1; {
	case rec.Seq > want:
		v.gap = fail("seq gap: expected %d, found %d (a record was removed)", want, rec.Seq)
		v.gapSeq = rec.Seq
		return nil
	case rec.Seq < want:
		return fail("seq out of order: expected %d, found %d (records were reordered or repeated)", want, rec.Seq)
	}
	if rec.Prev != v.prev {
		return fail("prev mismatch: the record does not link to the one before it")
	}
	switch {
	case rec.EventType == EventActionAttempt:
		v.attempts++
		v.open[rec.Hash] = openAttempt{attempt: attemptOf(&rec), line: v.line, seq: rec.Seq}
	case rec.AttemptHash != nil:
		a, ok := v.open[*rec.AttemptHash]
		if !ok {
			return fail("attempt_hash names no unanswered %s earlier in the log", EventActionAttempt)
		}
		if field := a.differs(attemptOf(&rec)); field != "" {
			return fail("the verdict's %s differs from its attempt's (line %d)", field, a.line)
		}
		delete(v.open, *rec.AttemptHash)
	}
	v.seq, v.prev = rec.Seq, rec.Hash
	v.last = rec
	return nil
}
