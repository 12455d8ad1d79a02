package httpexec

import (
	"net/http"
	"regexp"
	"strings"
)

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hex32       = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	// traceparent: version "-" trace-id "-" parent-id "-" flags (W3C Trace Context).
	traceparent = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$`)
)

// traceIDFrom takes a request's trace id from its W3C traceparent header or,
// failing that, its X-Trace-Id header, as the UUID the pipeline records: a
// 32-digit trace id is written in UUID form. A header that holds neither is
// ignored, and the pipeline assigns a random id ("" here).
func traceIDFrom(h http.Header) string {
	if m := traceparent.FindStringSubmatch(strings.TrimSpace(h.Get("traceparent"))); m != nil && m[1] != strings.Repeat("0", 32) {
		return asUUID(m[1])
	}
	id := strings.TrimSpace(h.Get("X-Trace-Id"))
	switch {
	case uuidPattern.MatchString(id):
		return strings.ToLower(id)
	case hex32.MatchString(id):
		return asUUID(strings.ToLower(id))
	}
	return ""
}

func asUUID(h string) string {
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
