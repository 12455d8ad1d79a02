package host

import (
	"context"
	"encoding/binary"
	"math"
)

// Preview1 rights bits granted on the standard streams.
const (
	rightFdDatasync       uint64 = 1 << 0
	rightFdRead           uint64 = 1 << 1
	rightFdFdstatSetFlags uint64 = 1 << 3
	rightFdSync           uint64 = 1 << 4
	rightFdWrite          uint64 = 1 << 6
	rightFdFilestatGet    uint64 = 1 << 21
	rightPollFdReadwrite  uint64 = 1 << 27
)

// Rights are exactly what the streams support. Leaving out fd_seek and fd_tell
// (with the character-device filetype) is how libc's isatty recognizes a
// terminal, so C guests line-buffer stdout: slower, never different bytes.
const (
	rightsStream = rightFdDatasync | rightFdSync | rightFdFdstatSetFlags | rightFdFilestatGet | rightPollFdReadwrite
	rightsStdin  = rightsStream | rightFdRead
	rightsStdout = rightsStream | rightFdWrite
)

// Preview1 file types of the standard streams.
const (
	filetypeUnknown         = 0
	filetypeCharacterDevice = 2
)

// Preview1 fdflags. Only append and nonblock may be set: the sync flags
// promise durability that an in-memory stream cannot mean.
const (
	fdflagAppend    = 1 << 0
	fdflagNonblock  = 1 << 2
	fdflagsSettable = fdflagAppend | fdflagNonblock
)

func (s stream) rights() uint64 {
	if s == streamStdin {
		return rightsStdin
	}
	return rightsStdout
}

func fdFdstatGet(ctx context.Context, mem Memory, stack []uint64) errno {
	w := &SessionFrom(ctx).wasi
	e := w.open(uint32(stack[0]))
	if e == nil {
		return errnoBadf
	}
	b := w.scratch[:24]
	clear(b)
	b[0] = w.filetype
	binary.LittleEndian.PutUint16(b[2:], e.flags)
	binary.LittleEndian.PutUint64(b[8:], e.stream.rights())
	// b[16:24], the inheriting rights, stays 0: nothing can be opened.
	return memPut(mem, uint32(stack[1]), b)
}

func fdFdstatSetFlags(ctx context.Context, _ Memory, stack []uint64) errno {
	e := SessionFrom(ctx).wasi.open(uint32(stack[0]))
	if e == nil {
		return errnoBadf
	}
	flags := uint32(stack[1])
	if flags&^fdflagsSettable != 0 {
		return errnoInval
	}
	e.flags = uint16(flags)
	return errnoSuccess
}

// fdFdstatSetRights refuses: rights never change here, and preview1 rights
// are gone from later WASI versions, so no guest depends on dropping them.
func fdFdstatSetRights(ctx context.Context, _ Memory, stack []uint64) errno {
	if SessionFrom(ctx).wasi.open(uint32(stack[0])) == nil {
		return errnoBadf
	}
	return errnoNotsup
}

func fdFilestatGet(ctx context.Context, mem Memory, stack []uint64) errno {
	w := &SessionFrom(ctx).wasi
	e := w.open(uint32(stack[0]))
	if e == nil {
		return errnoBadf
	}
	b := w.scratch[:64]
	clear(b)
	// dev 0; the inode is the stream, so fds renumbered onto the same
	// stream compare equal and stdout and stderr never do.
	binary.LittleEndian.PutUint64(b[8:], uint64(e.stream))
	b[16] = w.filetype
	binary.LittleEndian.PutUint64(b[24:], 1) // nlink
	// size 0; every timestamp is the one instant the clocks report.
	binary.LittleEndian.PutUint64(b[40:], FixedEpochNanos)
	binary.LittleEndian.PutUint64(b[48:], FixedEpochNanos)
	binary.LittleEndian.PutUint64(b[56:], FixedEpochNanos)
	return memPut(mem, uint32(stack[1]), b)
}

// fdClose closes the fd for good: it is never reused, as no fd is ever
// created. The stream's bytes stay in the session.
func fdClose(ctx context.Context, _ Memory, stack []uint64) errno {
	e := SessionFrom(ctx).wasi.open(uint32(stack[0]))
	if e == nil {
		return errnoBadf
	}
	*e = fdEntry{}
	return errnoSuccess
}

// fdRenumber makes `to` refer to what `from` did and closes `from`; as in
// preview1, `to` must already be open.
func fdRenumber(ctx context.Context, _ Memory, stack []uint64) errno {
	w := &SessionFrom(ctx).wasi
	from, to := w.open(uint32(stack[0])), w.open(uint32(stack[1]))
	if from == nil || to == nil {
		return errnoBadf
	}
	if from != to {
		*to, *from = *from, fdEntry{}
	}
	return errnoSuccess
}

