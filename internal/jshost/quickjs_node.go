package jshost

import (
	"context"
	"crypto"
	"crypto/hmac"
	_ "crypto/md5" // registers crypto.MD5 for newHash
	_ "crypto/sha1"
	_ "crypto/sha256"
	_ "crypto/sha3"
	_ "crypto/sha512"
	"fmt"
	"github.com/wasmgate/wasmgate/internal/host"
	"hash"
	"math"
	"strconv"
	"strings"
)

// The Node profile's host side: what the engine's Node built-ins (the
// crypto module, timers) ask of the host through one host function,
// wasmgate.node, which the prelude holds and wraps, so that a tool's own code
// reaches only the wrappers. Every operation is a pure function of its
// arguments and of the execution's Session (the input digest, the virtual
// clock), so it is deterministic on every engine; none performs I/O.

// JSNodeFunction is the name of the host function behind the Node
// built-ins. Its first argument names the operation:
//
//	hash ALG DATA         → the digest of DATA
//	hmac ALG KEY DATA     → the HMAC of DATA under KEY
//	random N              → N bytes of the execution's crypto stream
//	clock MS              → advances the virtual clocks to MS (milliseconds
//	                        since the Unix epoch); returns ""
//	crypto.*              → ciphers, signatures, keys and key derivation
//	                        (see cryptoOps)
//	intl.*                → Intl.Collator's comparisons (see runIntlOp)
//
// Binary data (DATA, KEY, the results) crosses as latin1 strings: one
// character per byte.
const JSNodeFunction = "wasmgate.node"

// maxRandomRequest bounds one random request (the JS side asks in chunks).
const maxRandomRequest = 1 << 16

// nodeOps is the behaviour of JSNodeFunction. Its work is charged to the
// execution's fuel (quickjs_hostwork.go): handing over the arguments and
// the result, and what each operation does.
func nodeOps(ctx context.Context, args []string) (string, error) {
	if err := spend(ctx, bridgeCost(args)); err != nil {
		return "", err
	}
	out, err := nodeOp(ctx, args)
	if err != nil {
		return "", err
	}
	if err := spend(ctx, perKiB(bridgeOutPerKiB, len(out))); err != nil {
		return "", err
	}
	return out, nil
}

func nodeOp(ctx context.Context, args []string) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("no operation")
	}
	op, args := args[0], args[1:]
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%s: want %d arguments, got %d", op, n, len(args))
		}
		return nil
	}
	switch op {
	case "hash":
		if err := want(2); err != nil {
			return "", err
		}
		h, err := newHash(args[0])
		if err != nil {
			return "", err
		}
		data, err := latin1Bytes(args[1])
		if err != nil {
			return "", err
		}
		if err := spend(ctx, costOfHash(args[0]).digest(len(data))); err != nil {
			return "", err
		}
		h.Write(data)
		return latin1String(h.Sum(nil)), nil
	case "hmac":
		if err := want(3); err != nil {
			return "", err
		}
		if _, err := newHash(args[0]); err != nil {
			return "", err
		}
		key, err := latin1Bytes(args[1])
		if err != nil {
			return "", err
		}
		data, err := latin1Bytes(args[2])
		if err != nil {
			return "", err
		}
		c := costOfHash(args[0])
		if err := spend(ctx, c.hmac+c.digest(len(key)+len(data))); err != nil {
			return "", err
		}
		mac := hmac.New(func() hash.Hash { h, _ := newHash(args[0]); return h }, key)
		mac.Write(data)
		return latin1String(mac.Sum(nil)), nil
	case "random":
		if err := want(1); err != nil {
			return "", err
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 || n > maxRandomRequest {
			return "", fmt.Errorf("random: %q is not a byte count from 0 to %d", args[0], maxRandomRequest)
		}
		if err := spend(ctx, perKiB(randomPerKiB, n)); err != nil {
			return "", err
		}
		b := make([]byte, n)
		host.SessionFrom(ctx).CryptoRandom(b)
		return latin1String(b), nil
	case "clock":
		if err := want(1); err != nil {
			return "", err
		}
		ms, err := strconv.ParseFloat(args[0], 64)
		if err != nil || ms < 0 || ms > float64(math.MaxUint64/1_000_000) {
			return "", fmt.Errorf("clock: %q is not a time in milliseconds", args[0])
		}
		host.SessionFrom(ctx).AdvanceClock(uint64(ms) * 1_000_000)
		return "", nil
	}
	if out, ok, err := runCryptoOp(ctx, op, args); ok {
		return out, err
	}
	if out, ok, err := runIntlOp(ctx, op, args); ok {
		return out, err
	}
	return "", fmt.Errorf("unknown operation %q", op)
}

