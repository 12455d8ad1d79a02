// floats: {"count":N,"seed":S} -> {"count":N,"hash":"<16 hex digits>","nans":K}
//
// A float-heavy determinism fixture in C: Guest ABI v1, strict profile, no
// libc. From the seed it generates N doubles with an integer generator (so
// the inputs are bit-exact everywhere), runs dozens of f64, f32 and SIMD
// operations on each — including ones whose results are NaN (0/0, inf-inf,
// sqrt of a negative, inf*0, NaN inputs to min/max) — and folds the raw bits
// of every result into an FNV-1a hash.
//
// Which NaN bit pattern an operation produces is left open by the Wasm spec
// (sign and payload may differ between engines and CPUs). Under wasmgate's
// NaN canonicalization every such result is the canonical NaN, so the hash
// is the same on every engine; "nans" counts the NaN results seen.
//
//   input   {"count":N,"seed":S}: 1 <= N <= 100000, S an unsigned integer
//   errors  status 1 with a message for anything else

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32x4 __attribute__((vector_size(16)));
typedef double f64x2 __attribute__((vector_size(16)));

static u8 heap[4096];
static u32 out_len;

__attribute__((export_name("wg_alloc"))) u8 *wg_alloc(u32 len) {
	return len <= sizeof(heap) - 256 ? heap + 256 : 0;
}

__attribute__((export_name("wg_output_ptr"))) u8 *wg_output_ptr(void) { return heap; }
__attribute__((export_name("wg_output_len"))) u32 wg_output_len(void) { return out_len; }

static u32 fail(const char *msg) {
	u32 n = 0;
	while (msg[n] && n < 255) {
		heap[n] = (u8)msg[n];
		n++;
	}
	out_len = n;
	return 1;
}

// field finds "name": in the canonical input and parses the unsigned
// integer after it; ok is cleared when it is missing or not an integer.
static u64 field(const u8 *in, u32 len, const char *name, int *ok) {
	u32 nlen = 0;
	while (name[nlen]) {
		nlen++;
	}
	for (u32 i = 0; i + nlen + 3 <= len; i++) {
		if (in[i] != '"') {
			continue;
		}
		u32 j = 0;
		while (j < nlen && in[i + 1 + j] == (u8)name[j]) {
			j++;
		}
		if (j != nlen || in[i + 1 + nlen] != '"' || in[i + 2 + nlen] != ':') {
			continue;
		}
		u32 k = i + 3 + nlen;
		u64 v = 0;
		u32 digits = 0;
		while (k < len && in[k] >= '0' && in[k] <= '9' && digits < 19) {
			v = v * 10 + (u64)(in[k] - '0');
			k++;
			digits++;
		}
		if (digits == 0 || (k < len && in[k] != ',' && in[k] != '}')) {
			break;
		}
		return v;
	}
	*ok = 0;
	return 0;
}

static u64 hash = 0xcbf29ce484222325ull;
static u32 nans;

static void mix64(u64 bits) {
	for (int i = 0; i < 8; i++) {
		hash ^= (bits >> (8 * i)) & 0xff;
		hash *= 0x100000001b3ull;
	}
}

static void f64out(double d) {
	u64 bits;
	__builtin_memcpy(&bits, &d, 8);
	if (d != d) {
		nans++;
	}
	mix64(bits);
}

static void f32out(float f) {
	u32 bits;
	__builtin_memcpy(&bits, &f, 4);
	if (f != f) {
		nans++;
	}
	mix64(bits);
}

// next is a 64-bit LCG: integer arithmetic, identical everywhere.
static u64 state;
static u64 next(void) {
	state = state * 6364136223846793005ull + 1442695040888963407ull;
	return state;
}

// sample turns 53 random bits into a double in [-1000, 1000), and now and
// then into a special value, so every operation meets infinities and NaNs.
static double sample(void) {
	u64 r = next();
	switch (r & 31) {
	case 0:
		return 0.0;
	case 1:
		return -0.0;
	case 2:
		return __builtin_inf();
	case 3:
		return -__builtin_inf();
	case 4:
		return __builtin_nan("");
	}
	return ((double)(r >> 11) / 9007199254740992.0) * 2000.0 - 1000.0;
}

