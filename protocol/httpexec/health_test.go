package httpexec

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// failableSink is a memory sink that fails on demand, as a FileSink on a
// full disk does: it refuses records and says so in Health.
type failableSink struct {
	*audit.MemorySink
	failing atomic.Bool
}

var errDiskFull = errors.New("audit: sink failed: write: no space left on device (since 2026-11-24T02:00:00Z; retrying)")

func (s *failableSink) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	if s.failing.Load() {
		return audit.Record{}, errDiskFull
	}
	return s.MemorySink.Append(ctx, r)
}

func (s *failableSink) Health() error {
	if s.failing.Load() {
		return errDiskFull
	}
	return nil
}

// TestHealthFollowsTheAuditLog: while the audit log cannot be written,
// every call is refused, so /health answers 503 with the reason; once the
// log recovers, 200 again.
func TestHealthFollowsTheAuditLog(t *testing.T) {
	sink := &failableSink{MemorySink: audit.NewMemorySink()}
	f := newFixture(t, func(cfg *Config) { cfg.Sink = sink })
	for _, path := range []string{"/health", "/api/health"} {
		assert.Equal(t, http.StatusOK, f.do(t, "GET", path, "").status)
	}

	sink.failing.Store(true)
	for _, path := range []string{"/health", "/api/health"} {
		r := f.do(t, "GET", path, "")
		assert.Equal(t, http.StatusServiceUnavailable, r.status, path)
		assert.Equal(t, false, r.body["success"])
		assert.Equal(t, CodeInternalError, errorCode(r))
		assert.Equal(t, "the audit log cannot be written, so every call is refused until it recovers: "+errDiskFull.Error(), errorMessage(r))
	}
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
	require.Equal(t, http.StatusOK, r.status, r.raw)
	v := r.body["wasmgate"].(map[string]any)
	assert.Equal(t, "BLOCKED", v["status"])
	assert.Equal(t, []any{"AUDIT_LOG_FAILED"}, v["reasonCodes"])
	assert.Empty(t, sink.Records(), "nothing ran: not even an attempt was recorded")

	sink.failing.Store(false)
	assert.Equal(t, http.StatusOK, f.do(t, "GET", "/health", "").status)
	r = f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
	assert.Equal(t, true, r.body["success"], r.raw)
}
