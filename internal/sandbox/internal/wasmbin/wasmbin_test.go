package wasmbin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// section encodes one section with a single-byte size (tests keep them small).
func section(id byte, content ...byte) []byte {
	return append([]byte{id, byte(len(content))}, content...)
}

func module(sections ...[]byte) []byte {
	b := append([]byte(nil), magic...)
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func str(s string) []byte { return append([]byte{byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestDecode(t *testing.T) {
	b := module(
		section(SectionType, cat([]byte{2}, []byte{0x60, 1, 0x7f, 1, 0x7f}, []byte{0x60, 0, 0})...),
		section(SectionImport, cat([]byte{1}, str("wasi_snapshot_preview1"), str("proc_exit"), []byte{KindFunc, 1})...),
		section(SectionFunction, 1, 0),
		section(SectionMemory, 1, 0x01, 2, 16),
		section(SectionExport, cat([]byte{2}, str("memory"), []byte{KindMemory, 0}, str("f"), []byte{KindFunc, 1})...),
		section(SectionCode, 1, 4, 0, 0x20, 0, 0x0b),
		section(SectionCustom, cat(str("note"), []byte("hello"))...),
	)
	m, err := Decode(b)
	require.NoError(t, err)
	require.Len(t, m.Types, 2)
	assert.Equal(t, FuncType{Params: []byte{0x7f}, Results: []byte{0x7f}}, m.Types[0])
	require.Len(t, m.Imports, 1)
	assert.Equal(t, Import{Module: "wasi_snapshot_preview1", Name: "proc_exit", Kind: KindFunc, TypeIndex: 1}, m.Imports[0])
	assert.Equal(t, []Limits{{Min: 2, Max: 16, HasMax: true}}, m.Memories)
	assert.Equal(t, 1, m.ImportedFuncCount())
	e, ok := m.Export("f")
	require.True(t, ok)
	ft, ok := m.FuncTypeOf(e.Index)
	require.True(t, ok)
	assert.Equal(t, []byte{0x7f}, ft.Params, "function 1 is the first defined one, of type 0")
	ft, ok = m.FuncTypeOf(0)
	require.True(t, ok)
	assert.Empty(t, ft.Params, "function 0 is the import, of type 1")
	_, ok = m.FuncTypeOf(2)
	assert.False(t, ok)
	cs := m.CustomSections("note")
	require.Len(t, cs, 1)
	assert.Equal(t, "hello", string(cs[0].Payload))
}

func TestDecodeSharedMemory(t *testing.T) {
	m, err := Decode(module(section(SectionMemory, 1, 0x03, 1, 2)))
	require.NoError(t, err)
	assert.Equal(t, []Limits{{Min: 1, Max: 2, HasMax: true, Shared: true}}, m.Memories)
}

func TestDecodeErrorsNameTheOffset(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "offset 0: not a wasm binary"},
		{"bad version", []byte{0, 'a', 's', 'm', 2, 0, 0, 0}, "offset 4: unsupported binary version"},
		{"section past end", append(module(), SectionType, 10, 0), "offset 8: section 1 size 10 runs past the end"},
		{"huge vector", module(section(SectionExport, 0xff, 0xff, 0xff, 0xff, 0x0f)), "vector of 4294967295 elements does not fit"},
		{"overlong leb", module(section(SectionFunction, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0)), "offset 11: function section: malformed or truncated unsigned LEB128 integer"},
		{"name not utf-8", module(section(SectionCustom, 2, 0xff, 0xfe)), "name is not valid UTF-8"},
		{"trailing bytes", module(section(SectionFunction, 1, 0, 0)), "offset 12: function section: 1 bytes left over"},
		{"unknown import kind", module(section(SectionImport, cat([]byte{1}, str("a"), str("b"), []byte{9})...)), "unknown kind 0x09"},
		{"bad limits flags", module(section(SectionMemory, 1, 0x10, 1)), "unknown limits flags 0x10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.b)
			require.ErrorIs(t, err, ErrMalformed)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestWithCustomSectionReplaces(t *testing.T) {
	b := module(
		section(SectionCustom, cat(str("wasmgate.manifest"), []byte("old"))...),
		section(SectionFunction, 0),
		section(SectionCustom, cat(str("other"), []byte("keep"))...),
	)
	out, err := WithCustomSection(b, "wasmgate.manifest", []byte("new payload"))
	require.NoError(t, err)
	m, err := Decode(out)
	require.NoError(t, err)
	ms := m.CustomSections("wasmgate.manifest")
	require.Len(t, ms, 1)
	assert.Equal(t, "new payload", string(ms[0].Payload))
	assert.Equal(t, "keep", string(m.CustomSections("other")[0].Payload))
	assert.Len(t, m.Sections, 3, "old manifest dropped, function and other kept, new appended")

	again, err := WithCustomSection(out, "wasmgate.manifest", []byte("new payload"))
	require.NoError(t, err)
	assert.Equal(t, out, again, "packing is idempotent")
}

func FuzzDecode(f *testing.F) {
	f.Add(module(section(SectionType, 1, 0x60, 0, 0), section(SectionFunction, 1, 0)))
	f.Add(module(section(SectionImport, cat([]byte{1}, str("env"), str("f"), []byte{KindMemory, 0x03, 1, 2})...)))
	f.Add(module(section(SectionExport, cat([]byte{1}, str("memory"), []byte{KindMemory, 0})...)))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		for _, e := range m.Exports {
			m.FuncTypeOf(e.Index)
		}
		out, err := WithCustomSection(b, "x", []byte("y"))
		if err != nil {
			t.Fatalf("a module that decodes must re-encode: %v", err)
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("re-encoded module does not decode: %v", err)
		}
	})
}

// TestSplitDataAndEmptyPassiveData: the image is what the active segments
// write (later ones win), the stripped module has every segment passive and
// empty, and EmptyPassiveData keeps the active ones and empties the rest.
func TestSplitDataAndEmptyPassiveData(t *testing.T) {
	b := module(
		section(SectionMemory, 1, 0, 1),
		section(SectionDataCount, 3),
		section(SectionData, cat([]byte{3},
			[]byte{0x00, 0x41, 2, 0x0b, 3, 'a', 'b', 'c'}, // active at 2
			[]byte{0x01, 2, 'p', 'q'},                     // passive
			[]byte{0x00, 0x41, 3, 0x0b, 1, 'X'},           // active at 3, over the first
		)...),
	)
	m, err := Decode(b)
	require.NoError(t, err)
	image, stripped, err := m.SplitData()
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 'a', 'X', 'c'}, image)

	s, err := Decode(stripped)
	require.NoError(t, err)
	require.Len(t, s.Data, 3)
	for _, d := range s.Data {
		assert.Equal(t, DataSegment{Init: []byte{}}, d)
	}

	kept, err := Decode(m.EmptyPassiveData())
	require.NoError(t, err)
	require.Len(t, kept.Data, 3)
	assert.Equal(t, m.Data[0], kept.Data[0])
	assert.Equal(t, DataSegment{Init: []byte{}}, kept.Data[1])
	assert.Equal(t, m.Data[2], kept.Data[2])
	assert.Equal(t, m.Memories, kept.Memories)
}

func TestWithExports(t *testing.T) {
	// Two mutable i32 globals, one exported; then a code section.
	global := cat([]byte{2}, []byte{0x7f, 1, 0x41, 0, 0x0b}, []byte{0x7f, 1, 0x41, 5, 0x0b})
	withExport := module(
		section(SectionGlobal, global...),
		section(SectionExport, cat([]byte{1}, str("g0"), []byte{KindGlobal, 0})...),
		section(SectionCode, 0),
	)
	m, err := Decode(withExport)
	require.NoError(t, err)
	out, err := m.WithExports([]Export{{Name: "g1", Kind: KindGlobal, Index: 1}})
	require.NoError(t, err)
	got, err := Decode(out)
	require.NoError(t, err)
	assert.Equal(t, []Export{{"g0", KindGlobal, 0}, {"g1", KindGlobal, 1}}, got.Exports)
	assert.Equal(t, m.Globals, got.Globals)

	// Without an export section, one is put in its place: before code.
	noExport := module(section(SectionGlobal, global...), section(SectionCode, 0))
	m, err = Decode(noExport)
	require.NoError(t, err)
	out, err = m.WithExports([]Export{{Name: "g1", Kind: KindGlobal, Index: 1}})
	require.NoError(t, err)
	got, err = Decode(out)
	require.NoError(t, err)
	assert.Equal(t, []Export{{"g1", KindGlobal, 1}}, got.Exports)
	var ids []byte
	for _, s := range got.Sections {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []byte{SectionGlobal, SectionExport, SectionCode}, ids)

	_, err = m.WithExports([]Export{{Name: "x", Kind: KindGlobal, Index: 0}, {Name: "x", Kind: KindGlobal, Index: 1}})
	assert.ErrorContains(t, err, `"x" is exported already`)
}

func TestGlobalInit(t *testing.T) {
	v128 := cat([]byte{0xfd, 12}, make([]byte, 15), []byte{7, 0x0b})
	m, err := Decode(module(section(SectionGlobal, cat([]byte{2}, []byte{0x7f, 1, 0x41, 5, 0x0b}, []byte{0x7b, 1}, v128)...)))
	require.NoError(t, err)
	assert.Equal(t, []Global{
		{ValType: 0x7f, Mutable: true, Init: []byte{0x41, 5, 0x0b}},
		{ValType: 0x7b, Mutable: true, Init: v128},
	}, m.Globals)
}

// TestWithFunction: the function is added at the end of the function index
// space (after the imported ones), with its own type, and what was there
// stays; sections a module lacks are added in their place.
func TestWithFunction(t *testing.T) {
	body := []byte{0, 0x0b} // no locals, an empty expression
	typ := FuncType{Params: []byte{0x7e}, Results: []byte{0x7f}}

	b := module(
		section(SectionType, cat([]byte{1}, []byte{0x60, 0, 0})...),
		section(SectionImport, cat([]byte{1}, str("m"), str("f"), []byte{KindFunc, 0})...),
		section(SectionFunction, 1, 0),
		section(SectionExport, cat([]byte{1}, str("g"), []byte{KindFunc, 1})...),
		section(SectionCode, 1, 2, 0, 0x0b),
		section(SectionCustom, cat(str("note"), []byte("hi"))...),
	)
	m, err := Decode(b)
	require.NoError(t, err)
	out, index, err := m.WithFunction(typ, body)
	require.NoError(t, err)
	assert.Equal(t, uint32(2), index, "one imported and one defined function before it")
	got, err := Decode(out)
	require.NoError(t, err)
	assert.Equal(t, []FuncType{{Params: []byte{}, Results: []byte{}}, typ}, got.Types)
	assert.Equal(t, []uint32{0, 1}, got.Funcs)
	assert.Equal(t, m.Imports, got.Imports)
	assert.Equal(t, m.Exports, got.Exports)
	ft, ok := got.FuncTypeOf(index)
	require.True(t, ok)
	assert.Equal(t, typ, ft)
	var ids []byte
	for _, s := range got.Sections {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []byte{SectionType, SectionImport, SectionFunction, SectionExport, SectionCode, SectionCustom}, ids)
	assert.Equal(t, "hi", string(got.CustomSections("note")[0].Payload))

	// A module without types, functions or code gets each section, in order.
	m, err = Decode(module(section(SectionMemory, 1, 0, 1), section(SectionData, 0)))
	require.NoError(t, err)
	out, index, err = m.WithFunction(FuncType{}, body)
	require.NoError(t, err)
	assert.Equal(t, uint32(0), index)
	got, err = Decode(out)
	require.NoError(t, err)
	ids = nil
	for _, s := range got.Sections {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []byte{SectionType, SectionFunction, SectionMemory, SectionCode, SectionData}, ids)
	assert.Equal(t, []uint32{0}, got.Funcs)
}
