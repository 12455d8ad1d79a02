package audit

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxNesting is the deepest nesting of objects and arrays Canonicalize
// accepts. It bounds the work and memory an input can demand, whatever the
// executor's own max_depth is.
const MaxNesting = 10000

// maxSafeInteger is 2^53: beyond it not every integer is a float64, so two
// different integers in a payload could canonicalize to the same bytes.
const maxSafeInteger = 1 << 53

// Canonical is the RFC 8785 form of a JSON text and the shape facts the
// pipeline's limits are checked against.
type Canonical struct {
	Bytes       []byte // RFC 8785 canonical JSON
	Depth       int    // 0 for a scalar, 1 for the outermost object or array
	LongestList int    // element count of the longest array, 0 if none
}

// Canonicalize parses raw (RFC 8259 JSON, surrounding whitespace allowed) and
// returns its RFC 8785 (JCS) canonical form. One pass parses, validates and
// writes every token in canonical form; objects whose members arrive out of
// order are then put in order by one linear copy.
//
// # Errors
//
// A refusal is a *SyntaxError that matches ErrNotJSON, except nesting deeper
// than MaxNesting, which matches ErrTooDeep. Refused, besides invalid JSON:
//   - invalid UTF-8 (including UTF-8-encoded surrogates) and a byte order mark;
//   - \u escapes that leave a surrogate unpaired;
//   - an object with two members whose names are equal after unescaping;
//   - NaN and Infinity in any spelling, numbers that overflow float64;
//   - integers beyond ±2^53 written as integer literals, either in the input
//     (9007199254740993) or in the canonical form (1e20, whose JCS form is
//     100000000000000000000). Larger magnitudes written with an exponent in
//     canonical form (1e+30) are accepted as the double they denote, as in
//     RFC 8785 itself; refusing them too would reject the RFC's own examples.
//
// # Notes
//
// Numbers too small for float64 round to 0, as in ECMAScript.
// Strings are not Unicode-normalized (RFC 8785 keeps them as they are).
func Canonicalize(raw []byte) (Canonical, error) {
	c := canonicalizerPool.Get().(*canonicalizer)
	out, err := c.run(raw)
	var res Canonical
	if err == nil {
		// The one allocation of a successful call: the working buffer goes
		// back to the pool.
		res = Canonical{Depth: c.maxDepth, LongestList: c.longest}
		if len(c.unsorted) == 0 {
			res.Bytes = bytes.Clone(out)
		} else {
			res.Bytes = c.reorder(out)
		}
	}
	c.release(out)
	return res, err
}

var canonicalizerPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// maxPooledBytes keeps one huge payload from pinning its buffers in the pool
// for the rest of the process's life.
const maxPooledBytes = 1 << 20

// member is one object member already written to the output.
type member struct {
	start  int // output offset of the opening quote of the name
	keyEnd int // output offset just past the closing quote of the name
	end    int // output offset just past the value
	at     int // input offset of the name, for errors
}

// frame is one open object or array. The parser keeps an explicit stack of
// these rather than recursing, so hostile nesting costs heap, never Go stack.
type frame struct {
	start   int // output offset of '{' or '['
	members int // index in canonicalizer.members of this object's first member
	count   int // elements so far (arrays)
	object  bool
	sorted  bool // members arrived in canonical order, so no reordering is needed
}

// unsortedObject is an object whose members arrived out of canonical order.
// Reordering it in place when it closes would copy its content once per
// unsorted ancestor, quadratic under deep nesting; instead its sorted member
// list is kept, and reorder writes the output in order at the end.
type unsortedObject struct {
	start, end int // output offsets of its '{' and just past its '}'
	members    int // index in canonicalizer.sorted of its first member
	count      int
}

