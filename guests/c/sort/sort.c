// sort: {"numbers":[3,1,2]} -> {"count":3,"max":3,"min":1,"sorted":[1,2,3]}
//
// A wasmgate executor in C: Guest ABI v1, strict profile. It is built without
// libc (see guests/build.sh), so the module imports nothing; the allocator,
// the JSON parser and the number formatting are all below.
//
//   input   an object with a field "numbers": an array of integers that fit
//           in an int64 (other fields are parsed and ignored)
//   output  {"count":N,"max":M,"min":m,"sorted":[...]} (keys in canonical
//           order); for an empty array, min and max are null
//   errors  status 1 with a message: input not an object, malformed JSON,
//           "numbers" missing or not an array, an element that is not an
//           integer (1.5, 1e3, "1", null) or out of the int64 range
//
// The host passes canonical JSON (RFC 8785), but the parser is a complete
// one (whitespace, escapes, every value type) so that it is a realistic
// workload: this module is the benchmark for instrumentation overhead on
// real code. The sort is a bottom-up merge sort, O(n log n) in every case.

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

// ---- memory ---------------------------------------------------------------

// First free byte after the data and the stack; defined by wasm-ld.
extern u8 __heap_base;

static u32 heap_top;

// alloc is a bump allocator: nothing is freed, since every execution gets a
// fresh instance. It grows memory on demand and traps when it cannot, which
// the host reports as MEMORY_EXHAUSTED.
static void *alloc(u32 n) {
	if (heap_top == 0) {
		heap_top = (u32)&__heap_base;
	}
	u32 p = (heap_top + 7) & ~7u;
	u32 end = p + n;
	if (end < p) {
		__builtin_trap();
	}
	u64 have = (u64)__builtin_wasm_memory_size(0) << 16;
	if (end > have) {
		u32 pages = (u32)((end - have + 0xffff) >> 16);
		if (__builtin_wasm_memory_grow(0, pages) == (__SIZE_TYPE__)-1) {
			__builtin_trap();
		}
	}
	heap_top = end;
	return (void *)p;
}

// ---- output ----------------------------------------------------------------

static const u8 *out_ptr;
static u32 out_len;

// A Buf is an output under construction; cap is reserved up front so that
// writes need no bounds checks.
typedef struct {
	u8 *start;
	u8 *p;
} Buf;

static Buf buf_new(u32 cap) {
	Buf b;
	b.start = b.p = alloc(cap);
	return b;
}

static void put_str(Buf *b, const char *s) {
	while (*s) {
		*b->p++ = (u8)*s++;
	}
}

// put_u32 writes v in decimal, padded with zeros to at least width digits.
// 32-bit division by a constant compiles to a multiplication.
static void put_u32(Buf *b, u32 v, int width) {
	u8 tmp[10];
	int n = 0;
	do {
		tmp[n++] = (u8)('0' + v % 10);
		v /= 10;
	} while (v || n < width);
	while (n) {
		*b->p++ = tmp[--n];
	}
}

// put_u64 writes v in decimal. Wasm has no 64-bit multiply-high, so 64-bit
// division stays a real (slow) division: it is done once per nine digits.
static void put_u64(Buf *b, u64 v) {
	u32 groups[2]; // 2^64 has 20 digits: at most two groups of nine below the top
	int n = 0;
	while (v >= 1000000000) {
		groups[n++] = (u32)(v % 1000000000);
		v /= 1000000000;
	}
	put_u32(b, (u32)v, 1);
	while (n) {
		put_u32(b, groups[--n], 9);
	}
}

static void put_i64(Buf *b, i64 v) {
	if (v < 0) {
		*b->p++ = '-';
		put_u64(b, 0 - (u64)v); // also right for INT64_MIN
		return;
	}
	put_u64(b, (u64)v);
}

static void finish(Buf *b) {
	out_ptr = b->start;
	out_len = (u32)(b->p - b->start);
}

// fail makes msg the output and returns status 1.
static int fail(const char *msg) {
	Buf b = buf_new(128);
	put_str(&b, "sort: ");
	put_str(&b, msg);
	finish(&b);
	return 1;
}

