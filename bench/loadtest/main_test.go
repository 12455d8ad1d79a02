package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/testenv"
)

func TestCheckReply(t *testing.T) {
	want := []byte(trimOutput)
	cases := []struct {
		name   string
		status int
		body   string
		err    string
	}{
		{"the output", http.StatusOK, `{"success":true,"output":{"text":"hello world"},"executionTimeMs":0}`, ""},
		{"another output", http.StatusOK, `{"success":true,"output":{"text":"  hello world  "}}`, `output {"text":"  hello world  "}, want {"text":"hello world"}`},
		{"a tool error", http.StatusOK, `{"success":false,"error":{"code":"EXECUTION_TIMEOUT","message":"timeout_ms elapsed"}}`, "EXECUTION_TIMEOUT: timeout_ms elapsed"},
		{"success false alone", http.StatusOK, `{"success":false}`, "success false"},
		{"saturated", http.StatusServiceUnavailable, `{"success":false,"error":{"code":"SERVICE_UNAVAILABLE"}}`, "HTTP 503"},
		{"not JSON", http.StatusOK, `<html>`, "not the protocol's JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkReply(c.status, []byte(c.body), want)
			if c.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.err)
			}
		})
	}
}

// TestDriveCounts drives a fake call: a count bound stops it exactly, every
// call is a latency, and errors are counted with the first one kept.
func TestDriveCounts(t *testing.T) {
	var n atomic.Int64
	l := &load{call: func(context.Context) error {
		if n.Add(1)%10 == 0 {
			return errors.New("every tenth")
		}
		return nil
	}}
	drive(context.Background(), l, 4, 0, 20, false)
	assert.Equal(t, 20, l.calls)
	assert.Zero(t, l.requests, "warm-up calls are not measured")
	drive(context.Background(), l, 4, time.Minute, 100, true)
	assert.Equal(t, 120, l.calls)
	assert.Equal(t, 100, l.requests)
	assert.Len(t, l.latencies, 100)
	assert.Equal(t, 12, l.errors)
	assert.Equal(t, "every tenth", l.firstError)
	assert.Positive(t, l.elapsed)
}

// TestRunBrieflyUnderLoad runs the whole load test briefly: it builds and
// starts the server, drives both paths with both audit kinds, and prints the
// table with no error. A load test: `make loadtest` runs it.
func TestRunBrieflyUnderLoad(t *testing.T) {
	testenv.LoadTest(t)
	t.Chdir("../..")
	var out bytes.Buffer
	o := options{clients: 2, duration: 300 * time.Millisecond, maxRequests: 1000, rounds: 1, warmup: 2}
	require.NoError(t, run(context.Background(), o, &out))
	table := out.String()
	assert.Contains(t, table, "| path | audit | clients | requests | errors |")
	for _, row := range []string{
		"| in-process pipeline | durable file | 2 | ",
		"| HTTP via `wasmgate serve` | durable file | 2 | ",
		"| in-process pipeline | checked and dropped | 2 | ",
		"| HTTP via `wasmgate serve` | checked and dropped | 2 | ",
	} {
		i := strings.Index(table, row)
		require.NotEqual(t, -1, i, "row %q in:\n%s", row, table)
		cells := strings.Split(table[i:strings.IndexByte(table[i:], '\n')+i], " | ")
		assert.Equal(t, "0", cells[4], "no errors: %s", row)
	}
	assert.Contains(t, table, "Target: HTTP throughput within 2x of in-process, zero errors")
}
