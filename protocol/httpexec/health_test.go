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
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
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
	f := newFixture(t, func(cfg *fixtureConfig) { cfg.Sink = sink })
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

// TestHealthReportsTheCatalog: a server whose tool store's catalog is
// loading (serve's /mcp catalog) is healthy, and says how far it is; one
// without a catalog says nothing of it.
func TestHealthReportsTheCatalog(t *testing.T) {
	status := CatalogStatus{State: "loading", Packages: 4, PackagesLoaded: 1, Tools: 5}
	f := newFixture(t, func(cfg *fixtureConfig) { cfg.Catalog = func() CatalogStatus { return status } })
	r := f.do(t, "GET", "/health", "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, "ok", r.body["status"])
	assert.Equal(t, map[string]any{"catalog": map[string]any{"state": "loading", "packages": 4.0, "packagesLoaded": 1.0, "packagesFailed": 0.0, "tools": 5.0}},
		r.body["wasmgate"])
	status = CatalogStatus{State: "ready", Packages: 4, PackagesLoaded: 3, PackagesFailed: 1, Tools: 9}
	assert.Equal(t, map[string]any{"catalog": map[string]any{"state": "ready", "packages": 4.0, "packagesLoaded": 3.0, "packagesFailed": 1.0, "tools": 9.0}},
		f.do(t, "GET", "/health", "").body["wasmgate"])

	assert.NotContains(t, newFixture(t, nil).do(t, "GET", "/health", "").body, "wasmgate")
}

// TestLoadToolIsTheServers: a package's tool is loaded through
// Config.LoadTool (serve's shared loader), once, with the server's own
// defaults for where the package's manifest sets no limit.
func TestLoadToolIsTheServers(t *testing.T) {
	var sources []pipeline.ExecutorSource
	f := newFixture(t, func(cfg *fixtureConfig) {
		cfg.LoadTool = func(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error) {
			sources = append(sources, src)
			return pipeline.LoadExecutor(ctx, testEngine, src, js.Kind())
		}
	})
	for range 2 {
		r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, "A!", r.body["output"].(map[string]any)["s"], r.raw)
	}
	require.Len(t, sources, 1, "loaded once, then kept")
	src := sources[0]
	assert.Equal(t, "acme-tools@1.0.0", src.Package)
	assert.Equal(t, "shout", src.Tool)
	assert.Equal(t, f.srv.cfg.Store.Dir, src.ToolsDir)
	assert.Equal(t, f.srv.tools.toolLimits(sandbox.Limits{}), src.Defaults)
}