// fail_at reports a bad element: "sort: numbers[I] <what>".
static int fail_at(u32 index, const char *what) {
	Buf b = buf_new(128);
	put_str(&b, "sort: numbers[");
	put_u64(&b, index);
	put_str(&b, "] ");
	put_str(&b, what);
	finish(&b);
	return 1;
}

// ---- JSON parsing ----------------------------------------------------------

typedef struct {
	const u8 *p;
	const u8 *end;
} Parser;

enum { MAX_NESTING = 64 }; // bounds the parser's own recursion

static int peek(const Parser *ps) { return ps->p < ps->end ? *ps->p : -1; }

static void skip_ws(Parser *ps) {
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
		ps->p++;
	}
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int is_hex(int c) {
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// skip_string steps over a string at ps->p, validating its escapes. It
// returns 0 on success and sets *raw to the bytes between the quotes.
static int skip_string(Parser *ps, const u8 **raw, u32 *raw_len) {
	if (peek(ps) != '"') {
		return -1;
	}
	const u8 *start = ++ps->p;
	for (;;) {
		int c = peek(ps);
		if (c < 0x20) { // end of input (-1) or an unescaped control character
			return -1;
		}
		ps->p++;
		if (c == '"') {
			break;
		}
		if (c != '\\') {
			continue;
		}
		c = peek(ps);
		ps->p++;
		switch (c) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
			break;
		case 'u':
			for (int i = 0; i < 4; i++) {
				if (!is_hex(peek(ps))) {
					return -1;
				}
				ps->p++;
			}
			break;
		default:
			return -1;
		}
	}
	if (raw) {
		*raw = start;
		*raw_len = (u32)(ps->p - 1 - start);
	}
	return 0;
}

// Number syntax, as in RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
// parse_number steps over one; *integral tells whether it had neither a
// fraction nor an exponent.
static int parse_number(Parser *ps, int *integral) {
	if (peek(ps) == '-') {
		ps->p++;
	}
	if (peek(ps) == '0') {
		ps->p++;
	} else if (is_digit(peek(ps))) {
		while (is_digit(peek(ps))) {
			ps->p++;
		}
	} else {
		return -1;
	}
	*integral = 1;
	if (peek(ps) == '.') {
		*integral = 0;
		ps->p++;
		if (!is_digit(peek(ps))) {
			return -1;
		}
		while (is_digit(peek(ps))) {
			ps->p++;
		}
	}
	if (peek(ps) == 'e' || peek(ps) == 'E') {
		*integral = 0;
		ps->p++;
		if (peek(ps) == '+' || peek(ps) == '-') {
			ps->p++;
		}
		if (!is_digit(peek(ps))) {
			return -1;
		}
		while (is_digit(peek(ps))) {
			ps->p++;
		}
	}
	return 0;
}

static int skip_literal(Parser *ps, const char *lit) {
	while (*lit) {
		if (peek(ps) != (u8)*lit) {
			return -1;
		}
		ps->p++;
		lit++;
	}
	return 0;
}

// skip_value steps over any JSON value (whitespace around it included).
static int skip_value(Parser *ps, int nesting) {
	int integral;
	skip_ws(ps);
	switch (peek(ps)) {
	case '"':
		if (skip_string(ps, 0, 0)) {
			return -1;
		}
		break;
	case 't':
		if (skip_literal(ps, "true")) {
			return -1;
		}
		break;
	case 'f':
		if (skip_literal(ps, "false")) {
			return -1;
		}
		break;
	case 'n':
		if (skip_literal(ps, "null")) {
			return -1;
		}
		break;
	case '[':
	case '{': {
		int close = peek(ps) == '[' ? ']' : '}';
		if (nesting >= MAX_NESTING) {
			return -1;
		}
		ps->p++;
		skip_ws(ps);
		if (peek(ps) == close) {
			ps->p++;
			break;
		}
		for (;;) {
			if (close == '}') {
				skip_ws(ps);
				if (skip_string(ps, 0, 0)) {
					return -1;
				}
				skip_ws(ps);
				if (peek(ps) != ':') {
					return -1;
				}
				ps->p++;
			}
			if (skip_value(ps, nesting + 1)) {
				return -1;
			}
			int c = peek(ps);
			ps->p++;
			if (c == close) {
				break;
			}
			if (c != ',') {
				return -1;
			}
		}
		break;
	}
	default:
		if (parse_number(ps, &integral)) {
			return -1;
		}
	}
	skip_ws(ps);
	return 0;
}

