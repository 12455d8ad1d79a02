// Package host defines what every guest can see: the ABI v1 calling
// sequence, the virtual deterministic WASI, and the per-execution Session
// they act on. What only the QuickJS engine sees (its env.host_* imports,
// Node's crypto, Intl, programs and scripts) is package internal/jshost,
// linked only by programs that import the JavaScript kind, so that a
// Wasm-only program does not carry it (nor golang.org/x/text and x/crypto).
//
// Nothing here performs real I/O on a guest's behalf. The package is written
// against two small interfaces, Memory and Instance, so that one host
// implementation serves every Wasm engine: an engine adapter (in package
// runtime) wraps its own memory and instance types and exposes the Functions
// of this package as imports.
package host

import (
	"context"
	"encoding/binary"
)

// ValueType is the type of a Wasm parameter or result crossing the host
// boundary. The numbering follows the binary format's value type bytes.
type ValueType byte

const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
	F32 ValueType = 0x7d
	F64 ValueType = 0x7c
)

// Memory is a guest's linear memory as the host sees it.
//
// Implementations must bounds-check every access: an out-of-range access
// reports ok == false and never panics or touches memory outside the guest.
type Memory interface {
	// Size is the current size in bytes.
	Size() uint32
	// Read returns a view of length bytes at offset. The view aliases guest
	// memory and is valid only until the guest runs again or memory grows.
	Read(offset, length uint32) ([]byte, bool)
	// Write copies b into guest memory at offset.
	Write(offset uint32, b []byte) bool
}

// ReadUint32 reads a little-endian uint32 at offset.
func ReadUint32(m Memory, offset uint32) (uint32, bool) {
	b, ok := m.Read(offset, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// WriteUint32 writes v little-endian at offset.
func WriteUint32(m Memory, offset, v uint32) bool {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return m.Write(offset, b[:])
}

// WriteUint64 writes v little-endian at offset.
func WriteUint64(m Memory, offset uint32, v uint64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return m.Write(offset, b[:])
}

// Function is a host function a guest may import, described independently of
// any engine.
//
// Call receives the arguments in stack[:len(Params)] encoded as in
// wazero's api.GoModuleFunction (i32 zero-extended, floats as their bits) and
// writes the results to stack[:len(Results)]. ctx carries the Session of the
// execution (see SessionFrom). mem is the calling guest's exported memory, or
// nil when it exports none.
//
// A function that must call back into the guest (to allocate there, or to
// raise an exception in it) sets CallInstance instead of Call: it receives
// the calling instance itself.
type Function struct {
	Module       string
	Name         string
	Params       []ValueType
	Results      []ValueType
	Call         func(ctx context.Context, mem Memory, stack []uint64)
	CallInstance func(ctx context.Context, caller Instance, stack []uint64)
}

// Instance is one instantiated guest module as the host drives it.
type Instance interface {
	// Memory is the guest's exported memory, or nil.
	Memory() Memory
	// Call invokes an exported function. Errors are the engine's (traps,
	// exits, timeouts); they are classified by package runtime.
	Call(ctx context.Context, name string, params ...uint64) ([]uint64, error)
}
