package host

import (
	"context"
	"fmt"
)

// ABI v1 export names.
const (
	ExportAlloc      = "wg_alloc"
	ExportExecute    = "wg_execute"
	ExportOutputPtr  = "wg_output_ptr"
	ExportOutputLen  = "wg_output_len"
	ExportInitialize = "_initialize"
	ExportStart      = "_start"
)

// ABI v1 statuses returned by wg_execute.
const (
	StatusOK    = 0
	StatusError = 1
)

// GuestError is a breach of the calling contract by the guest (a pointer out
// of its own memory, an unknown status). It is the guest's fault, so it is
// reported like a trap: an executor exception.
type GuestError struct{ Msg string }

func (e *GuestError) Error() string { return "guest broke ABI v1: " + e.Msg }

// ABIResult is what an ABI v1 execution returned.
type ABIResult struct {
	// Status is StatusOK or StatusError.
	Status uint32
	// Output is a copy of the output bytes (the error message when Status
	// is StatusError). Empty means no output.
	Output []byte
}

// RunABIv1 drives one ABI v1 execution on a fresh instance: it asks the guest
// for a buffer, copies the canonical input there, runs wg_execute and copies
// the output out, refusing to copy more than maxOutput bytes.
func RunABIv1(ctx context.Context, inst Instance, input []byte, maxOutput int) (ABIResult, error) {
	mem := inst.Memory()
	if mem == nil {
		return ABIResult{}, &GuestError{Msg: "no exported memory"}
	}
	res, err := inst.Call(ctx, ExportAlloc, uint64(len(input)))
	if err != nil {
		return ABIResult{}, err
	}
	ptr := uint32(res[0])
	if !mem.Write(ptr, input) {
		return ABIResult{}, &GuestError{Msg: fmt.Sprintf("wg_alloc(%d) returned %d, outside the %d bytes of memory", len(input), ptr, mem.Size())}
	}
	res, err = inst.Call(ctx, ExportExecute, uint64(ptr), uint64(len(input)))
	if err != nil {
		return ABIResult{}, err
	}
	status := uint32(res[0])
	if status != StatusOK && status != StatusError {
		return ABIResult{}, &GuestError{Msg: fmt.Sprintf("wg_execute returned status %d; only 0 and 1 are defined", status)}
	}
	res, err = inst.Call(ctx, ExportOutputLen)
	if err != nil {
		return ABIResult{}, err
	}
	n := uint32(res[0])
	if status == StatusOK && int64(n) > int64(maxOutput) {
		return ABIResult{}, ErrOutputTooLarge
	}
	if status == StatusError && n > maxErrorMessage {
		// An error message is diagnostic only: keep its head.
		n = maxErrorMessage
	}
	res, err = inst.Call(ctx, ExportOutputPtr)
	if err != nil {
		return ABIResult{}, err
	}
	out, ok := mem.Read(uint32(res[0]), n)
	if !ok {
		return ABIResult{}, &GuestError{Msg: fmt.Sprintf("output of %d bytes at %d lies outside the %d bytes of memory", n, uint32(res[0]), mem.Size())}
	}
	return ABIResult{Status: status, Output: append([]byte(nil), out...)}, nil
}

// maxErrorMessage bounds the error text kept from a failing guest.
const maxErrorMessage = 4096