// canonicalizer holds the buffers one Canonicalize call works in, pooled so
// a call allocates only its result. The input, position and output being
// written live in run's locals, not here: keeping the hot state out of a heap
// object spares a GC write barrier on every append.
type canonicalizer struct {
	out      []byte
	stack    []frame
	members  []member // members of the open objects
	unsorted []unsortedObject
	sorted   []member // members of the unsorted objects, each list in order
	tasks    []reorderTask
	maxDepth int
	longest  int
}

func (c *canonicalizer) release(out []byte) {
	const maxItems = maxPooledBytes / 32
	if cap(out) > maxPooledBytes || cap(c.stack) > maxItems || cap(c.members) > maxItems ||
		cap(c.unsorted) > maxItems || cap(c.sorted) > maxItems || cap(c.tasks) > maxItems {
		return
	}
	c.out = out[:0]
	canonicalizerPool.Put(c)
}

func fail(at int, msg string) error {
	return &SyntaxError{Offset: at, Msg: msg}
}

// Parser states; run is a loop over them instead of recursive descent.
const (
	stValue  = iota // expect a value
	stMember        // expect an object member name
	stNext          // a value just ended
)

// run canonicalizes in and returns the output buffer, which on error holds
// garbage but is still returned for reuse.
func (c *canonicalizer) run(in []byte) ([]byte, error) {
	out := c.out[:0]
	if cap(out) < len(in) && len(in) <= maxPooledBytes {
		out = make([]byte, 0, len(in)+len(in)/8)
	}
	c.stack, c.members = c.stack[:0], c.members[:0]
	c.unsorted, c.sorted = c.unsorted[:0], c.sorted[:0]
	c.maxDepth, c.longest = 0, 0
	if bytes.HasPrefix(in, []byte("\xef\xbb\xbf")) {
		return out, fail(0, "byte order mark")
	}
	pos := 0
	var err error
	state := stValue
	for {
		switch state {
		case stValue:
			pos = skipSpace(in, pos)
			if pos >= len(in) {
				return out, fail(pos, "unexpected end of input")
			}
			switch ch := in[pos]; ch {
			case '{', '[':
				if len(c.stack) >= MaxNesting {
					return out, &SyntaxError{Offset: pos, Msg: "nesting deeper than " + strconv.Itoa(MaxNesting), tooDeep: true}
				}
				c.stack = append(c.stack, frame{start: len(out), members: len(c.members), object: ch == '{', sorted: true})
				c.maxDepth = max(c.maxDepth, len(c.stack))
				out = append(out, ch)
				pos = skipSpace(in, pos+1)
				switch {
				case pos < len(in) && in[pos] == ch+2: // '}' and ']' are '{' and '[' plus 2
					pos++
					if out, err = c.close(out); err != nil {
						return out, err
					}
					state = stNext
				case ch == '{':
					state = stMember
				default:
					c.stack[len(c.stack)-1].count = 1
				}
				continue
			case '"':
				out, pos, err = appendStringToken(out, in, pos)
			case 't':
				out, pos, err = appendLiteral(out, in, pos, "true")
			case 'f':
				out, pos, err = appendLiteral(out, in, pos, "false")
			case 'n':
				out, pos, err = appendLiteral(out, in, pos, "null")
			case 'N', 'I':
				err = fail(pos, "NaN and Infinity are not JSON numbers")
			default:
				if ch == '-' || ch >= '0' && ch <= '9' {
					out, pos, err = appendNumberToken(out, in, pos)
				} else {
					err = fail(pos, "unexpected character")
				}
			}
			if err != nil {
				return out, err
			}
			state = stNext

		case stMember:
			pos = skipSpace(in, pos)
			if pos >= len(in) || in[pos] != '"' {
				return out, fail(pos, "expected object member name")
			}
			m := member{start: len(out), at: pos}
			if out, pos, err = appendStringToken(out, in, pos); err != nil {
				return out, err
			}
			m.keyEnd = len(out)
			top := &c.stack[len(c.stack)-1]
			if len(c.members) > top.members && top.sorted {
				prev := c.members[len(c.members)-1]
				switch compareKeys(out[prev.start+1:prev.keyEnd-1], out[m.start+1:m.keyEnd-1]) {
				case 0:
					return out, fail(m.at, "duplicate object key")
				case 1:
					top.sorted = false
				}
			}
			c.members = append(c.members, m)
			pos = skipSpace(in, pos)
			if pos >= len(in) || in[pos] != ':' {
				return out, fail(pos, "expected ':' after object member name")
			}
			pos++
			out = append(out, ':')
			state = stValue

		case stNext:
			if len(c.stack) == 0 {
				if pos = skipSpace(in, pos); pos != len(in) {
					return out, fail(pos, "unexpected data after top-level value")
				}
				return out, nil
			}
			top := &c.stack[len(c.stack)-1]
			if top.object {
				c.members[len(c.members)-1].end = len(out)
			}
			if pos = skipSpace(in, pos); pos >= len(in) {
				return out, fail(pos, "unexpected end of input")
			}
			switch ch := in[pos]; {
			case ch == ',':
				pos++
				out = append(out, ',')
				if top.object {
					state = stMember
				} else {
					top.count++
					state = stValue
				}
			case top.object && ch == '}', !top.object && ch == ']':
				pos++
				if out, err = c.close(out); err != nil {
					return out, err
				}
			case top.object:
				return out, fail(pos, "expected ',' or '}' in object")
			default:
				return out, fail(pos, "expected ',' or ']' in array")
			}
		}
	}
}

