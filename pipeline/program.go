package pipeline

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Programs: an executor run as a command-line program (jstool.Program, what
// `wasmgate node` runs, and the NDJSON front's tools of runtime "node"). Its
// input is the bytes of its stdin rather than a JSON payload, its output the
// bytes of its stdout (sandbox.Outcome's Output, written to the real stream
// as the program ran), and it ends with an exit status
// (sandbox.Outcome's ExitCode). Everything else is an action's: the same
// limits, the same write-ahead audit, the same verdicts and reason codes.

// ProgramRequest is one run of a program as an action.
type ProgramRequest struct {
	// Action names the action in the audit log (e.g. "node").
	Action string
	// Stdin is the program's input. A caller that reads it from a stream
	// may stop at one byte past Limits.MaxPayloadBytes: a longer stdin is
	// refused whatever its length.
	Stdin []byte
	// Limits are the run's limits; fields left unset come from the
	// program's manifest, then its defaults (as for a registry's executor:
	// its own when it has them, jstool.ProgramLimits() for a Node program).
	Limits sandbox.Limits
	// TraceID (a UUID) and TsUTC (RFC 3339, UTC) are the request's, or new
	// ones when empty.
	TraceID, TsUTC string
}

// RunProgram runs prog once on req.Stdin as one governed action and returns
// its verdict. It is audited as Execute audits an action (an attempt before
// the program runs, then the verdict naming it), with input_digest the
// BLAKE3 digest of the stdin bytes, output_digest that of the stdout bytes
// (null when it wrote none), and the exit status in the verdict's exit_code
// when the program ended by itself.
//
// Exit status 0 is SUCCESS; another is FAILED with EXECUTOR_EXCEPTION
// (Message "exit status N"); a limit that stopped the program is BLOCKED
// with its reason codes, as for any executor; a stdin longer than
// max_payload_bytes is BLOCKED with PAYLOAD_TOO_LARGE before anything runs.
// The result carries no Output: the program wrote its stdout itself.
//
// # Errors
//
// As Execute: ErrInvalidRequest for a malformed trace_id or ts_utc, an
// error wrapping ctx.Err() when the caller cancelled the run, ErrInternal
// when the engine failed.
func (p *Pipeline) RunProgram(ctx context.Context, prog Executor, req ProgramRequest) (ActionResult, error) {
	res, start, err := p.begin(req.Action, req.TraceID, req.TsUTC)
	if err != nil {
		return ActionResult{}, err
	}
	var tr trail
	identify(&res, prog, &tr.moduleDigest)
	limits := req.Limits.WithDefaults(prog.Manifest().Limits).WithDefaults(defaultLimits(prog))
	if int64(len(req.Stdin)) > limits.MaxPayloadBytes {
		// The stdin may have been cut short: no digest of it is honest.
		block(&res, StatusBlocked, fmt.Sprintf("stdin is larger than max_payload_bytes %d", limits.MaxPayloadBytes), LimitExceeded, PayloadTooLarge)
		return p.finish(ctx, res, start, &tr, nil)
	}
	digest := audit.DigestBytes(req.Stdin)
	res.InputDigest = hex.EncodeToString(digest[:])
	if !p.writeAhead(ctx, &res, &tr) {
		return p.finish(ctx, res, start, &tr, nil)
	}
	out, runErr := prog.Execute(ctx, sandbox.Input{Bytes: req.Stdin, Digest: digest, Limits: limits})
	runErr = judge(ctx, &res, out, runErr, func() error {
		res.Status = StatusSuccess
		return nil
	})
	if runErr == nil && (out.Kind == sandbox.Completed || out.Kind == sandbox.Failed) && out.ExitCode >= 0 {
		code := out.ExitCode
		res.ExitCode = &code
	}
	if len(out.Output) > 0 {
		d := audit.Digest(out.Output)
		res.OutputDigest = &d
	}
	return p.finish(ctx, res, start, &tr, runErr)
}