// fdSync serves fd_sync and fd_datasync: whatever was written is already in
// the session, so there is nothing to flush.
func fdSync(ctx context.Context, _ Memory, stack []uint64) errno {
	if SessionFrom(ctx).wasi.open(uint32(stack[0])) == nil {
		return errnoBadf
	}
	return errnoSuccess
}

// fdUnseekable serves the functions that take or report a file offset
// (fd_seek, fd_tell, fd_pread, fd_pwrite, fd_advise, fd_allocate): a stream
// has none, and ESPIPE is how libc tells a pipe or terminal from a file.
func fdUnseekable(ctx context.Context, _ Memory, stack []uint64) errno {
	if SessionFrom(ctx).wasi.open(uint32(stack[0])) == nil {
		return errnoBadf
	}
	return errnoSpipe
}

// fdNotCapable serves the functions that need a right the streams lack
// (fd_filestat_set_size, fd_filestat_set_times, fd_readdir): ENOTCAPABLE is
// preview1's answer for a missing right, and fd_fdstat_get reports the rights.
func fdNotCapable(ctx context.Context, _ Memory, stack []uint64) errno {
	if SessionFrom(ctx).wasi.open(uint32(stack[0])) == nil {
		return errnoBadf
	}
	return errnoNotcapable
}

// fdNoPrestat serves fd_prestat_get and fd_prestat_dir_name. No fd is a
// preopened directory, and EBADF is what ends libc's scan for preopens at
// fd 3.
func fdNoPrestat(context.Context, Memory, []uint64) errno { return errnoBadf }

// iovecs validates the iovec array at iovs (8 bytes each: buf, buf_len) and
// the 4-byte result at resultPtr before anything is transferred, and returns
// the array and the total length. A total beyond what the u32 result can
// report is EINVAL, as for POSIX readv/writev overflowing ssize_t.
func iovecs(mem Memory, iovs, iovsLen, resultPtr uint32) ([]byte, uint32, errno) {
	vec, ok := memSpan(mem, iovs, uint64(iovsLen)*8)
	if !ok {
		return nil, 0, errnoFault
	}
	if _, ok := memSpan(mem, resultPtr, 4); !ok {
		return nil, 0, errnoFault
	}
	var total uint64
	for i := 0; i < len(vec); i += 8 {
		buf, n := binary.LittleEndian.Uint32(vec[i:]), binary.LittleEndian.Uint32(vec[i+4:])
		if _, ok := memSpan(mem, buf, uint64(n)); !ok {
			return nil, 0, errnoFault
		}
		total += uint64(n)
	}
	if total > math.MaxUint32 {
		return nil, 0, errnoInval
	}
	return vec, uint32(total), errnoSuccess
}

func fdRead(ctx context.Context, mem Memory, stack []uint64) errno {
	s := SessionFrom(ctx)
	e := s.wasi.open(uint32(stack[0]))
	if e == nil || e.stream != streamStdin {
		return errnoBadf
	}
	vec, _, code := iovecs(mem, uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
	if code != errnoSuccess {
		return code
	}
	var nread uint32
	for i := 0; i < len(vec); i += 8 {
		buf, n := binary.LittleEndian.Uint32(vec[i:]), binary.LittleEndian.Uint32(vec[i+4:])
		chunk := s.unreadStdin()
		if uint64(len(chunk)) > uint64(n) {
			chunk = chunk[:n]
		}
		if code := memPut(mem, buf, chunk); code != errnoSuccess {
			return code
		}
		s.consumeStdin(len(chunk))
		nread += uint32(len(chunk))
		if uint64(len(chunk)) < uint64(n) {
			break // stdin is exhausted; at EOF nread stays 0
		}
	}
	return s.wasi.put32(mem, uint32(stack[3]), nread)
}

func fdWrite(ctx context.Context, mem Memory, stack []uint64) errno {
	s := SessionFrom(ctx)
	e := s.wasi.open(uint32(stack[0]))
	if e == nil || e.stream == streamStdin {
		return errnoBadf
	}
	vec, total, code := iovecs(mem, uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
	if code != errnoSuccess {
		return code
	}
	for i := 0; i < len(vec); i += 8 {
		buf, n := binary.LittleEndian.Uint32(vec[i:]), binary.LittleEndian.Uint32(vec[i+4:])
		b, _ := memSpan(mem, buf, uint64(n))
		if e.stream == streamStderr {
			if err := s.streamStderr(b); err != nil {
				panic(err) // as for stdout, below
			}
			s.WriteStderr(b)
			continue
		}
		if err := s.WriteStdout(b); err != nil {
			// Not an errno: a guest may ignore a failed write and carry on,
			// and the output is already lost. Aborting the guest lets package
			// runtime report OUTPUT_TOO_LARGE.
			panic(err)
		}
	}
	return s.wasi.put32(mem, uint32(stack[3]), total)
}
