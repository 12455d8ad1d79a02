package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC 2.0's error codes for what a server refuses before a method
// runs, and the implementation-defined code of wasmgate's own refusals.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeRefused        = -32000
)

// rpcError is a JSON-RPC error answered to a message that cannot be
// handled: it has no id (JSON-RPC says null when the id cannot be known).
type rpcError struct {
	code int
	msg  string
}

// line is the error's JSON-RPC response.
func (e *rpcError) line() []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      *int   `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{e.code, e.msg}})
	return b
}

// lastBatchVersion is the last protocol version with JSON-RPC batches:
// 2025-06-18 removed them.
const lastBatchVersion = "2025-03-26"

// batchesAllowed reports whether a session that asked for protocol version
// requested in its initialize request may send batches. The SDK answers a
// version it supports with that version, and any other with one of its
// newest, which have no batches; "" (no session yet) has none either, as
// initialize itself may not be batched.
func batchesAllowed(requested string) bool {
	return requested != "" && requested <= lastBatchVersion && slices.Contains(sdk.SupportedProtocolVersions(), requested)
}

// screen checks one message as a client sent it (a stdio line, an HTTP
// body) before the SDK reads it, so that what the SDK would end the session
// for, or accept against the protocol, is answered with a JSON-RPC error
// instead: text that is not JSON (-32700), JSON that is not a JSON-RPC
// message (-32600), and a batch under a protocol version without batches
// (-32600). requested is the protocol version the session asked for in its
// initialize request ("" before it).
func screen(msg []byte, requested string) *rpcError {
	msg = bytes.TrimSpace(msg)
	if !json.Valid(msg) {
		return &rpcError{codeParseError, "parse error: the message is not JSON"}
	}
	if msg[0] != '[' {
		if _, err := jsonrpc.DecodeMessage(msg); err != nil {
			return &rpcError{codeInvalidRequest, fmt.Sprintf("invalid request: not a JSON-RPC 2.0 message: %v", err)}
		}
		return nil
	}
	if !batchesAllowed(requested) {
		asked := "it has not initialized, and initialize may not be batched"
		if requested != "" {
			asked = "it asked for " + requested
		}
		return &rpcError{codeInvalidRequest, fmt.Sprintf(
			"invalid request: JSON-RPC batches are not part of MCP after protocol version %s, and this session has none (%s); send each message on its own", lastBatchVersion, asked)}
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 {
		return &rpcError{codeInvalidRequest, "invalid request: an empty batch"}
	}
	for i, m := range batch {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return &rpcError{codeInvalidRequest, fmt.Sprintf("invalid request: batch item %d is not a JSON-RPC 2.0 message: %v", i, err)}
		}
	}
	return nil
}
