package sandbox

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
)

// CallIndirectExport is the function PrepareInterpreter adds to an
// interpreter: call_indirect(fn, a, b, c) calls entry fn of the module's
// table 0 with three i32 arguments and returns its i32 result. It lets the
// host call a C function of the interpreter through the pointer the
// interpreter's own data holds (a type slot, a method), so that no
// function of it needs a name.
const CallIndirectExport = "wasmgate_call_indirect"

// InterpreterGlobalPrefix begins the names PrepareInterpreter exports the
// module's mutable globals under (its C stack pointer, above all), so that a
// Snapshot captures them.
const InterpreterGlobalPrefix = "wasmgate_global_"

// PrepareInterpreter turns an interpreter built as a WASI command by a C
// toolchain (CPython for WASI) into a module a Reactor can snapshot and
// drive:
//
//   - its debug sections (.debug_*) are dropped: they are most of its
//     bytes, and nothing reads them;
//   - each mutable global it does not export (the C stack pointer) is
//     exported as InterpreterGlobalPrefix+N, N its index;
//   - a function CallIndirectExport is added and exported.
//
// Its code is otherwise unchanged, and admission and instrumentation run on
// the result like on any module. The output is a pure function of the
// input: the same bytes in give the same bytes out.
//
// # Errors
//
// When wasm does not decode, has no table, or declares no function type
// (i32, i32, i32) -> i32 for the added function to call.
func PrepareInterpreter(wasm []byte) ([]byte, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return nil, fmt.Errorf("preparing the interpreter: %w", err)
	}
	importedTables, importedGlobals := 0, 0
	for _, im := range m.Imports {
		switch im.Kind {
		case wasmbin.KindTable:
			importedTables++
		case wasmbin.KindGlobal:
			importedGlobals++
		}
	}
	if importedTables+len(m.Tables) == 0 {
		return nil, fmt.Errorf("preparing the interpreter: the module has no table to call through")
	}
	i32 := []byte{valI32}
	three := wasmbin.FuncType{Params: []byte{valI32, valI32, valI32}, Results: i32}
	target := -1
	for i, t := range m.Types {
		if bytes.Equal(t.Params, three.Params) && bytes.Equal(t.Results, three.Results) {
			target = i
			break
		}
	}
	if target < 0 {
		return nil, fmt.Errorf("preparing the interpreter: the module declares no function type (i32, i32, i32) -> i32")
	}
	// local.get 1; local.get 2; local.get 3; local.get 0;
	// call_indirect target 0; end
	body := []byte{0x00, 0x20, 1, 0x20, 2, 0x20, 3, 0x20, 0, 0x11}
	body = leb128.AppendUint32(body, uint32(target))
	body = append(body, 0x00, 0x0b)
	withFn, index, err := m.WithFunction(wasmbin.FuncType{Params: []byte{valI32, valI32, valI32, valI32}, Results: i32}, body)
	if err != nil {
		return nil, fmt.Errorf("preparing the interpreter: %w", err)
	}
	m, err = wasmbin.Decode(withFn)
	if err != nil {
		return nil, fmt.Errorf("preparing the interpreter: %w", err)
	}
	exported := map[uint32]bool{}
	for _, e := range m.Exports {
		if e.Kind == wasmbin.KindGlobal {
			exported[e.Index] = true
		}
	}
	extra := []wasmbin.Export{{Name: CallIndirectExport, Kind: wasmbin.KindFunc, Index: index}}
	for i, g := range m.Globals {
		idx := uint32(importedGlobals + i)
		if g.Mutable && !exported[idx] {
			extra = append(extra, wasmbin.Export{Name: InterpreterGlobalPrefix + strconv.Itoa(int(idx)), Kind: wasmbin.KindGlobal, Index: idx})
		}
	}
	withExports, err := m.WithExports(extra)
	if err != nil {
		return nil, fmt.Errorf("preparing the interpreter: %w", err)
	}
	m, err = wasmbin.Decode(withExports)
	if err != nil {
		return nil, fmt.Errorf("preparing the interpreter: %w", err)
	}
	out := []byte(wasmbin.Header)
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCustom && strings.HasPrefix(s.Name, ".debug") {
			continue
		}
		out = append(out, s.Raw...)
	}
	return out, nil
}
