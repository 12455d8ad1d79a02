package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wasmgate/wasmgate/pipeline"
)

// Headers of a request message. The message id (Nats-Msg-Id) is the
// request's trace id, so JetStream drops a publish that is retried.
const (
	// HeaderReply is the subject the worker publishes the result on.
	HeaderReply = "Wasmgate-Reply"
	// HeaderDeadline is the request's deadline (RFC 3339, UTC): a worker
	// that takes it later refuses it unrun, BLOCKED EXECUTOR_TIMEOUT.
	HeaderDeadline = "Wasmgate-Deadline"
)

// wireRequest is a request message's body. The payload and env travel as
// the bytes the caller gave (JSON or not: a payload that is not JSON is a
// verdict, NON_JSON_PAYLOAD, which the worker reaches and audits).
type wireRequest struct {
	Action  string `json:"action"`
	TraceID string `json:"trace_id"`
	TsUTC   string `json:"ts_utc"`
	Payload []byte `json:"payload"`
	Env     []byte `json:"env,omitempty"`
}

func encodeRequest(req pipeline.ActionRequest) []byte {
	b, _ := json.Marshal(wireRequest{Action: req.Action, TraceID: req.TraceID, TsUTC: req.TsUTC, Payload: req.Payload, Env: req.Env})
	return b
}

func decodeRequest(m *nats.Msg) (pipeline.ActionRequest, time.Time, error) {
	var w wireRequest
	if err := json.Unmarshal(m.Data, &w); err != nil {
		return pipeline.ActionRequest{}, time.Time{}, fmt.Errorf("request message: %w", err)
	}
	if w.TraceID == "" || w.Action == "" {
		return pipeline.ActionRequest{}, time.Time{}, errors.New("request message: no action or no trace_id")
	}
	var deadline time.Time
	if d := m.Header.Get(HeaderDeadline); d != "" {
		t, err := time.Parse(time.RFC3339Nano, d)
		if err != nil {
			return pipeline.ActionRequest{}, time.Time{}, fmt.Errorf("request message: %s %q: %w", HeaderDeadline, d, err)
		}
		deadline = t
	}
	return pipeline.ActionRequest{Action: w.Action, TraceID: w.TraceID, TsUTC: w.TsUTC, Payload: w.Payload, Env: w.Env}, deadline, nil
}

// wireReply is a result message's body: the ActionResult, field for field,
// and what the front needs to present it, or why there is none.
type wireReply struct {
	Result *pipeline.ActionResult `json:"result,omitempty"`
	// Quotes: the result's message quotes the executor.
	Quotes bool `json:"quotes,omitempty"`
	// Stage and Failure are the result's classification, which its JSON
	// form leaves out; a reply stored without them (an older worker's) is
	// classified again from its reason codes.
	Stage   pipeline.Stage       `json:"stage,omitempty"`
	Failure pipeline.FailureKind `json:"failure,omitempty"`
	// Error is set when Execute returned an error.
	Error *wireError `json:"error,omitempty"`
	// Reused is set when the request's id had a verdict already: the
	// answer is that verdict's, as it was first given.
	Reused *wireReused `json:"reused,omitempty"`
}

// wireReused says an answer is the one given before to the id's request.
type wireReused struct {
	// VerdictSeq is the seq of the verdict's record in the audit chain.
	VerdictSeq uint64 `json:"verdict_seq"`
	// Differs names what of this message's request differs from the
	// request judged ("action", "payload", "env", "trace_id", "ts_utc");
	// empty for the same request (a retry).
	Differs []string `json:"differs,omitempty"`
}

// ErrRequestIDReused is matched by the error of a request whose id (see
// WithRequestID) was given before to a request that differs from it: the
// result is that request's verdict, not one of this request, which was
// not executed. A request id names one request for ever.
var ErrRequestIDReused = errors.New("cluster: the request id names an earlier, different request")

type wireError struct {
	// Kind is "invalid" (ErrInvalidRequest), "cancelled", "deadline" or
	// "internal" (ErrInternal and anything else).
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func encodeReply(res pipeline.ActionResult, err error) []byte {
	w := wireReply{}
	if res.Status != "" {
		w.Result = &res
		w.Quotes, w.Stage, w.Failure = res.QuotesExecutor, res.Stage, res.Failure
	}
	if err != nil {
		kind := "internal"
		switch {
		case errors.Is(err, pipeline.ErrInvalidRequest):
			kind = "invalid"
		case errors.Is(err, context.DeadlineExceeded):
			kind = "deadline"
		case errors.Is(err, context.Canceled):
			kind = "cancelled"
		}
		msg := err.Error()
		if kind == "invalid" {
			// decodeReply wraps it in ErrInvalidRequest again.
			msg = strings.TrimPrefix(msg, pipeline.ErrInvalidRequest.Error()+": ")
		}
		w.Error = &wireError{Kind: kind, Message: msg}
	}
	b, _ := json.Marshal(w)
	return b
}

func decodeReply(b []byte) (pipeline.ActionResult, error) {
	var w wireReply
	if err := json.Unmarshal(b, &w); err != nil {
		return pipeline.ActionResult{}, fmt.Errorf("%w: result message: %v", pipeline.ErrInternal, err)
	}
	var res pipeline.ActionResult
	if w.Result != nil {
		res = *w.Result
		res.QuotesExecutor, res.Stage, res.Failure = w.Quotes, w.Stage, w.Failure
		if res.Stage == "" {
			res.Stage, res.Failure = pipeline.Classify(res.ReasonCodes, res.FuelUsed > 0)
		}
	}
	err := w.Error.err()
	if w.Reused != nil && len(w.Reused.Differs) > 0 {
		reused := fmt.Errorf("%w: it differs in %s; the result is its verdict (audit record %d), and this request was not executed",
			ErrRequestIDReused, strings.Join(w.Reused.Differs, ", "), w.Reused.VerdictSeq)
		if err != nil {
			return res, fmt.Errorf("%w; the verdict came with: %w", reused, err)
		}
		return res, reused
	}
	return res, err
}

// err is the error a result message carries, nil for none.
func (e *wireError) err() error {
	if e == nil {
		return nil
	}
	switch e.Kind {
	case "invalid":
		return fmt.Errorf("%w: %s", pipeline.ErrInvalidRequest, e.Message)
	case "deadline":
		return fmt.Errorf("worker: %s: %w", e.Message, context.DeadlineExceeded)
	case "cancelled":
		return fmt.Errorf("worker: %s: %w", e.Message, context.Canceled)
	}
	return fmt.Errorf("%w: worker: %s", pipeline.ErrInternal, e.Message)
}
