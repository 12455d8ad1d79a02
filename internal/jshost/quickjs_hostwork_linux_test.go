package jshost

import (
	"context"
	"encoding/json"
	"github.com/wasmgate/wasmgate/internal/host"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used, which, unlike
// the wall clock, does not grow with the machine's load.
func threadCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostWorkCase is one host operation BenchmarkHostWork measures.
type hostWorkCase struct {
	name string
	args []string
}

// hostWorkCases are the operations the cost model prices, with the keys
// they need made first.
func hostWorkCases(tb testing.TB) []hostWorkCase {
	ctx := cryptoSession(9)
	key := func(kty, options string) (priv, pub string) {
		var rec map[string]keyRecord
		out, _, err := runCryptoOp(ctx, "crypto.keyGenerate", []string{kty, options})
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &rec); err != nil {
			tb.Fatal(err)
		}
		return rec["private"].DER, rec["public"].DER
	}
	// Binary data at random, half of its bytes two bytes long on the
	// bridge: the case every byte is charged as.
	rng := rand.New(rand.NewPCG(1, 2))
	bytes := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return latin1String(b)
	}
	rsa2048, rsa2048Pub := key("rsa", `{"modulusLength":2048}`)
	rsa4096, rsa4096Pub := key("rsa", `{"modulusLength":4096}`)
	p256, p256Pub := key("ec", `{"namedCurve":"P-256"}`)
	p384, p384Pub := key("ec", `{"namedCurve":"P-384"}`)
	p521, p521Pub := key("ec", `{"namedCurve":"P-521"}`)
	ed, edPub := key("ed25519", `{}`)
	x, xPub := key("x25519", `{}`)
	sig := func(der, hash, data string) string {
		out, _, err := runCryptoOp(ctx, "crypto.sign", []string{der, hash, "", "", "der", data})
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	msg := bytes(1024)
	oaep, _, err := runCryptoOp(ctx, "crypto.rsa", []string{"publicEncrypt", "public", rsa2048Pub, "oaep", "sha256", "", "secret"})
	if err != nil {
		tb.Fatal(err)
	}
	pem, _, err := runCryptoOp(ctx, "crypto.keyExport", []string{"private", rsa2048, "pem", "pkcs8"})
	if err != nil {
		tb.Fatal(err)
	}
	return []hostWorkCase{
		{"hash/sha256/16B", []string{"hash", "sha256", bytes(16)}},
		{"hash/sha256/1MiB", []string{"hash", "sha256", bytes(1 << 20)}},
		{"hash/sha512/1MiB", []string{"hash", "sha512", bytes(1 << 20)}},
		{"hash/md5/1MiB", []string{"hash", "md5", bytes(1 << 20)}},
		{"hash/sha3-512/1MiB", []string{"hash", "sha3-512", bytes(1 << 20)}},
		{"hmac/sha256/1KiB", []string{"hmac", "sha256", bytes(32), bytes(1024)}},
		{"hmac/sha512/1MiB", []string{"hmac", "sha512", bytes(64), bytes(1 << 20)}},
		{"random/64KiB", []string{"random", "65536"}},
		{"pbkdf2/sha256/100000", []string{"crypto.pbkdf2", "sha256", "password", "salt", "100000", "32"}},
		{"pbkdf2/sha1/100000x3", []string{"crypto.pbkdf2", "sha1", "password", "salt", "100000", "60"}},
		{"pbkdf2/sha512/20000", []string{"crypto.pbkdf2", "sha512", "password", "salt", "20000", "64"}},
		{"pbkdf2/sha3-256/10000", []string{"crypto.pbkdf2", "sha3-256", "password", "salt", "10000", "32"}},
		{"hkdf/sha256/8160B", []string{"crypto.hkdf", "sha256", bytes(32), "salt", "info", "8160"}},
		{"scrypt/16384-8-1", []string{"crypto.scrypt", "password", "salt", "16384", "8", "1", "64", "33554432"}},
		{"scrypt/1024-1-16", []string{"crypto.scrypt", "password", "salt", "1024", "1", "16", "64", "33554432"}},
		{"blocks/aes-cbc/1MiB", []string{"crypto.blocks", "aes", "cbc", "encrypt", bytes(32), bytes(16), bytes(1 << 20)}},
		{"blocks/aes-ecb/16B", []string{"crypto.blocks", "aes", "ecb", "encrypt", bytes(16), "", bytes(16)}},
		{"blocks/des-ede3-cbc/64KiB", []string{"crypto.blocks", "des-ede3", "cbc", "encrypt", bytes(24), bytes(8), bytes(64 << 10)}},
		{"stream/ctr/1MiB", []string{"crypto.stream", "ctr", "encrypt", bytes(32), bytes(16), "0", bytes(1 << 20), "128"}},
		{"stream/gcm/1MiB", []string{"crypto.stream", "gcm", "encrypt", bytes(32), bytes(12), "0", bytes(1 << 20), "32"}},
		{"stream/cfb8/64KiB", []string{"crypto.stream", "cfb8", "encrypt", bytes(32), bytes(16), "", bytes(64 << 10), "128"}},
		{"stream/chacha20/1MiB", []string{"crypto.stream", "chacha20", "encrypt", bytes(32), bytes(16), "0", bytes(1 << 20), "128"}},
		{"aeadTag/gcm/1MiB", []string{"crypto.aeadTag", "gcm", bytes(32), bytes(12), "", bytes(1 << 20)}},
		{"aeadTag/chacha20-poly1305/1MiB", []string{"crypto.aeadTag", "chacha20-poly1305", bytes(32), bytes(12), "", bytes(1 << 20)}},
		{"keyWrap/4KiB", []string{"crypto.keyWrap", "encrypt", bytes(32), "", bytes(4096)}},
		{"keyGenerate/rsa-2048", []string{"crypto.keyGenerate", "rsa", `{"modulusLength":2048}`}},
		{"keyGenerate/rsa-4096", []string{"crypto.keyGenerate", "rsa", `{"modulusLength":4096}`}},
		{"keyGenerate/P-256", []string{"crypto.keyGenerate", "ec", `{"namedCurve":"P-256"}`}},
		{"keyGenerate/P-521", []string{"crypto.keyGenerate", "ec", `{"namedCurve":"P-521"}`}},
		{"keyGenerate/ed25519", []string{"crypto.keyGenerate", "ed25519", `{}`}},
		{"keyGenerate/x25519", []string{"crypto.keyGenerate", "x25519", `{}`}},
		{"keyParse/rsa-2048-pem", []string{"crypto.keyParse", "private", "pem", "", pem}},
		{"keyExport/rsa-4096-jwk", []string{"crypto.keyExport", "private", rsa4096, "jwk", ""}},
		{"sign/rsa-2048", []string{"crypto.sign", rsa2048, "sha256", "", "", "der", msg}},
		{"sign/rsa-4096", []string{"crypto.sign", rsa4096, "sha256", "", "", "der", msg}},
		{"verify/rsa-2048", []string{"crypto.verify", "public", rsa2048Pub, "sha256", "", "", "der", msg, sig(rsa2048, "sha256", msg)}},
		{"verify/rsa-4096", []string{"crypto.verify", "public", rsa4096Pub, "sha256", "", "", "der", msg, sig(rsa4096, "sha256", msg)}},
		{"rsa/privateDecrypt-2048", []string{"crypto.rsa", "privateDecrypt", "private", rsa2048, "oaep", "sha256", "", oaep}},
		{"sign/P-256", []string{"crypto.sign", p256, "sha256", "", "", "der", msg}},
		{"sign/P-384", []string{"crypto.sign", p384, "sha384", "", "", "der", msg}},
		{"sign/P-521", []string{"crypto.sign", p521, "sha512", "", "", "der", msg}},
		{"verify/P-256", []string{"crypto.verify", "public", p256Pub, "sha256", "", "", "der", msg, sig(p256, "sha256", msg)}},
		{"verify/P-521", []string{"crypto.verify", "public", p521Pub, "sha512", "", "", "der", msg, sig(p521, "sha512", msg)}},
		{"sign/ed25519", []string{"crypto.sign", ed, "", "", "", "der", msg}},
		{"verify/ed25519", []string{"crypto.verify", "public", edPub, "", "", "", "der", msg, sig(ed, "", msg)}},
		{"derive/P-256", []string{"crypto.derive", p256, "public", p256Pub}},
		{"derive/P-384", []string{"crypto.derive", p384, "public", p384Pub}},
		{"derive/x25519", []string{"crypto.derive", x, "public", xPub}},
		{"collate/en/short", []string{"intl.collate", "en", "variant", "0", "false", "0", "apple", "banana"}},
		{"collate/en/1KiB", []string{"intl.collate", "en", "variant", "0", "false", "0", strings.Repeat("hello world ", 85), strings.Repeat("hello world ", 85) + "!"}},
		{"collate/en-case-upper-punct/1KiB", []string{"intl.collate", "en", "case", "1", "upper", "1", strings.Repeat("hello world ", 85), strings.Repeat("Hello world ", 85)}},
	}
}

