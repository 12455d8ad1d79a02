package sandbox_test

//go:generate wat2wasm --debug-names testdata/interpreter.wat -o testdata/interpreter.wasm
//go:generate wat2wasm testdata/interpreter_env.wat -o testdata/interpreter_env.wasm
//go:generate wat2wasm testdata/interpreter_notable.wat -o testdata/interpreter_notable.wasm
//go:generate wat2wasm testdata/interpreter_notype.wat -o testdata/interpreter_notype.wasm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
)

// interpreterFixture reads a module built from testdata/NAME.wat.
func interpreterFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err, "built from its .wat by go generate (make guests)")
	return b
}

// customSection encodes a custom section called name.
func customSection(name, payload string) []byte {
	content := leb128.AppendUint32(nil, uint32(len(name)))
	content = append(append(content, name...), payload...)
	return append(leb128.AppendUint32([]byte{wasmbin.SectionCustom}, uint32(len(content))), content...)
}

// withToolchainSections is testdata/interpreter.wasm as a C toolchain
// leaves an interpreter: DWARF sections before its first section and after
// its last, and a producers section among them (wat2wasm cannot write
// custom sections).
func withToolchainSections(t *testing.T) []byte {
	wasm := interpreterFixture(t, "interpreter.wasm")
	header := len(wasmbin.Header)
	in := append([]byte(nil), wasm[:header]...)
	in = append(in, customSection(".debug_abbrev", "abbrev")...)
	in = append(in, wasm[header:]...)
	in = append(in, customSection(".debug_info", "info")...)
	in = append(in, customSection("producers", "clang")...)
	return append(in, customSection(".debug_line", "line")...)
}

func customNames(m *wasmbin.Module) []string {
	var names []string
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCustom {
			names = append(names, s.Name)
		}
	}
	return names
}

// rawSections maps each non-custom section's id to its bytes.
func rawSections(m *wasmbin.Module) map[byte][]byte {
	raw := map[byte][]byte{}
	for _, s := range m.Sections {
		if s.ID != wasmbin.SectionCustom {
			raw[s.ID] = s.Raw
		}
	}
	return raw
}

// The preparation drops the DWARF sections and keeps every other custom
// section; it exports the one mutable global not exported yet (the stack
// pointer, index 1 after the imported global) and the added function
// (index 5, after the imported function and the four defined ones), and
// leaves the sections it has no reason to change byte for byte.
func TestPrepareInterpreterDropsDebugSectionsAndExportsWhatTheHostNeeds(t *testing.T) {
	in := withToolchainSections(t)
	before, err := wasmbin.Decode(in)
	require.NoError(t, err)
	require.Equal(t, []string{".debug_abbrev", "name", ".debug_info", "producers", ".debug_line"}, customNames(before))

	out, err := sandbox.PrepareInterpreter(in)
	require.NoError(t, err)
	after, err := wasmbin.Decode(out)
	require.NoError(t, err)

	assert.Equal(t, []string{"name", "producers"}, customNames(after))
	assert.Equal(t, before.CustomSections("name")[0].Raw, after.CustomSections("name")[0].Raw)
	assert.Equal(t, before.CustomSections("producers")[0].Raw, after.CustomSections("producers")[0].Raw)

	assert.Equal(t, []wasmbin.Export{
		{Name: "memory", Kind: wasmbin.KindMemory, Index: 0},
		{Name: "calls", Kind: wasmbin.KindGlobal, Index: 2},
		{Name: "_start", Kind: wasmbin.KindFunc, Index: 4},
		{Name: sandbox.CallIndirectExport, Kind: wasmbin.KindFunc, Index: 5},
		{Name: sandbox.InterpreterGlobalPrefix + "1", Kind: wasmbin.KindGlobal, Index: 1},
	}, after.Exports)
	typ, ok := after.FuncTypeOf(5)
	require.True(t, ok)
	const i32 = 0x7f // the value type i32
	assert.Equal(t, wasmbin.FuncType{Params: []byte{i32, i32, i32, i32}, Results: []byte{i32}}, typ)

	// The type, function, code and export sections gain an entry; the rest
	// are as the toolchain wrote them.
	beforeRaw, afterRaw := rawSections(before), rawSections(after)
	assert.Len(t, afterRaw, len(beforeRaw))
	for id, raw := range beforeRaw {
		switch id {
		case wasmbin.SectionType, wasmbin.SectionFunction, wasmbin.SectionCode, wasmbin.SectionExport:
			assert.NotEqual(t, raw, afterRaw[id], "section %d", id)
		default:
			assert.Equal(t, raw, afterRaw[id], "section %d", id)
		}
	}
}

