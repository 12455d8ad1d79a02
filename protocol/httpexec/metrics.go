package httpexec

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.HistogramVec // by route and HTTP status
	calls    *prometheus.CounterVec   // tool calls by verdict and protocol error code
	reasons  *prometheus.CounterVec   // reason codes of tool calls
	inFlight prometheus.Gauge
	// admissionRefusals counts the calls refused for want of a slot, by
	// why (queue_full, queue_wait, client_gone).
	admissionRefusals *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wasmgate_http_request_duration_seconds",
			Help:    "Latency of HTTP requests, by route and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "code"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmgate_tool_calls_total",
			Help: "Tool calls, by status (SUCCESS, FAILED, BLOCKED; ERROR when no verdict was reached; REFUSED before anything ran) and protocol error code.",
		}, []string{"status", "error_code"}),
		reasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmgate_tool_call_reason_codes_total",
			Help: "Reason codes of tool calls' verdicts.",
		}, []string{"reason_code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wasmgate_tool_calls_in_flight",
			Help: "Tool calls running now.",
		}),
		admissionRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmgate_admission_refusals_total",
			Help: "Tool calls refused for want of a slot (503), by reason: queue_full, queue_wait, client_gone.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.requests, m.calls, m.reasons, m.inFlight, m.admissionRefusals)
	return m
}

func (m *metrics) observeRequest(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
}

func (m *metrics) observeCall(status, code string) {
	m.calls.WithLabelValues(status, code).Inc()
}
