package instrument

import "github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"

// A small module assembler for tests that need exact bytes.

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// sec is a section: its id, its size, then the content.
func sec(id byte, content ...[]byte) []byte {
	c := cat(content...)
	return cat([]byte{id}, leb128.AppendUint32(nil, uint32(len(c))), c)
}

// vec is a vector: its length, then the items.
func vec(items ...[]byte) []byte {
	return cat(leb128.AppendUint32(nil, uint32(len(items))), cat(items...))
}

func name(s string) []byte { return cat(leb128.AppendUint32(nil, uint32(len(s))), []byte(s)) }

func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, vec(bytesOf(params)...), vec(bytesOf(results)...))
}

func bytesOf(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

func u32s(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = leb128.AppendUint32(b, x)
	}
	return b
}

// body is a code entry: size, then local groups (count, type pairs), then
// the instructions, which must include the final end.
func body(locals []byte, code ...byte) []byte {
	l := leb128.AppendUint32(nil, uint32(len(locals)/2))
	c := cat(l, locals, code)
	return cat(leb128.AppendUint32(nil, uint32(len(c))), c)
}

func buildModule(sections ...[]byte) []byte { return cat(magic, cat(sections...)) }

func export(n string, kind byte, idx uint32) []byte {
	return cat(name(n), []byte{kind}, leb128.AppendUint32(nil, idx))
}

// oneFunc is a module with one exported function "f" of the given type and
// body, a memory of one page (at most 4) and a passive data segment.
func oneFunc(params, results []byte, locals []byte, code ...byte) []byte {
	return buildModule(
		sec(secType, vec(functype(params, results))),
		sec(secFunction, vec(u32s(0))),
		sec(secMemory, vec([]byte{1, 1, 4})),
		sec(secExport, vec(export("f", 0, 0))),
		sec(secDataCount, u32s(1)),
		sec(secCode, vec(body(locals, code...))),
		sec(secData, vec(cat([]byte{1}, name("0123456789abcdef")))),
	)
}
