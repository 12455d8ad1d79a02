package host

import (
	"context"
	"encoding/binary"
)

// Preview1 event types, the tag of a subscription and the type of an event.
const (
	eventtypeClock   = 0
	eventtypeFdRead  = 1
	eventtypeFdWrite = 2
)

// Sizes of the preview1 structs. A subscription is userdata (u64), then the
// subscription_u union: tag (u8) at 8 and, aligned to 8, the body at 16 (clock:
// id u32 at 16, timeout u64 at 24, precision u64 at 32, flags u16 at 40;
// fd_read/fd_write: fd u32 at 16). An event is userdata (u64), error (u16) at
// 8, type (u8) at 10, and for fd events nbytes (u64) at 16, flags (u16) at 24.
const (
	subscriptionSize = 48
	eventSize        = 32
)

// eventrwflagsHangup marks stdin as exhausted: nothing more will ever arrive.
const eventrwflagsHangup = 1

// pollOneoff answers every subscription at once, one event each, in order.
// Nothing ever waits: clocks do not run, so a timeout is due immediately, and
// every stream is always ready (stdin holds all its input from the start,
// writes never block).
func pollOneoff(ctx context.Context, mem Memory, stack []uint64) errno {
	in, out, n, neventsPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	if n == 0 {
		return errnoInval
	}
	inLen, outLen := uint64(n)*subscriptionSize, uint64(n)*eventSize
	subs, ok := memSpan(mem, in, inLen)
	if !ok {
		return errnoFault
	}
	if _, ok := memSpan(mem, out, outLen); !ok {
		return errnoFault
	}
	if _, ok := memSpan(mem, neventsPtr, 4); !ok {
		return errnoFault
	}
	for i := uint64(0); i < inLen; i += subscriptionSize {
		if subs[i+8] > eventtypeFdWrite {
			return errnoInval
		}
	}
	if uint64(in) < uint64(out)+outLen && uint64(out) < uint64(in)+inLen {
		// Writing an event would overwrite subscriptions not yet read.
		subs = append([]byte(nil), subs...)
	}

	s := SessionFrom(ctx)
	ev := s.wasi.scratch[:eventSize]
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize : (i+1)*subscriptionSize]
		tag := sub[8]
		clear(ev)
		copy(ev[0:8], sub[0:8]) // userdata
		ev[10] = tag
		code, nbytes, flags := pollEvent(s, tag, binary.LittleEndian.Uint32(sub[16:]))
		binary.LittleEndian.PutUint16(ev[8:], uint16(code))
		binary.LittleEndian.PutUint64(ev[16:], nbytes)
		binary.LittleEndian.PutUint16(ev[24:], flags)
		if code := memPut(mem, out+i*eventSize, ev); code != errnoSuccess {
			return code
		}
	}
	return s.wasi.put32(mem, neventsPtr, n)
}

// pollEvent is the outcome of one subscription; arg is its clock id or fd.
func pollEvent(s *Session, tag byte, arg uint32) (code errno, nbytes uint64, flags uint16) {
	if tag == eventtypeClock {
		if _, ok := clockNow(s, arg); !ok {
			return errnoInval, 0, 0
		}
		return errnoSuccess, 0, 0
	}
	e := s.wasi.open(arg)
	switch {
	case e == nil:
		return errnoBadf, 0, 0
	case tag == eventtypeFdRead && e.stream == streamStdin:
		left := len(s.unreadStdin())
		if left == 0 {
			flags = eventrwflagsHangup
		}
		return errnoSuccess, uint64(left), flags
	case tag == eventtypeFdWrite && e.stream == streamStdout:
		return errnoSuccess, uint64(s.stdoutRoom()), 0
	case tag == eventtypeFdWrite && e.stream == streamStderr:
		return errnoSuccess, uint64(s.stderrRoom()), 0
	}
	// Reading stdout or writing stdin: the fd is open, but not for that.
	return errnoBadf, 0, 0
}