// close ends the innermost object or array. An object whose members did not
// arrive in canonical order has them sorted and recorded for reorder.
func (c *canonicalizer) close(out []byte) ([]byte, error) {
	f := c.stack[len(c.stack)-1]
	c.stack = c.stack[:len(c.stack)-1]
	if !f.object {
		c.longest = max(c.longest, f.count)
		return append(out, ']'), nil
	}
	ms := c.members[f.members:]
	out = append(out, '}')
	if !f.sorted {
		sortMembers(out, ms)
		for i := 1; i < len(ms); i++ {
			if compareKeys(memberName(out, ms[i-1]), memberName(out, ms[i])) == 0 {
				return out, fail(max(ms[i-1].at, ms[i].at), "duplicate object key")
			}
		}
		c.unsorted = append(c.unsorted, unsortedObject{start: f.start, end: len(out), members: len(c.sorted), count: len(ms)})
		c.sorted = append(c.sorted, ms...)
	}
	c.members = c.members[:f.members]
	return out, nil
}

// reorderTask is one step of reorder: copy src[from:to], in which unsorted
// objects are written in order (obj < 0), or write the members of unsorted
// object obj from its next-th on.
type reorderTask struct {
	from, to  int
	obj, next int
}

// reorder returns src, the first pass's output, with the members of every
// unsorted object written in sorted order. Moving members never changes the
// length, and every byte is copied once.
func (c *canonicalizer) reorder(src []byte) []byte {
	// Objects are recorded as they close (innermost first); the walk below
	// finds them by position.
	slices.SortFunc(c.unsorted, func(a, b unsortedObject) int { return cmp.Compare(a.start, b.start) })
	dst := make([]byte, 0, len(src))
	tasks := append(c.tasks[:0], reorderTask{from: 0, to: len(src), obj: -1})
	for len(tasks) > 0 {
		t := &tasks[len(tasks)-1]
		if t.obj < 0 {
			u, _ := slices.BinarySearchFunc(c.unsorted, t.from, func(o unsortedObject, at int) int { return cmp.Compare(o.start, at) })
			if u == len(c.unsorted) || c.unsorted[u].start >= t.to {
				dst = append(dst, src[t.from:t.to]...)
				tasks = tasks[:len(tasks)-1]
				continue
			}
			o := c.unsorted[u]
			dst = append(dst, src[t.from:o.start]...)
			dst = append(dst, '{')
			t.from = o.end
			tasks = append(tasks, reorderTask{obj: u})
			continue
		}
		o := c.unsorted[t.obj]
		if t.next == o.count {
			dst = append(dst, '}')
			tasks = tasks[:len(tasks)-1]
			continue
		}
		if t.next > 0 {
			dst = append(dst, ',')
		}
		m := c.sorted[o.members+t.next]
		t.next++
		if v := src[m.keyEnd+1]; v != '{' && v != '[' {
			dst = append(dst, src[m.start:m.end]...) // a scalar holds no object
			continue
		}
		dst = append(dst, src[m.start:m.keyEnd+1]...) // "name":
		tasks = append(tasks, reorderTask{from: m.keyEnd + 1, to: m.end, obj: -1})
	}
	c.tasks = tasks
	return dst
}