// The added function calls the table entry it is given with its three
// other arguments in order, checks the entry's type as call_indirect does,
// and the exported global is the live stack pointer.
func TestPreparedInterpreterCallsTheTableEntryItIsGiven(t *testing.T) {
	ctx := context.Background()
	prepared, err := sandbox.PrepareInterpreter(withToolchainSections(t))
	require.NoError(t, err)

	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	_, err = r.InstantiateWithConfig(ctx, interpreterFixture(t, "interpreter_env.wasm"), wazero.NewModuleConfig().WithName("env"))
	require.NoError(t, err)
	mod, err := r.InstantiateWithConfig(ctx, prepared, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	require.NoError(t, err)
	call := mod.ExportedFunction(sandbox.CallIndirectExport)
	require.NotNil(t, call)

	for _, tc := range []struct {
		name        string
		fn, a, b, c uint64
		want        uint64
		wantTrap    string
	}{
		{name: "digits: base + 100a + 10b + c", fn: 0, a: 1, b: 2, c: 3, want: 1123},
		{name: "digits, other arguments", fn: 0, a: 3, b: 0, c: 9, want: 1309},
		{name: "doubled_sum, through the imported function", fn: 1, a: 1, b: 2, c: 3, want: 12},
		{name: "an entry of another type", fn: 2, a: 1, b: 2, c: 3, wantTrap: "wasm error: indirect call type mismatch"},
		{name: "past the table's end", fn: 3, a: 1, b: 2, c: 3, wantTrap: "wasm error: invalid table access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call.Call(ctx, tc.fn, tc.a, tc.b, tc.c)
			if tc.wantTrap != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantTrap)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []uint64{tc.want}, got)
		})
	}

	sp := mod.ExportedGlobal(sandbox.InterpreterGlobalPrefix + "1")
	require.NotNil(t, sp)
	assert.Equal(t, uint64(65536), sp.Get())
	_, err = mod.ExportedFunction("_start").Call(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(65536-7), sp.Get(), "_start moves the stack pointer the export shows")
}

// The same bytes in give the same bytes out, and the input is left as it
// was: CI rebuilds the committed CPython module and compares.
func TestPrepareInterpreterIsAPureFunction(t *testing.T) {
	in := withToolchainSections(t)
	kept := append([]byte(nil), in...)
	first, err := sandbox.PrepareInterpreter(in)
	require.NoError(t, err)
	second, err := sandbox.PrepareInterpreter(in)
	require.NoError(t, err)
	assert.Equal(t, first, second)
	assert.Equal(t, kept, in)
}

func TestPrepareInterpreterRefuses(t *testing.T) {
	prepared, err := sandbox.PrepareInterpreter(interpreterFixture(t, "interpreter.wasm"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{
			name: "no table",
			wasm: interpreterFixture(t, "interpreter_notable.wasm"),
			want: "preparing the interpreter: the module has no table to call through",
		},
		{
			name: "no (i32, i32, i32) -> i32 type",
			wasm: interpreterFixture(t, "interpreter_notype.wasm"),
			want: "preparing the interpreter: the module declares no function type (i32, i32, i32) -> i32",
		},
		{
			name: "prepared already",
			wasm: prepared,
			want: `preparing the interpreter: "wasmgate_call_indirect" is exported already`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sandbox.PrepareInterpreter(tc.wasm)
			assert.EqualError(t, err, tc.want)
		})
	}

	_, err = sandbox.PrepareInterpreter([]byte("\x00asm\x01\x00\x00\x00\x01"))
	require.ErrorIs(t, err, wasmbin.ErrMalformed)
}