// parse_int64 converts the integer literal [s, end) (already validated by
// parse_number) to an int64, failing when it does not fit.
static int parse_int64(const u8 *s, const u8 *end, i64 *out) {
	int neg = *s == '-';
	if (neg) {
		s++;
	}
	// v*10 + d must stay within 2^63-1 (or 2^63 for a negative number).
	const u64 cutoff = ((u64)1 << 63) / 10;          // 922337203685477580
	const u64 last = neg ? 8 : 7;                    // 2^63 = ...808
	u64 v = 0;
	for (; s < end; s++) {
		u64 d = (u64)(*s - '0');
		if (v > cutoff || (v == cutoff && d > last)) {
			return -1;
		}
		v = v * 10 + d;
	}
	*out = neg ? (i64)(0 - v) : (i64)v;
	return 0;
}

// A Vec is a growable array of int64. Growing copies into a block twice the
// size; with a bump allocator the old block is never reused, so at most as
// much memory is wasted as the final array holds.
typedef struct {
	i64 *items;
	u32 len;
	u32 cap;
} Vec;

static void vec_push(Vec *v, i64 x) {
	if (v->len == v->cap) {
		u32 cap = v->cap ? 2 * v->cap : 256;
		i64 *items = alloc(cap * (u32)sizeof(i64));
		for (u32 i = 0; i < v->len; i++) {
			items[i] = v->items[i];
		}
		v->items = items;
		v->cap = cap;
	}
	v->items[v->len++] = x;
}

// Errors from parse_numbers.
enum { NOT_AN_ARRAY = -1, MALFORMED = -2, NOT_AN_INTEGER = -3, OUT_OF_RANGE = -4 };

// parse_numbers reads the array at ps->p into v. On NOT_AN_INTEGER and
// OUT_OF_RANGE, v->len is the offending element's index.
static int parse_numbers(Parser *ps, Vec *v) {
	skip_ws(ps);
	if (peek(ps) != '[') {
		// Tell a value of another type from garbage.
		return skip_value(ps, 0) ? MALFORMED : NOT_AN_ARRAY;
	}
	ps->p++;
	skip_ws(ps);
	if (peek(ps) == ']') {
		ps->p++;
		skip_ws(ps);
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		const u8 *start = ps->p;
		int integral = 0;
		int c = peek(ps);
		if (c != '-' && !is_digit(c)) {
			return skip_value(ps, 1) ? MALFORMED : NOT_AN_INTEGER;
		}
		if (parse_number(ps, &integral)) {
			return MALFORMED;
		}
		if (!integral) {
			return NOT_AN_INTEGER;
		}
		i64 x;
		if (parse_int64(start, ps->p, &x)) {
			return OUT_OF_RANGE;
		}
		vec_push(v, x);
		skip_ws(ps);
		c = peek(ps);
		ps->p++;
		if (c == ']') {
			break;
		}
		if (c != ',') {
			return MALFORMED;
		}
	}
	skip_ws(ps);
	return 0;
}

// ---- sorting ---------------------------------------------------------------

enum { RUN = 32 }; // runs this short are sorted by insertion first