// newHash makes the hash Node's crypto names alg (case-insensitively, by
// any of the names OpenSSL gives it in Node's getHashes()).
func newHash(alg string) (hash.Hash, error) {
	h, ok := hashNames[strings.ToLower(alg)]
	if !ok {
		return nil, fmt.Errorf("Digest method not supported: %q", alg)
	}
	return h.New(), nil
}

// hashNames are the digests wasmgate has, by every name Node accepts for
// them, lower-cased.
var hashNames = map[string]crypto.Hash{}

func init() {
	for h, names := range map[crypto.Hash]string{
		crypto.MD5:        "md5 rsa-md5 md5withrsaencryption ssl3-md5",
		crypto.SHA1:       "sha1 sha-1 rsa-sha1 rsa-sha1-2 sha1withrsaencryption ssl3-sha1",
		crypto.SHA224:     "sha224 sha-224 rsa-sha224 sha224withrsaencryption",
		crypto.SHA256:     "sha256 sha-256 rsa-sha256 sha256withrsaencryption",
		crypto.SHA384:     "sha384 sha-384 rsa-sha384 sha384withrsaencryption",
		crypto.SHA512:     "sha512 sha-512 rsa-sha512 sha512withrsaencryption",
		crypto.SHA512_224: "sha512-224 sha-512/224 rsa-sha512/224 sha512-224withrsaencryption",
		crypto.SHA512_256: "sha512-256 sha-512/256 rsa-sha512/256 sha512-256withrsaencryption",
		crypto.SHA3_224:   "sha3-224 rsa-sha3-224 id-rsassa-pkcs1-v1_5-with-sha3-224",
		crypto.SHA3_256:   "sha3-256 rsa-sha3-256 id-rsassa-pkcs1-v1_5-with-sha3-256",
		crypto.SHA3_384:   "sha3-384 rsa-sha3-384 id-rsassa-pkcs1-v1_5-with-sha3-384",
		crypto.SHA3_512:   "sha3-512 rsa-sha3-512 id-rsassa-pkcs1-v1_5-with-sha3-512",
	} {
		for _, n := range strings.Fields(names) {
			hashNames[n] = h
		}
	}
}

// latin1Bytes decodes a latin1 string (every character below U+0100), as
// the engine hands it over in UTF-8, into its bytes. Every byte crossing
// the bridge is charged to the guest's fuel (bridgeCost), and binary data
// mixes the one-byte and two-byte forms (U+0080 to U+00FF are C2 80 to
// C3 BF) at random, so the loop has no branch on the data: it decodes
// each character as both forms would, keeps the one the lead byte says,
// and checks validity once at the end.
func latin1Bytes(s string) ([]byte, error) {
	b := make([]byte, len(s))
	var bad byte
	i, j := 0, 0
	for ; i+1 < len(s); j++ {
		c, next := s[i], s[i+1]
		two := c >> 7
		b[j] = c ^ two*(c^(c<<6|next&0x3f))
		// Nonzero when c is not C2 or C3, or next is no continuation
		// byte; x|-x has its top bit set exactly when x is not zero.
		wrong := (c&0xfe ^ 0xc2) | (next&0xc0 ^ 0x80)
		bad |= two & ((wrong | -wrong) >> 7)
		i += 1 + int(two)
	}
	if i < len(s) {
		// The last byte stands alone.
		b[j] = s[i]
		bad |= s[i] >> 7
		j++
	}
	if bad != 0 {
		for _, r := range s {
			if r > 0xff {
				return nil, fmt.Errorf("binary data holds the character U+%04X, which is not a byte", r)
			}
		}
	}
	return b[:j], nil
}

// latin1String encodes bytes as a latin1 string (one character per byte),
// without a branch on the data (see latin1Bytes): each byte writes both
// bytes of its two-byte form, the first replaced by the byte itself when
// it is ASCII, and the next character overwrites the second.
func latin1String(b []byte) string {
	n := len(b)
	for _, c := range b {
		n += int(c >> 7)
	}
	out := make([]byte, n+1)
	j := 0
	for _, c := range b {
		two := c >> 7
		out[j] = c ^ two*(c^(0xc0|c>>6))
		out[j+1] = 0x80 | c&0x3f
		j += 1 + int(two)
	}
	return string(out[:n])
}