func memberName(out []byte, m member) []byte { return out[m.start+1 : m.keyEnd-1] }

// sortMembers orders ms by name. Most objects are small, and insertion sort
// beats the general sort there without a closure call per comparison.
func sortMembers(out []byte, ms []member) {
	if len(ms) > 12 {
		slices.SortFunc(ms, func(a, b member) int { return compareKeys(memberName(out, a), memberName(out, b)) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && compareKeys(memberName(out, ms[j-1]), memberName(out, ms[j])) > 0; j-- {
			ms[j-1], ms[j] = ms[j], ms[j-1]
		}
	}
}

func skipSpace(in []byte, pos int) int {
	for pos < len(in) && (in[pos] == ' ' || in[pos] == '\n' || in[pos] == '\t' || in[pos] == '\r') {
		pos++
	}
	return pos
}

func appendLiteral(out, in []byte, pos int, word string) ([]byte, int, error) {
	if !bytes.HasPrefix(in[pos:], []byte(word)) {
		return out, pos, fail(pos, "invalid literal")
	}
	return append(out, word...), pos + len(word), nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// appendNumberToken checks the number token at in[pos] against the RFC 8259
// grammar and the limits Canonicalize documents, and appends its JCS form.
func appendNumberToken(out, in []byte, pos int) ([]byte, int, error) {
	start, i := pos, pos
	neg := in[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	case i < len(in) && in[i] == 'I':
		return out, pos, fail(start, "NaN and Infinity are not JSON numbers")
	default:
		return out, pos, fail(i, "invalid number")
	}
	intEnd, fracEnd := i, i
	if i < len(in) && in[i] == '.' {
		i++
		if i >= len(in) || !isDigit(in[i]) {
			return out, pos, fail(i, "invalid number: digit expected after '.'")
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		fracEnd = i
	}
	exponent := i < len(in) && (in[i] == 'e' || in[i] == 'E')
	if exponent {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || !isDigit(in[i]) {
			return out, pos, fail(i, "invalid number: digit expected in exponent")
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	lit := in[start:i]

	if !exponent && fracEnd == intEnd {
		// An integer literal of at most 2^53 is its own ECMAScript form (the
		// grammar already forbids leading zeros); this is the exact path.
		digits := in[intStart:intEnd]
		if len(digits) > 16 || len(digits) == 16 && string(digits) > "9007199254740992" {
			return out, pos, fail(start, "integer beyond ±2^53")
		}
		if neg && len(digits) == 1 && digits[0] == '0' {
			return append(out, '0'), i, nil
		}
		return append(out, lit...), i, nil
	}
	if !exponent && plainDecimal(in[intStart:intEnd], in[intEnd+1:fracEnd]) {
		return append(out, lit...), i, nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		// The grammar is checked above, so this can only be ErrRange. An
		// underflow comes back as 0 without error.
		return out, pos, fail(start, "number overflows float64")
	}
	if a := math.Abs(f); a > maxSafeInteger && a < 1e21 {
		return out, pos, fail(start, "integer beyond ±2^53")
	}
	return AppendNumber(out, f), i, nil
}

// plainDecimal reports whether a literal int.frac (no exponent) is already
// in ECMAScript form, so it can be copied without a float round trip. That
// holds when it has at most 15 significant digits (any such decimal is
// recovered exactly from the nearest double, and no shorter one maps to that
// double), the fraction does not end in 0, and a value below 1 has at most
// five zeros after the point (from 1e-7 on ECMAScript uses an exponent).
func plainDecimal(intPart, frac []byte) bool {
	if len(frac) == 0 || frac[len(frac)-1] == '0' {
		return false
	}
	sig := len(intPart) + len(frac)
	if intPart[0] == '0' {
		zeros := 0
		for zeros < len(frac) && frac[zeros] == '0' {
			zeros++
		}
		if zeros > 5 {
			return false
		}
		sig = len(frac) - zeros
	}
	return sig <= 15
}

// plain marks the bytes a JSON string can hold that JCS also writes as
// they are: printable ASCII except '"' and '\'.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendStringToken copies the string token at in[pos] to out in its JCS
// form: escapes resolved, then re-escaped only where RFC 8785 requires.
func appendStringToken(out, in []byte, pos int) ([]byte, int, error) {
	i := pos + 1
	out = append(out, '"')
	for {
		start := i
		for i < len(in) && plain[in[i]] {
			i++
		}
		out = append(out, in[start:i]...)
		if i >= len(in) {
			return out, pos, fail(pos, "unterminated string")
		}
		switch b := in[i]; {
		case b == '"':
			return append(out, '"'), i + 1, nil
		case b == '\\':
			var n int
			var err error
			if out, n, err = appendEscape(out, in, i, pos); err != nil {
				return out, pos, err
			}
			i += n
		case b < 0x20:
			return out, pos, fail(i, "control character in string")
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				return out, pos, fail(i, "invalid UTF-8")
			}
			out = append(out, in[i:i+n]...)
			i += n
		}
	}
}

// appendEscape resolves the escape sequence at in[i], inside the string
// that starts at strStart, and returns its length.
func appendEscape(out, in []byte, i, strStart int) ([]byte, int, error) {
	if i+1 >= len(in) {
		return out, 0, fail(strStart, "unterminated string")
	}
	var r rune
	switch in[i+1] {
	case '"':
		r = '"'
	case '\\':
		r = '\\'
	case '/':
		r = '/'
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		u, ok := hex4(in, i+2)
		if !ok {
			return out, 0, fail(i, "invalid \\u escape")
		}
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return out, 0, fail(i, "lone surrogate")
		case u >= 0xD800 && u <= 0xDBFF:
			if i+7 >= len(in) || in[i+6] != '\\' || in[i+7] != 'u' {
				return out, 0, fail(i, "lone surrogate")
			}
			lo, ok := hex4(in, i+8)
			if !ok {
				return out, 0, fail(i+6, "invalid \\u escape")
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return out, 0, fail(i, "lone surrogate")
			}
			return utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(lo-0xDC00)), 12, nil
		}
		return appendStringRune(out, u), 6, nil
	default:
		return out, 0, fail(i, "invalid escape")
	}
	return appendStringRune(out, r), 2, nil
}

func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, b := range in[i : i+4] {
		switch {
		case b >= '0' && b <= '9':
			b -= '0'
		case b >= 'a' && b <= 'f':
			b -= 'a' - 10
		case b >= 'A' && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(b)
	}
	return r, true
}

const lowerHex = "0123456789abcdef"

// appendStringRune writes r as it appears inside a JCS string: the two-char
// escapes JSON has, \u00xx for other controls, everything else literally.
func appendStringRune(dst []byte, r rune) []byte {
	switch r {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if r < 0x20 {
		return append(dst, '\\', 'u', '0', '0', lowerHex[r>>4], lowerHex[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// appendString writes s as a JSON string in JCS form, bytes of s that are
// not valid UTF-8 included unchanged; Canonicalize, run afterwards, refuses
// them.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && (plain[s[i]] || s[i] >= utf8.RuneSelf) {
			i++
		}
		dst = append(dst, s[start:i]...)
		if i < len(s) {
			dst = appendStringRune(dst, rune(s[i]))
			i++
		}
	}
	return append(dst, '"')
}

// compareKeys orders two member names, given in their JCS-escaped form, by
// their UTF-16 code units as RFC 8785 requires. It decodes as it goes
// because escaping does not preserve order ("\n" is written as 0x5C 0x6E).
func compareKeys(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		// Plain ASCII compares as bytes; escapes and multi-byte characters
		// are decoded whole, so i and j always sit on character boundaries.
		if ca, cb := a[i], b[j]; ca < utf8.RuneSelf && cb < utf8.RuneSelf && ca != '\\' && cb != '\\' {
			if ca != cb {
				return cmp.Compare(ca, cb)
			}
			i++
			j++
			continue
		}
		ra, na := keyRune(a[i:])
		rb, nb := keyRune(b[j:])
		if ra != rb {
			return compareUTF16(ra, rb)
		}
		i += na
		j += nb
	}
	return cmp.Compare(len(a)-i, len(b)-j)
}

// compareUTF16 orders two distinct code points by their UTF-16 encoding.
// That differs from code point order only between a supplementary-plane
// character (high surrogate 0xD800-0xDBFF first) and U+E000-U+FFFF.
func compareUTF16(a, b rune) int {
	switch {
	case a >= 0x10000 && b >= 0xE000 && b < 0x10000:
		return -1
	case b >= 0x10000 && a >= 0xE000 && a < 0x10000:
		return 1
	}
	return cmp.Compare(a, b)
}

// keyRune decodes one character of a JCS-escaped name.
func keyRune(s []byte) (rune, int) {
	if s[0] != '\\' {
		if s[0] < utf8.RuneSelf {
			return rune(s[0]), 1
		}
		return utf8.DecodeRune(s)
	}
	switch s[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, _ := hex4(s, 2)
		return r, 6
	}
	return rune(s[1]), 2 // '"' or '\\'
}

// AppendNumber appends f in the form ECMAScript's Number::toString gives it,
// which is how RFC 8785 writes numbers: the shortest digits that round-trip,
// plain notation for magnitudes in [1e-6, 1e21), exponent notation
// (1e+21, 1.5e-7) otherwise, and 0 for negative zero.
//
// # Notes
//
// f must be finite: NaN and ±Inf have no JSON form, and AppendNumber panics
// on them rather than write something that is not canonical JSON.
func AppendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("audit: AppendNumber: NaN or Infinity has no JSON form")
	}
	if f == 0 {
		return append(dst, '0')
	}
	if f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	var buf [32]byte
	// 'e' with precision -1 gives the shortest round-trip digits as
	// d[.ddd]e±xx; only the layout differs from ECMAScript's.
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	p := bytes.IndexByte(e, 'e')
	lead, frac := e[0], e[1:p]
	if len(frac) > 0 {
		frac = frac[1:] // drop the '.'
	}
	exp, _ := strconv.Atoi(string(e[p+1:]))
	k := 1 + len(frac) // number of significant digits
	n := exp + 1       // position of the decimal point relative to the digits
	digit := func(i int) byte {
		if i == 0 {
			return lead
		}
		return frac[i-1]
	}
	switch {
	case k <= n && n <= 21:
		dst = append(dst, lead)
		dst = append(dst, frac...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		for i := range n {
			dst = append(dst, digit(i))
		}
		dst = append(dst, '.')
		for i := n; i < k; i++ {
			dst = append(dst, digit(i))
		}
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, lead)
		dst = append(dst, frac...)
	default:
		dst = append(dst, lead)
		if len(frac) > 0 {
			dst = append(dst, '.')
			dst = append(dst, frac...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