static void scalar(double a, double b) {
	f64out(a + b);
	f64out(a - b);
	f64out(a * b);
	f64out(a / b);
	f64out(b / a);
	f64out(__builtin_sqrt(a));
	f64out(__builtin_sqrt(b - a));
	f64out(__builtin_wasm_min_f64(a, b));
	f64out(__builtin_wasm_max_f64(a, b));
	f64out(__builtin_ceil(a * 0.37));
	f64out(__builtin_floor(b * 1.91));
	f64out(__builtin_trunc(a / 3.0));
	f64out(__builtin_nearbyint(b * 2.5));
	f64out((a - a) / (b - b));                 // NaN from 0/0 or inf-inf
	f64out(a * 0.0 * __builtin_inf());          // NaN from 0*inf
	f64out(__builtin_sqrt(-__builtin_fabs(a) - 1.0)); // NaN from sqrt(negative)
	f64out(__builtin_copysign(a, b));
	f64out(-a);
	f64out(__builtin_fabs(b));

	float x = (float)a, y = (float)b; // f32.demote_f64
	f32out(x + y);
	f32out(x * y);
	f32out(x / y);
	f32out(__builtin_sqrtf(y));
	f32out(__builtin_wasm_min_f32(x, y));
	f32out(__builtin_wasm_max_f32(x, y));
	f32out((x - x) / (y - y));
	f32out(__builtin_floorf(x) - __builtin_ceilf(y));
	f64out((double)(x * y)); // f64.promote_f32
}

static void vector(double a, double b) {
	f32x4 u = {(float)a, (float)b, (float)(a * b), (float)(a - b)};
	f32x4 v = {(float)b, 0.0f, (float)a, __builtin_inff()};
	f32x4 w = u / v + u * v - (u - u) / (v - v);
	f64x2 p = {a, b};
	f64x2 q = {b, a - a};
	f64x2 r = p / q + __builtin_wasm_sqrt_f64x2(p) - q * p;
	for (int i = 0; i < 4; i++) {
		f32out(w[i]);
	}
	for (int i = 0; i < 2; i++) {
		f64out(r[i]);
	}
}

static void put_hex(u8 *p, u64 v) {
	for (int i = 15; i >= 0; i--) {
		p[i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	}
}

static u32 put_dec(u8 *p, u32 v) {
	u8 tmp[10];
	u32 n = 0;
	do {
		tmp[n++] = (u8)('0' + v % 10);
		v /= 10;
	} while (v);
	for (u32 i = 0; i < n; i++) {
		p[i] = tmp[n - 1 - i];
	}
	return n;
}

static u32 put(u8 *p, const char *s) {
	u32 n = 0;
	while (s[n]) {
		p[n] = (u8)s[n];
		n++;
	}
	return n;
}

__attribute__((export_name("wg_execute"))) u32 wg_execute(const u8 *in, u32 len) {
	int ok = 1;
	u64 count = field(in, len, "count", &ok);
	u64 seed = field(in, len, "seed", &ok);
	if (!ok || count < 1 || count > 100000) {
		return fail("floats: want {\"count\":N,\"seed\":S} with 1 <= N <= 100000 and S an unsigned integer");
	}
	state = seed;
	for (u64 i = 0; i < count; i++) {
		double a = sample(), b = sample();
		scalar(a, b);
		vector(a, b);
	}
	u8 *p = heap;
	p += put(p, "{\"count\":");
	p += put_dec(p, (u32)count);
	p += put(p, ",\"hash\":\"");
	put_hex(p, hash);
	p += 16;
	p += put(p, "\",\"nans\":");
	p += put_dec(p, nans);
	p += put(p, "}");
	out_len = (u32)(p - heap);
	return 0;
}
