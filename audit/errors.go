package audit

import (
	"strconv"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

const (
	// ErrNotJSON is matched (errors.Is) by every refusal of Canonicalize
	// except excessive nesting: invalid JSON or UTF-8, lone surrogates,
	// duplicate keys, NaN/Infinity, numbers out of range.
	ErrNotJSON = sentinel.Error("audit: not canonical JSON")

	// ErrTooDeep is matched when input nests deeper than MaxNesting. It is
	// kept apart from ErrNotJSON because it is a limit, not a format error.
	ErrTooDeep = sentinel.Error("audit: JSON nested deeper than MaxNesting")

	// ErrInvalidRecord is matched when a Record given to a Sink breaks the
	// schema (a field that is not a digest where a digest belongs, a wrong
	// event_type or digest_alg, a value canonical JSON cannot carry). The
	// sink stays usable.
	ErrInvalidRecord = sentinel.Error("audit: invalid record")

	// ErrSinkFailed is matched by the error of the append whose write or
	// fsync failed and by every later Append on that sink.
	ErrSinkFailed = sentinel.Error("audit: sink failed")

	// ErrClosed is returned by Append after Close.
	ErrClosed = sentinel.Error("audit: sink closed")

	// ErrLocked is matched when OpenFile finds the log held by another
	// FileSink, in this process or another one.
	ErrLocked = sentinel.Error("audit: log file in use by another sink")

	// ErrChainBroken is matched by every *ChainError.
	ErrChainBroken = sentinel.Error("audit: log chain broken")

	// ErrTornTail is matched by the *ChainError of a log whose last line
	// has no newline: an append cut short (a crash, a full disk). Repair
	// cuts such a tail back to the last complete record.
	ErrTornTail = sentinel.Error("audit: log ends in a torn line")
)

// SyntaxError says why and where Canonicalize refused its input.
//
// Msg never quotes the input: refused payloads may hold secrets, and this
// error is meant to be logged.
type SyntaxError struct {
	Offset int    // byte offset in the input where the problem was found
	Msg    string // what is wrong, e.g. "duplicate object key"

	tooDeep bool
}

func (e *SyntaxError) Error() string {
	return "audit: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Unwrap returns ErrTooDeep or ErrNotJSON, so callers classify with errors.Is.
func (e *SyntaxError) Unwrap() error {
	if e.tooDeep {
		return ErrTooDeep
	}
	return ErrNotJSON
}

// ChainError names the first line of an audit log that cannot be trusted.
type ChainError struct {
	Line   int    // 1-based line number
	Reason string // what is wrong with it
	// Torn is set when the line is the log's last and has no newline.
	Torn bool
}

func (e *ChainError) Error() string {
	return "audit: log line " + strconv.Itoa(e.Line) + ": " + e.Reason
}

// Unwrap returns ErrChainBroken.
func (e *ChainError) Unwrap() error { return ErrChainBroken }

// Is matches ErrTornTail when the line is torn.
func (e *ChainError) Is(target error) bool { return e.Torn && target == ErrTornTail }