static void insertion_sort(i64 *a, u32 n) {
	for (u32 i = 1; i < n; i++) {
		i64 v = a[i];
		u32 j = i;
		while (j > 0 && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

// merge merges the sorted src[lo:mid] and src[mid:hi] into dst[lo:hi].
static void merge(const i64 *src, i64 *dst, u32 lo, u32 mid, u32 hi) {
	u32 i = lo, j = mid, k = lo;
	while (i < mid && j < hi) {
		dst[k++] = src[j] < src[i] ? src[j++] : src[i++];
	}
	while (i < mid) {
		dst[k++] = src[i++];
	}
	while (j < hi) {
		dst[k++] = src[j++];
	}
}

static u32 min_u32(u32 a, u32 b) { return a < b ? a : b; }

// merge_sort sorts a[0:n] using tmp[0:n] as scratch and returns whichever of
// the two holds the result.
static i64 *merge_sort(i64 *a, i64 *tmp, u32 n) {
	for (u32 lo = 0; lo < n; lo += RUN) {
		insertion_sort(a + lo, min_u32(RUN, n - lo));
	}
	i64 *src = a, *dst = tmp;
	for (u32 width = RUN; width < n; width *= 2) {
		for (u32 lo = 0; lo < n; lo += 2 * width) {
			u32 mid = min_u32(lo + width, n);
			u32 hi = min_u32(lo + 2 * width, n);
			merge(src, dst, lo, mid, hi);
		}
		i64 *t = src;
		src = dst;
		dst = t;
	}
	return src;
}

// ---- ABI v1 ----------------------------------------------------------------

u32 wg_alloc(u32 len) { return (u32)alloc(len); }

u32 wg_output_ptr(void) { return (u32)out_ptr; }

u32 wg_output_len(void) { return out_len; }

int wg_execute(const u8 *input, u32 len) {
	Parser ps = {input, input + len};
	Vec values = {0, 0, 0};
	int found = 0;

	skip_ws(&ps);
	if (peek(&ps) != '{') {
		return fail("input is not a JSON object");
	}
	ps.p++;
	skip_ws(&ps);
	if (peek(&ps) == '}') {
		ps.p++;
	} else {
		for (;;) {
			const u8 *key;
			u32 key_len;
			skip_ws(&ps);
			if (skip_string(&ps, &key, &key_len)) {
				return fail("malformed JSON input");
			}
			skip_ws(&ps);
			if (peek(&ps) != ':') {
				return fail("malformed JSON input");
			}
			ps.p++;
			// Keys are compared as raw bytes: canonical JSON never escapes
			// the letters of "numbers". The first occurrence wins (canonical
			// JSON has no duplicate keys).
			if (!found && key_len == 7 && key[0] == 'n' && key[1] == 'u' &&
			    key[2] == 'm' && key[3] == 'b' && key[4] == 'e' && key[5] == 'r' &&
			    key[6] == 's') {
				found = 1;
				switch (parse_numbers(&ps, &values)) {
				case 0:
					break;
				case NOT_AN_ARRAY:
					return fail("field \"numbers\" must be an array");
				case NOT_AN_INTEGER:
					return fail_at(values.len, "is not an integer");
				case OUT_OF_RANGE:
					return fail_at(values.len, "is out of range");
				default:
					return fail("malformed JSON input");
				}
			} else if (skip_value(&ps, 1)) {
				return fail("malformed JSON input");
			}
			int c = peek(&ps);
			ps.p++;
			if (c == '}') {
				break;
			}
			if (c != ',') {
				return fail("malformed JSON input");
			}
		}
	}
	skip_ws(&ps);
	if (ps.p != ps.end) {
		return fail("malformed JSON input");
	}
	if (!found) {
		return fail("missing field \"numbers\"");
	}

	u32 n = values.len;
	i64 *sorted = merge_sort(values.items, alloc(n * (u32)sizeof(i64)), n);

	// Each int64 takes at most 20 characters, plus a comma.
	Buf b = buf_new(n * 21 + 64);
	put_str(&b, "{\"count\":");
	put_u64(&b, n);
	if (n == 0) {
		put_str(&b, ",\"max\":null,\"min\":null,\"sorted\":[]}");
		finish(&b);
		return 0;
	}
	put_str(&b, ",\"max\":");
	put_i64(&b, sorted[n - 1]);
	put_str(&b, ",\"min\":");
	put_i64(&b, sorted[0]);
	put_str(&b, ",\"sorted\":[");
	for (u32 i = 0; i < n; i++) {
		if (i) {
			*b.p++ = ',';
		}
		put_i64(&b, sorted[i]);
	}
	put_str(&b, "]}");
	finish(&b);
	return 0;
}
