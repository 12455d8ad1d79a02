// Package traceid reads the trace ids that requests bring, in each form a
// front is given them, into the one form the pipeline records (a UUID), and
// makes new ones. Every front and the pipeline read them here, so that a
// trace id a client sends is accepted, or refused, alike by every front.
package traceid

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
)

var (
	// dashed is the form an ActionRequest's trace_id takes: a UUID with
	// its dashes, in either case.
	dashed = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// loose also takes a UUID without its dashes (Python's uuid4().hex, a
	// W3C trace id).
	loose = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
	// traceparent: version "-" trace-id "-" parent-id "-" flags (W3C Trace
	// Context), lowercase as the recommendation writes it.
	traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$`)
)

// Valid reports whether s is a trace id as an ActionRequest carries it: a
// UUID written with its dashes, in either case.
func Valid(s string) bool { return dashed.MatchString(s) }

// Parse reads s as a UUID written with or without its dashes, in either
// case, and returns it lowercase and dashed; false for anything else.
func Parse(s string) (string, bool) {
	if !loose.MatchString(s) {
		return "", false
	}
	return dash(strings.ToLower(strings.ReplaceAll(s, "-", ""))), true
}

// FromTraceparent reads the trace id of a W3C traceparent value (surrounding
// space ignored) as a UUID; false when s is not one, or its trace id is all
// zeros, which the recommendation makes invalid.
func FromTraceparent(s string) (string, bool) {
	m := traceparent.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[1] == strings.Repeat("0", 32) {
		return "", false
	}
	return dash(m[1]), true
}

// New returns a random (version 4) UUID: the trace id of a request that
// brings none.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// dash writes 32 hex digits as a UUID.
func dash(h string) string {
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
