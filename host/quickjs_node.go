package host

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
	"hash"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
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

// nodeOps is the behaviour of JSNodeFunction.
func nodeOps(ctx context.Context, args []string) (string, error) {
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
		b := make([]byte, n)
		SessionFrom(ctx).CryptoRandom(b)
		return latin1String(b), nil
	case "clock":
		if err := want(1); err != nil {
			return "", err
		}
		ms, err := strconv.ParseFloat(args[0], 64)
		if err != nil || ms < 0 || ms > float64(math.MaxUint64/1_000_000) {
			return "", fmt.Errorf("clock: %q is not a time in milliseconds", args[0])
		}
		SessionFrom(ctx).AdvanceClock(uint64(ms) * 1_000_000)
		return "", nil
	}
	if out, ok, err := runCryptoOp(ctx, op, args); ok {
		return out, err
	}
	if out, ok, err := runIntlOp(op, args); ok {
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
// the engine hands it over in UTF-8, into its bytes.
func latin1Bytes(s string) ([]byte, error) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r > 0xff {
			return nil, fmt.Errorf("binary data holds the character U+%04X, which is not a byte", r)
		}
		b = append(b, byte(r))
		i += n
	}
	return b, nil
}

// latin1String encodes bytes as a latin1 string (one character per byte).
func latin1String(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) * 2)
	for _, c := range b {
		if c < utf8.RuneSelf {
			sb.WriteByte(c)
		} else {
			sb.WriteRune(rune(c))
		}
	}
	return sb.String()
}
