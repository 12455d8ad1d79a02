package toolproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Request is a ToolRequest: what a tool is asked to do, on its stdin.
type Request struct {
	Context RequestContext `json:"context"`
	// Input is the tool's payload, any JSON value; absent means {}.
	Input json.RawMessage `json:"input,omitempty"`

	// timeoutMs is context.config.timeoutMs, when set.
	timeoutMs int64
}

// RequestContext is the part of a request that is not the tool's input.
type RequestContext struct {
	// ToolID, when set, must be the tool that is run.
	ToolID string `json:"toolId,omitempty"`
	// Config is a JSON object: the tool's configuration, checked against
	// the manifest's requiredConfig and given to JS tools as the env of
	// factories. Its key timeoutMs (milliseconds) sets the run's timeout.
	Config json.RawMessage `json:"config,omitempty"`
	// WorkspaceRoot is the caller's working directory. Tools run without
	// a file system, so it is informational.
	WorkspaceRoot string `json:"workspaceRoot,omitempty"`
}

// ConfigTimeoutKey is the config key that sets a run's timeout.
const ConfigTimeoutKey = "timeoutMs"

// DefaultTimeoutMs is a run's timeout when neither the request's config nor
// the manifest sets one.
const DefaultTimeoutMs = 30_000

// maxTimeoutMs keeps a timeout within a time.Duration.
const maxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// Timeout is the timeout of a run of m (nil when unknown) for req (nil
// when unusable): the request's config timeoutMs, else the manifest's
// timeoutMs, else DefaultTimeoutMs.
func Timeout(m *Manifest, req *Request) time.Duration {
	ms := int64(DefaultTimeoutMs)
	switch {
	case req != nil && req.timeoutMs > 0:
		ms = req.timeoutMs
	case m != nil && m.TimeoutMs > 0:
		ms = m.TimeoutMs
	}
	return time.Duration(ms) * time.Millisecond
}

// ParseRequest checks raw as a ToolRequest: one JSON object whose context,
// when present, is an object with a string toolId and workspaceRoot and an
// object config (whose timeoutMs, if set, is a positive whole number).
// Fields the protocol does not define are ignored.
func ParseRequest(raw []byte) (*Request, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New(`stdin is empty; send a ToolRequest {"context": {"toolId", "config", "workspaceRoot"}, "input": ...}`)
	}
	if raw[0] != '{' {
		return nil, errors.New("the request is not a JSON object")
	}
	var top struct {
		Context json.RawMessage `json:"context"`
		Input   json.RawMessage `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("the request is not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("the request holds more than one JSON value")
	}
	req := &Request{Input: top.Input}
	if c := bytes.TrimSpace(top.Context); len(c) > 0 && string(c) != "null" {
		var ctx struct {
			ToolID        json.RawMessage `json:"toolId"`
			Config        json.RawMessage `json:"config"`
			WorkspaceRoot json.RawMessage `json:"workspaceRoot"`
		}
		if c[0] != '{' || json.Unmarshal(c, &ctx) != nil {
			return nil, errors.New("context must be a JSON object")
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			to   *string
		}{{"toolId", ctx.ToolID, &req.Context.ToolID}, {"workspaceRoot", ctx.WorkspaceRoot, &req.Context.WorkspaceRoot}} {
			if len(f.raw) > 0 && string(f.raw) != "null" && json.Unmarshal(f.raw, f.to) != nil {
				return nil, fmt.Errorf("context.%s must be a string", f.name)
			}
		}
		if cfg := bytes.TrimSpace(ctx.Config); len(cfg) > 0 && string(cfg) != "null" {
			var keys map[string]json.RawMessage
			if cfg[0] != '{' || json.Unmarshal(cfg, &keys) != nil {
				return nil, errors.New("context.config must be a JSON object")
			}
			if t, ok := keys[ConfigTimeoutKey]; ok && string(t) != "null" {
				if json.Unmarshal(t, &req.timeoutMs) != nil || req.timeoutMs <= 0 || req.timeoutMs > maxTimeoutMs {
					return nil, fmt.Errorf("context.config.%s must be a positive whole number of milliseconds, not %s", ConfigTimeoutKey, t)
				}
			}
			req.Context.Config = cfg
		}
	}
	return req, nil
}

// NewRequest encodes the ToolRequest for toolID with config (a JSON
// object, or empty) and input (any JSON value, or empty for {}).
func NewRequest(toolID string, config, input json.RawMessage, workspaceRoot string) ([]byte, error) {
	if len(input) > 0 && !json.Valid(input) {
		return nil, errors.New("the input is not JSON")
	}
	if len(config) > 0 {
		var keys map[string]json.RawMessage
		if t := bytes.TrimSpace(config); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &keys) != nil {
			return nil, errors.New("the config is not a JSON object")
		}
	}
	raw, err := marshal(Request{Context: RequestContext{ToolID: toolID, Config: config, WorkspaceRoot: workspaceRoot}, Input: input})
	if err != nil {
		return nil, err
	}
	if _, err := ParseRequest(raw); err != nil {
		return nil, err
	}
	return raw, nil
}
