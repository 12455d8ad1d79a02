package host

import "context"

// The filesystem (path_*) and socket (sock_*) functions all fail: there is no
// directory and no socket, only the three streams. The answer depends on the
// fds alone: EBADF when one is not open, otherwise ENOTCAPABLE, preview1's
// answer for a right the fd lacks (fd_fdstat_get shows the streams have no
// path or socket rights). Paths and buffers are never read, so a bad pointer
// there is not reported.

// onDir serves a path_* function whose directory fd is parameter i.
func onDir(i int) func(context.Context, Memory, []uint64) errno {
	return func(ctx context.Context, _ Memory, stack []uint64) errno {
		return refuseOn(ctx, uint32(stack[i]))
	}
}

// onDirs serves path_link and path_rename, which take two directory fds.
func onDirs(i, j int) func(context.Context, Memory, []uint64) errno {
	return func(ctx context.Context, _ Memory, stack []uint64) errno {
		return refuseOn(ctx, uint32(stack[i]), uint32(stack[j]))
	}
}

// onSocket serves the sock_* functions, whose socket fd is parameter 0.
func onSocket(ctx context.Context, _ Memory, stack []uint64) errno {
	return refuseOn(ctx, uint32(stack[0]))
}

func refuseOn(ctx context.Context, fds ...uint32) errno {
	w := &SessionFrom(ctx).wasi
	for _, fd := range fds {
		if w.open(fd) == nil {
			return errnoBadf
		}
	}
	return errnoNotcapable
}