// BenchmarkHostWork measures what the host's work for a JS tool costs
// against the fuel it is charged: fuel/op, the host thread's CPU time
// (cpu-ns/op, which does not depend on the machine's load as the wall clock
// does) and their ratio, fuel/cpu-ns, which the cost model aims at
// hostFuelPerNs (12). Run it with -cpu 1 on a machine without other work
// for the figures in docs/BENCHMARKS.md.
func BenchmarkHostWork(b *testing.B) {
	for _, c := range hostWorkCases(b) {
		b.Run(c.name, func(b *testing.B) {
			var fuel uint64
			sess := host.NewSession(nil, [32]byte{7}, 0)
			sess.SetFuelCharge(func(n uint64) bool { fuel += n; return true })
			ctx := host.WithSession(context.Background(), sess)
			goruntime.LockOSThread()
			defer goruntime.UnlockOSThread()
			start := threadCPU(b)
			for b.Loop() {
				if _, err := nodeOps(ctx, c.args); err != nil {
					b.Fatal(err)
				}
			}
			cpu := float64(threadCPU(b) - start)
			n := float64(b.N)
			b.ReportMetric(float64(fuel)/n, "fuel/op")
			b.ReportMetric(cpu/n, "cpu-ns/op")
			b.ReportMetric(float64(fuel)/cpu, "fuel/cpu-ns")
		})
	}
}
