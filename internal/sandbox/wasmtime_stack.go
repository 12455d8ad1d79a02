//go:build wasmtime

package sandbox

/*
#include <pthread.h>

// The stack size of threads created with default attributes: what the Go
// runtime gives the threads cgo calls (and so wasm code) run on.
static size_t wg_thread_stack_size(void) {
	pthread_attr_t attr;
	size_t size = 0;
	if (pthread_attr_init(&attr) != 0) {
		return 0;
	}
	pthread_attr_getstacksize(&attr, &size);
	pthread_attr_destroy(&attr);
	return size;
}
*/
import "C"

// Bounds of the native stack wasm code may use (see maxWasmStack).
const (
	wasmStackCeiling = 4 << 20
	wasmStackFloor   = 256 << 10
)

// maxWasmStack is how much native stack wasm code may use: half the stack
// of the threads it runs on (wasm runs on the calling thread's stack; the
// other half is for the host functions and engine frames between), at most
// wasmStackCeiling.
//
// The instrumented depth limit must trip first: at MaxCallDepth frames the
// QuickJS engine's own recursion (its interpreter loop, the largest frames
// of any guest here) needs about 0.7 MiB. With the usual 8 MiB thread stacks
// the ceiling leaves a margin of 5x; with glibc's 2 MiB default (no stack
// rlimit) 1 MiB still suffices. Guests whose frames are larger (thousands of
// locals per function) run out of native stack first: STACK_EXHAUSTED all
// the same, but the fuel spent depends on the engine.
func maxWasmStack() int {
	size := int(C.wg_thread_stack_size())
	if size == 0 {
		size = 2 << 20
	}
	return min(max(size/2, wasmStackFloor), wasmStackCeiling)
}
