package toolproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/wasmgate/wasmgate/pipeline"
)

// Passthrough emits every event as the NDJSON line it came as.
func Passthrough(w io.Writer) EmitFunc {
	return func(_ Event, line []byte) error {
		_, err := w.Write(append(line[:len(line):len(line)], '\n'))
		return err
	}
}

// Pretty emits events for a person:
//
//	▶ started text-slug 1.0.0
//	  log: slugging 12 characters
//	  log: warn: something to know {"n":3}
//	✔ result: {"slug":"hello-world"}
//	✖ error EXECUTOR_EXCEPTION: TypeError: title must be a string
func Pretty(w io.Writer) EmitFunc {
	return func(ev Event, _ []byte) error {
		_, err := io.WriteString(w, prettyLine(ev)+"\n")
		return err
	}
}

func prettyLine(ev Event) string {
	switch ev.Type {
	case EventStarted:
		var p StartedPayload
		_ = json.Unmarshal(ev.Payload, &p)
		line := "▶ started " + ev.ToolID
		if p.Meta.Version != "" {
			line += " " + p.Meta.Version
		}
		return line
	case EventLog:
		var p LogPayload
		_ = json.Unmarshal(ev.Payload, &p)
		line := "  log: " + p.Message
		if p.Level != "" && p.Level != LevelInfo {
			line = "  log: " + p.Level + ": " + p.Message
		}
		if len(p.Data) > 0 {
			line += " " + compact(p.Data)
		}
		return line
	case EventResult:
		return "✔ result: " + compact(ev.Payload)
	case EventError:
		p, _ := ErrorOf(ev)
		return fmt.Sprintf("✖ error %s: %s", p.Code, p.Message)
	}
	return fmt.Sprintf("? %s event", ev.Type)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// FormatVerdict is the governance verdict of a run as one line for a
// person (the audit record has it for programs):
//
//	verdict: SUCCESS [] text_slug 1.0.0 fuel_used=81234 duration_ms=3 trace_id=… input_digest=… output_digest=… audit_index=41
//
// audit_index is there when a log keeps the verdict (ActionResult.AuditIndex).
func FormatVerdict(res pipeline.ActionResult) string {
	codes := make([]string, len(res.ReasonCodes))
	for i, c := range res.ReasonCodes {
		codes[i] = string(c)
	}
	out := "null"
	if res.OutputDigest != nil {
		out = *res.OutputDigest
	}
	line := fmt.Sprintf("verdict: %s [%s] %s %s fuel_used=%d duration_ms=%d trace_id=%s input_digest=%s output_digest=%s",
		res.Status, strings.Join(codes, " "), res.ExecutorID, res.ExecutorVersion, res.FuelUsed, res.DurationMs,
		res.TraceID, res.InputDigest, out)
	if res.AuditIndex != nil {
		line += fmt.Sprintf(" audit_index=%d", *res.AuditIndex)
	}
	return line
}
