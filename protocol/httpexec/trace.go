package httpexec

import (
	"net/http"
	"strings"

	"github.com/wasmgate/wasmgate/internal/traceid"
)

// traceIDFrom takes a request's trace id from its W3C traceparent header or,
// failing that, its X-Trace-Id header, as the UUID the pipeline records: a
// 32-digit trace id is written in UUID form. A header that holds neither is
// ignored, and the pipeline assigns a random id ("" here).
func traceIDFrom(h http.Header) string {
	if id, ok := traceid.FromTraceparent(h.Get("traceparent")); ok {
		return id
	}
	if id, ok := traceid.Parse(strings.TrimSpace(h.Get("X-Trace-Id"))); ok {
		return id
	}
	return ""
}
