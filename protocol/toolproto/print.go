package toolproto

import (
	"encoding/json"
	"fmt"
	"io"
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
//	  log: warn: something to know
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
		if p.Version != "" {
			line += " " + p.Version
		}
		return line
	case EventLog:
		var p LogPayload
		_ = json.Unmarshal(ev.Payload, &p)
		if p.Level != "" && p.Level != LevelInfo {
			return "  log: " + p.Level + ": " + p.Message
		}
		return "  log: " + p.Message
	case EventResult:
		var p struct {
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		if len(p.Output) == 0 {
			p.Output = json.RawMessage("null")
		}
		return "✔ result: " + string(p.Output)
	case EventError:
		p, _ := ErrorOf(ev)
		return fmt.Sprintf("✖ error %s: %s", p.Code, p.Message)
	}
	return fmt.Sprintf("? %s event", ev.Type)
}
