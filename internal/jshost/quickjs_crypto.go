package jshost

import (
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/asn1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wasmgate/wasmgate/internal/host"
	"hash"
	"math"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/crypto/scrypt"
)

// The crypto half of the Node profile's host side: what node:crypto and
// crypto.subtle ask of the host through JSNodeFunction, computed by Go's
// crypto packages (and golang.org/x/crypto's scrypt and ChaCha20).
//
// Keys never live on the host. They cross every call as bytes (a private
// key as PKCS #8 DER, a public key as SPKI DER, a secret key as itself),
// so the host keeps nothing between calls and an execution can reach no
// key but those its own memory holds: a snapshot or a recycled instance
// carries no other execution's keys, because there is nowhere else they
// could be. Parsing a key on every use is the price (see RATIONALE).
//
// Randomness (generated keys, RSA-PSS salts, RSA-OAEP seeds, PKCS #1 v1.5
// padding) comes from the execution's crypto stream (Session.CryptoRandom,
// seeded from the input digest), never from crypto/rand, so the same input
// gives the same keys and signatures on every run and engine. ECDSA signs
// with RFC 6979 nonces (ecdsa.PrivateKey.Sign with a nil reader), which
// need no randomness at all; Ed25519 and RSA PKCS #1 v1.5 are
// deterministic by construction.

// cryptoError is a failure the JS side rethrows as Node does: code is
// Node's error code (ERR_OSSL_BAD_DECRYPT, ERR_CRYPTO_INVALID_KEYLEN, …),
// msg Node's message.
type cryptoError struct{ code, msg string }

func (e *cryptoError) Error() string { return "[" + e.code + "] " + e.msg }

// cryptoOp is an operation of the crypto family: how many arguments it
// takes and what it does with them (binary arguments and results are
// latin1 strings, as for hash).
type cryptoOp struct {
	args int
	// text: the result is text (a JSON key record, whose DER is already a
	// latin1 string), handed over as it is, not as bytes.
	text bool
	run  func(ctx context.Context, a []string) ([]byte, error)
}

// cryptoOps are the operations by name (JSNodeFunction's first argument).
//
//	crypto.keyParse WANT FORMAT TYPE DATA      → a key record (JSON)
//	crypto.keyExport KEYTYPE DER FORMAT TYPE  → the key as pem, der or jwk
//	crypto.keyGenerate KTY OPTIONS            → {"private","public"} records
//	crypto.keyRawPublic KTY CURVE RAW          → a public key record
//	crypto.keyRawPrivate KTY CURVE RAW         → a private key record
//	crypto.keyToRaw KEYTYPE DER COMPRESSED     → the raw public key
//	crypto.sign DER HASH PADDING SALT DSAENC DATA          → the signature
//	crypto.verify KEYTYPE DER HASH PADDING SALT DSAENC DATA SIG → "1" or "0"
//	crypto.rsa OP KEYTYPE DER PADDING OAEPHASH LABEL DATA   → the output
//	crypto.derive PRIVDER PUBTYPE PUBDER      → the shared secret
//	crypto.pbkdf2 HASH PASSWORD SALT ITER LEN
//	crypto.hkdf HASH IKM SALT INFO LEN
//	crypto.scrypt PASSWORD SALT N R P LEN MAXMEM
//	crypto.blocks CIPHER MODE DIR KEY IV DATA  → whole blocks, unpadded
//	crypto.stream MODE DIR KEY IV STATE DATA BITS → state then output
//	crypto.aeadTag MODE KEY IV AAD PLAINTEXT   → the 16-byte tag
//	crypto.keyWrap DIR KEY IV DATA             → RFC 3394
var cryptoOps = map[string]cryptoOp{
	"crypto.keyParse": {4, true, func(ctx context.Context, a []string) ([]byte, error) {
		data, err := latin1Bytes(a[3])
		if err != nil {
			return nil, err
		}
		k, err := parseKey(a[0], a[1], a[2], data)
		if err != nil {
			return nil, err
		}
		if err := spendKey(ctx, k, costOfKey(k).record); err != nil {
			return nil, err
		}
		return k.recordJSON()
	}},
	"crypto.keyExport": {4, false, func(ctx context.Context, a []string) ([]byte, error) {
		k, err := keyArg(ctx, a[0], a[1], func(c keyCost) uint64 { return c.record })
		if err != nil {
			return nil, err
		}
		return exportKey(k, a[2], a[3])
	}},
	"crypto.keyGenerate": {2, true, func(ctx context.Context, a []string) ([]byte, error) {
		k, err := generateKeyPair(ctx, a[0], []byte(a[1]))
		if err != nil {
			return nil, err
		}
		if err := spend(ctx, costOfKey(k).record); err != nil {
			return nil, err
		}
		priv, err := k.record()
		if err != nil {
			return nil, err
		}
		pub, err := k.public().record()
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]keyRecord{"private": priv, "public": pub})
	}},
	"crypto.keyRawPublic": {3, true, func(ctx context.Context, a []string) ([]byte, error) {
		raw, err := latin1Bytes(a[2])
		if err != nil {
			return nil, err
		}
		k, err := rawPublicKey(a[0], a[1], raw)
		if err != nil {
			return nil, err
		}
		if err := spendKey(ctx, k, costOfKey(k).record); err != nil {
			return nil, err
		}
		return k.recordJSON()
	}},
	"crypto.keyRawPrivate": {3, true, func(ctx context.Context, a []string) ([]byte, error) {
		raw, err := latin1Bytes(a[2])
		if err != nil {
			return nil, err
		}
		k, err := rawPrivateKey(a[0], a[1], raw)
		if err != nil {
			return nil, err
		}
		if err := spendKey(ctx, k, costOfKey(k).record); err != nil {
			return nil, err
		}
		return k.recordJSON()
	}},
	"crypto.keyToRaw": {3, false, func(ctx context.Context, a []string) ([]byte, error) {
		k, err := keyArg(ctx, a[0], a[1], nil)
		if err != nil {
			return nil, err
		}
		return k.rawPublic(a[2] == "1")
	}},
	"crypto.sign": {6, false, func(ctx context.Context, a []string) ([]byte, error) {
		data, err := latin1Bytes(a[5])
		if err != nil {
			return nil, err
		}
		o := signOptions{hash: a[1], padding: a[2], salt: a[3], dsaEncoding: a[4]}
		k, err := keyArg(ctx, "private", a[0], func(c keyCost) uint64 { return c.sign + o.messageCost(c, len(data)) })
		if err != nil {
			return nil, err
		}
		return sign(ctx, k, o, data)
	}},
	"crypto.verify": {8, false, func(ctx context.Context, a []string) ([]byte, error) {
		data, err1 := latin1Bytes(a[6])
		sig, err2 := latin1Bytes(a[7])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		o := signOptions{hash: a[2], padding: a[3], salt: a[4], dsaEncoding: a[5]}
		k, err := keyArg(ctx, a[0], a[1], func(c keyCost) uint64 { return c.verify + o.messageCost(c, len(data)) })
		if err != nil {
			return nil, err
		}
		ok, err := verify(k, o, data, sig)
		if err != nil {
			return nil, err
		}
		if ok {
			return []byte("1"), nil
		}
		return []byte("0"), nil
	}},
	"crypto.rsa": {7, false, func(ctx context.Context, a []string) ([]byte, error) {
		// Encrypting with the public key and decrypting with it cost what
		// verifying does, the private key's operations what signing does.
		k, err := keyArg(ctx, a[1], a[2], func(c keyCost) uint64 {
			if strings.HasPrefix(a[0], "public") {
				return c.verify
			}
			return c.sign
		})
		if err != nil {
			return nil, err
		}
		label, err1 := latin1Bytes(a[5])
		data, err2 := latin1Bytes(a[6])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return rsaCrypt(ctx, a[0], k, a[3], a[4], label, data)
	}},
	"crypto.derive": {3, false, func(ctx context.Context, a []string) ([]byte, error) {
		priv, err := keyArg(ctx, "private", a[0], func(c keyCost) uint64 { return c.derive })
		if err != nil {
			return nil, err
		}
		pub, err := keyArg(ctx, a[1], a[2], nil)
		if err != nil {
			return nil, err
		}
		return derive(priv, pub)
	}},
	"crypto.pbkdf2": {5, false, func(ctx context.Context, a []string) ([]byte, error) {
		h, err := hashFunc(a[0])
		if err != nil {
			return nil, err
		}
		password, err1 := latin1Bytes(a[1])
		salt, err2 := latin1Bytes(a[2])
		iter, err3 := strconv.Atoi(a[3])
		keyLen, err4 := strconv.Atoi(a[4])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		if iter < 1 || iter > math.MaxInt32 || keyLen < 0 || keyLen > math.MaxInt32 {
			return nil, fmt.Errorf("pbkdf2: %d iterations of a %d-byte key: Node takes 1 to 2^31-1 iterations and 0 to 2^31-1 bytes", iter, keyLen)
		}
		if keyLen > maxDerivedKey {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf(
				"wasmgate derives keys of at most %d MiB a call (the most a host call hands back): keylen is %d", maxDerivedKey>>20, keyLen)}
		}
		if keyLen == 0 {
			return nil, nil
		}
		return pbkdf2Key(ctx, a[0], h, password, salt, iter, keyLen)
	}},
	"crypto.hkdf": {5, false, func(ctx context.Context, a []string) ([]byte, error) {
		h, err := hashFunc(a[0])
		if err != nil {
			return nil, err
		}
		ikm, err1 := latin1Bytes(a[1])
		salt, err2 := latin1Bytes(a[2])
		info, err3 := latin1Bytes(a[3])
		keyLen, err4 := strconv.Atoi(a[4])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		if keyLen > 255*h().Size() || keyLen < 0 {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_KEYLEN", "Invalid key length"}
		}
		if keyLen == 0 {
			return nil, nil
		}
		// An extraction, then an HMAC (reset, not made anew) for each
		// block of the key.
		c, blocks := costOfHash(a[0]), (keyLen+h().Size()-1)/h().Size()
		cost := c.hmac + c.digest(len(ikm)+len(salt)) + uint64(blocks)*(c.iteration+perKiB(c.kib, len(info)))
		if err := spend(ctx, cost); err != nil {
			return nil, err
		}
		return hkdf.Key(h, ikm, salt, string(info), keyLen)
	}},
	"crypto.scrypt": {7, false, func(ctx context.Context, a []string) ([]byte, error) {
		password, err1 := latin1Bytes(a[0])
		salt, err2 := latin1Bytes(a[1])
		var n [5]uint64
		errs := []error{err1, err2}
		for i := range n {
			var err error
			n[i], err = strconv.ParseUint(a[2+i], 10, 53)
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		N, r, p, keyLen, maxmem := n[0], n[1], n[2], n[3], n[4]
		// Node's rule: 128·N·r bytes must fit maxmem (32 MiB by default).
		invalid := &cryptoError{"ERR_CRYPTO_INVALID_SCRYPT_PARAMS", "Invalid scrypt params: error:030000AC:digital envelope routines::memory limit exceeded"}
		if N < 2 || N&(N-1) != 0 || r == 0 || p == 0 || r*p >= 1<<30 || N > 1<<40 || 128*N*r > maxmem {
			return nil, invalid
		}
		if 128*N*r > maxScryptMemory || 128*N*r*p > maxScryptWork {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf(
				"wasmgate computes scrypt with at most %d MiB of memory (128·N·r) and %d MiB of work (128·N·r·p) a call: N=%d r=%d p=%d asked",
				maxScryptMemory>>20, maxScryptWork>>20, N, r, p)}
		}
		if keyLen > maxDerivedKey {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf(
				"wasmgate derives keys of at most %d MiB a call (the most a host call hands back): keylen is %d", maxDerivedKey>>20, keyLen)}
		}
		// scrypt cannot be stopped midway: it is paid for before it runs,
		// and its work is bounded (above) so that it ends soon after a
		// deadline.
		if err := spend(ctx, perKiB(scryptWorkPerKiB, int(128*N*r*p))+perKiB(scryptKeyPerKiB, int(keyLen))); err != nil {
			return nil, err
		}
		return scrypt.Key(password, salt, int(N), int(r), int(p), int(keyLen))
	}},
	"crypto.blocks": {6, false, func(ctx context.Context, a []string) ([]byte, error) {
		key, err1 := latin1Bytes(a[3])
		iv, err2 := latin1Bytes(a[4])
		data, err3 := latin1Bytes(a[5])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		if err := spend(ctx, costOfCipher(a[0]+"-"+a[1], len(data))); err != nil {
			return nil, err
		}
		return cryptBlocks(a[0], a[1], a[2] == "encrypt", key, iv, data)
	}},
	"crypto.stream": {7, false, func(ctx context.Context, a []string) ([]byte, error) {
		key, err1 := latin1Bytes(a[2])
		iv, err2 := latin1Bytes(a[3])
		state, err3 := latin1Bytes(a[4])
		data, err4 := latin1Bytes(a[5])
		bits, err5 := strconv.Atoi(a[6])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, err
		}
		if bits < 1 || bits > 128 {
			return nil, fmt.Errorf("stream: a counter of %d bits", bits)
		}
		if err := spend(ctx, costOfCipher(a[0], len(data))); err != nil {
			return nil, err
		}
		return streamCrypt(a[0], a[1] == "encrypt", key, iv, string(state), data, bits)
	}},
	"crypto.aeadTag": {5, false, func(ctx context.Context, a []string) ([]byte, error) {
		key, err1 := latin1Bytes(a[1])
		iv, err2 := latin1Bytes(a[2])
		aad, err3 := latin1Bytes(a[3])
		plaintext, err4 := latin1Bytes(a[4])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		if err := spend(ctx, costOfCipher("tag-"+a[0], len(aad)+len(plaintext))); err != nil {
			return nil, err
		}
		return aeadTag(a[0], key, iv, aad, plaintext)
	}},
	"crypto.keyWrap": {4, false, func(ctx context.Context, a []string) ([]byte, error) {
		key, err1 := latin1Bytes(a[1])
		iv, err2 := latin1Bytes(a[2])
		data, err3 := latin1Bytes(a[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		if err := spend(ctx, costOfCipher("keywrap", len(data))); err != nil {
			return nil, err
		}
		return keyWrap(a[0] == "encrypt", key, iv, data)
	}},
}

// Bounds on one call's host work that fuel does not bound. scrypt's
// memory is the host's, outside the guest's memory_pages, and scrypt
// cannot be stopped midway, so its work is bounded too (256 MiB takes
// about a second): each bound is far above what real code asks (scrypt's
// usual N=16384, r=8 takes 16 MiB). A derived key is bounded by what one
// host call hands back (maxState).
const (
	maxScryptMemory = 64 << 20
	maxScryptWork   = 256 << 20
	maxDerivedKey   = maxState
)

// runCryptoOp runs the crypto operation op, if there is one of that name.
func runCryptoOp(ctx context.Context, op string, args []string) (string, bool, error) {
	c, ok := cryptoOps[op]
	if !ok {
		return "", false, nil
	}
	if len(args) != c.args {
		return "", true, fmt.Errorf("%s: want %d arguments, got %d", op, c.args, len(args))
	}
	out, err := c.run(ctx, args)
	if err != nil {
		return "", true, err
	}
	if c.text {
		return string(out), true, nil
	}
	return latin1String(out), true, nil
}

// keyArg parses a key record's DER (typ "private" is PKCS #8, "public"
// SPKI) and charges reading it, and what work (nil: none) says the
// operation about to use it costs.
func keyArg(ctx context.Context, typ, der string, work func(keyCost) uint64) (*asymKey, error) {
	b, err := latin1Bytes(der)
	if err != nil {
		return nil, err
	}
	var k *asymKey
	switch typ {
	case "private":
		k, err = parsePKCS8(b)
	case "public":
		k, err = parseSPKI(b)
	default:
		return nil, fmt.Errorf("unknown key type %q", typ)
	}
	if err != nil {
		return nil, err
	}
	var ns uint64
	if work != nil {
		ns = work(costOfKey(k))
	}
	return k, spendKey(ctx, k, ns)
}

// spendKey charges reading k (a private key costs more: it is checked)
// and ns more.
func spendKey(ctx context.Context, k *asymKey, ns uint64) error {
	c := costOfKey(k)
	if k.priv != nil {
		return spend(ctx, c.parsePrivate+ns)
	}
	return spend(ctx, c.parsePublic+ns)
}

func (k *asymKey) recordJSON() ([]byte, error) {
	r, err := k.record()
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// signatureHash is the crypto.Hash Node's digest name stands for.
func signatureHash(name string) (crypto.Hash, error) {
	h, ok := hashNames[strings.ToLower(name)]
	if !ok {
		return 0, &cryptoError{"ERR_CRYPTO_INVALID_DIGEST", "Invalid digest: " + name}
	}
	return h, nil
}

// hashFunc is the constructor of the hash Node names name.
func hashFunc(name string) (func() hash.Hash, error) {
	if _, err := newHash(name); err != nil {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_DIGEST", "Invalid digest: " + name}
	}
	return func() hash.Hash { h, _ := newHash(name); return h }, nil
}

// signOptions are a signature's parameters as Node takes them: hash ""
// is the key's default (SHA-256; none for Ed25519), padding "pkcs1" or
// "pss", salt the PSS salt length (Node's -1 for the digest's size, -2 for
// the largest; "" for the default), dsaEncoding "der" or "ieee-p1363".
type signOptions struct {
	hash, padding, salt, dsaEncoding string
}

func (o signOptions) digest(k *asymKey, data []byte) (crypto.Hash, []byte, error) {
	name := o.hash
	if name == "" {
		name = "sha256"
		if k.pss != nil {
			name = k.pss.hash
		}
	}
	h, err := signatureHash(name)
	if err != nil {
		return 0, nil, err
	}
	w := h.New()
	w.Write(data)
	return h, w.Sum(nil), nil
}

// pssSalt is the salt length for rsa.PSSOptions: the option's, else the
// key's own, else Node's default (-2, RSA_PSS_SALTLEN_AUTO: the largest
// when signing, whatever the signature has when verifying, as Go's
// PSSSaltLengthAuto does).
func (o signOptions) pssSalt(k *asymKey) (int, error) {
	n := -2
	if o.salt != "" {
		var err error
		if n, err = strconv.Atoi(o.salt); err != nil {
			return 0, err
		}
	} else if k.pss != nil {
		n = k.pss.saltLength
	}
	switch {
	case n == -1:
		return rsa.PSSSaltLengthEqualsHash, nil
	case n == -2:
		return rsa.PSSSaltLengthAuto, nil
	case n == 0:
		return 0, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", "wasmgate's crypto (Go's crypto/rsa) cannot make or check RSA-PSS signatures with an empty salt"}
	case n < 0:
		return 0, &cryptoError{"ERR_OSSL_RSA_INVALID_SALT_LENGTH", "error:1C80006A:Provider routines::invalid salt length"}
	}
	return n, nil
}

// messageCost is what hashing n bytes of a message to sign or verify
// with a key of cost c costs: the digest's, or, for a key that hashes the
// message itself (Ed25519), its own.
func (o signOptions) messageCost(c keyCost, n int) uint64 {
	if c.kib != 0 {
		return perKiB(c.kib, n)
	}
	name := o.hash
	if name == "" {
		name = "sha256"
	}
	return costOfHash(name).digest(n)
}

func (o signOptions) usePSS(k *asymKey) bool { return o.padding == "pss" || k.kty == "rsa-pss" }

// streamReader reads the execution's crypto stream.
type streamReader struct{ s *host.Session }

func (r streamReader) Read(p []byte) (int, error) {
	r.s.CryptoRandom(p)
	return len(p), nil
}

func sign(ctx context.Context, k *asymKey, o signOptions, data []byte) ([]byte, error) {
	switch priv := k.priv.(type) {
	case ed25519.PrivateKey:
		if o.hash != "" {
			return nil, &cryptoError{"ERR_OSSL_EVP_OPERATION_NOT_SUPPORTED_FOR_THIS_KEYTYPE", "error:1C8000AE:Provider routines::operation not supported for this keytype"}
		}
		return ed25519.Sign(priv, data), nil
	case *rsa.PrivateKey:
		h, digest, err := o.digest(k, data)
		if err != nil {
			return nil, err
		}
		if o.usePSS(k) {
			salt, err := o.pssSalt(k)
			if err != nil {
				return nil, err
			}
			return rsa.SignPSS(streamReader{host.SessionFrom(ctx)}, priv, h, digest, &rsa.PSSOptions{SaltLength: salt})
		}
		return rsa.SignPKCS1v15(nil, priv, h, digest)
	case *ecdsa.PrivateKey:
		h, digest, err := o.digest(k, data)
		if err != nil {
			return nil, err
		}
		// A nil reader asks for RFC 6979's deterministic nonce.
		der, err := priv.Sign(nil, digest, h)
		if err != nil {
			return nil, err
		}
		if o.dsaEncoding == "ieee-p1363" {
			return p1363FromDER(der, (priv.Curve.Params().N.BitLen()+7)/8)
		}
		return der, nil
	}
	return nil, &cryptoError{"ERR_OSSL_EVP_OPERATION_NOT_SUPPORTED_FOR_THIS_KEYTYPE", "error:1C8000AE:Provider routines::operation not supported for this keytype"}
}

func verify(k *asymKey, o signOptions, data, sig []byte) (bool, error) {
	switch pub := k.pub.(type) {
	case ed25519.PublicKey:
		if o.hash != "" {
			return false, &cryptoError{"ERR_OSSL_EVP_OPERATION_NOT_SUPPORTED_FOR_THIS_KEYTYPE", "error:1C8000AE:Provider routines::operation not supported for this keytype"}
		}
		return ed25519.Verify(pub, data, sig), nil
	case *rsa.PublicKey:
		h, digest, err := o.digest(k, data)
		if err != nil {
			return false, err
		}
		if o.usePSS(k) {
			salt, err := o.pssSalt(k)
			if err != nil {
				return false, err
			}
			return rsa.VerifyPSS(pub, h, digest, sig, &rsa.PSSOptions{SaltLength: salt}) == nil, nil
		}
		return rsa.VerifyPKCS1v15(pub, h, digest, sig) == nil, nil
	case *ecdsa.PublicKey:
		_, digest, err := o.digest(k, data)
		if err != nil {
			return false, err
		}
		if o.dsaEncoding == "ieee-p1363" {
			size := (pub.Curve.Params().N.BitLen() + 7) / 8
			if len(sig) != 2*size {
				return false, nil
			}
			if sig, err = derFromP1363(sig); err != nil {
				return false, nil
			}
		}
		return ecdsa.VerifyASN1(pub, digest, sig), nil
	}
	return false, &cryptoError{"ERR_OSSL_EVP_OPERATION_NOT_SUPPORTED_FOR_THIS_KEYTYPE", "error:1C8000AE:Provider routines::operation not supported for this keytype"}
}

// p1363FromDER turns an ASN.1 ECDSA signature into r || s, each size
// bytes (IEEE P1363, Web Crypto's form).
func p1363FromDER(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &sig); err != nil {
		return nil, err
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}

// derFromP1363 is the inverse of p1363FromDER.
func derFromP1363(sig []byte) ([]byte, error) {
	half := len(sig) / 2
	return asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig[:half]), new(big.Int).SetBytes(sig[half:])})
}

// rsaCrypt is publicEncrypt, privateDecrypt, privateEncrypt and
// publicDecrypt: padding "oaep" (with oaepHash for both the label hash and
// MGF1, as Node sets them) or "pkcs1".
func rsaCrypt(ctx context.Context, op string, k *asymKey, padding, oaepHash string, label, data []byte) ([]byte, error) {
	pub, ok := k.pub.(*rsa.PublicKey)
	if !ok {
		return nil, &cryptoError{"ERR_OSSL_EVP_OPERATION_NOT_SUPPORTED_FOR_THIS_KEYTYPE", "error:1C8000AE:Provider routines::operation not supported for this keytype"}
	}
	tooLarge := &cryptoError{"ERR_OSSL_RSA_DATA_TOO_LARGE_FOR_KEY_SIZE", "error:0200006E:rsa routines::data too large for key size"}
	switch {
	case op == "publicEncrypt" && padding == "oaep":
		h, err := signatureHash(oaepHash)
		if err != nil {
			return nil, err
		}
		out, err := rsa.EncryptOAEPWithOptions(streamReader{host.SessionFrom(ctx)}, pub, data, &rsa.OAEPOptions{Hash: h, MGFHash: h, Label: label})
		if errors.Is(err, rsa.ErrMessageTooLong) {
			return nil, tooLarge
		}
		return out, err
	case op == "privateDecrypt" && padding == "oaep":
		h, err := signatureHash(oaepHash)
		if err != nil {
			return nil, err
		}
		out, err := k.priv.(*rsa.PrivateKey).Decrypt(nil, data, &rsa.OAEPOptions{Hash: h, MGFHash: h, Label: label})
		if err != nil {
			return nil, &cryptoError{"ERR_OSSL_RSA_OAEP_DECODING_ERROR", "error:02000079:rsa routines::oaep decoding error"}
		}
		return out, nil
	case op == "publicEncrypt" && padding == "pkcs1":
		// Go 1.26's EncryptPKCS1v15 reads crypto/rand whatever reader it
		// is given, so the padding (RFC 8017 7.2.1: 00 02, nonzero
		// random bytes, 00, the message) is made here from the stream.
		size := pub.Size()
		if len(data) > size-11 {
			return nil, tooLarge
		}
		em := make([]byte, size)
		em[1] = 2
		ps := em[2 : size-len(data)-1]
		s := host.SessionFrom(ctx)
		s.CryptoRandom(ps)
		for i := range ps {
			for ps[i] == 0 {
				s.CryptoRandom(ps[i : i+1])
			}
		}
		copy(em[size-len(data):], data)
		return rsaPublicOp(pub, em)
	case op == "privateEncrypt" && padding == "pkcs1":
		// A PKCS #1 v1.5 signature of data itself (hash 0) is exactly
		// the type 1 padding privateEncrypt applies.
		out, err := rsa.SignPKCS1v15(nil, k.priv.(*rsa.PrivateKey), 0, data)
		if err != nil {
			return nil, &cryptoError{"ERR_OSSL_RSA_DATA_TOO_LARGE_FOR_KEY_SIZE", "error:0200006E:rsa routines::data too large for key size"}
		}
		return out, nil
	case op == "publicDecrypt" && padding == "pkcs1":
		em, err := rsaPublicOp(pub, data)
		if err != nil {
			return nil, err
		}
		// 00 01 FF… 00 data
		bad := &cryptoError{"ERR_OSSL_RSA_PADDING_CHECK_FAILED", "error:02000072:rsa routines::padding check failed"}
		if len(em) < 11 || em[0] != 0 || em[1] != 1 {
			return nil, bad
		}
		i := 2
		for i < len(em) && em[i] == 0xff {
			i++
		}
		if i < 10 || i == len(em) || em[i] != 0 {
			return nil, bad
		}
		return em[i+1:], nil
	}
	return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf("wasmgate's crypto has no %s with %s padding (it has OAEP and PKCS #1 v1.5)", op, padding)}
}

// rsaPublicOp is the raw RSA public operation (m^e mod n) on a
// size-byte block: it involves no secret.
func rsaPublicOp(pub *rsa.PublicKey, block []byte) ([]byte, error) {
	size := pub.Size()
	m := new(big.Int).SetBytes(block)
	if len(block) != size || m.Cmp(pub.N) >= 0 {
		return nil, &cryptoError{"ERR_OSSL_RSA_DATA_TOO_LARGE_FOR_MODULUS", "error:02000084:rsa routines::data too large for modulus"}
	}
	c := new(big.Int).Exp(m, big.NewInt(int64(pub.E)), pub.N)
	return c.FillBytes(make([]byte, size)), nil
}

// derive is ECDH (P-256/384/521) or X25519 between a private key and a
// public one.
func derive(priv, pub *asymKey) ([]byte, error) {
	if priv.kty != pub.kty {
		return nil, &cryptoError{"ERR_CRYPTO_INCOMPATIBLE_KEY", fmt.Sprintf("Incompatible key types for Diffie-Hellman: %s and %s", priv.kty, pub.kty)}
	}
	var mine *ecdh.PrivateKey
	var theirs *ecdh.PublicKey
	var err1, err2 error
	switch k := priv.priv.(type) {
	case *ecdsa.PrivateKey:
		mine, err1 = k.ECDH()
		theirs, err2 = pub.pub.(*ecdsa.PublicKey).ECDH()
	case *ecdh.PrivateKey:
		mine, theirs = k, pub.pub.(*ecdh.PublicKey)
	default:
		return nil, &cryptoError{"ERR_CRYPTO_INCOMPATIBLE_KEY", "Incompatible key types for Diffie-Hellman: " + priv.kty}
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if mine.Curve() != theirs.Curve() {
		return nil, &cryptoError{"ERR_CRYPTO_INCOMPATIBLE_KEY", "Incompatible key types for Diffie-Hellman: the keys are on different curves"}
	}
	secret, err := mine.ECDH(theirs)
	if err != nil {
		return nil, &cryptoError{"ERR_CRYPTO_OPERATION_FAILED", "Failed to derive the shared secret: " + err.Error()}
	}
	return secret, nil
}

// pbkdf2Chunk is how many PBKDF2 iterations are paid for at a time: about
// a millisecond of the slowest hash's.
const pbkdf2Chunk = 1024

// pbkdf2Key is PBKDF2 (RFC 8018, section 5.2) with HMAC over h, the hash
// Node names alg: each block of the key is the XOR of iter chained HMACs
// of the salt and the block's number. The iterations are paid for as they
// run, a chunk at a time, and the derivation stops when the budget or the
// execution's time is spent: their number is the caller's choice, up to
// 2^31-1 a block.
func pbkdf2Key(ctx context.Context, alg string, h func() hash.Hash, password, salt []byte, iter, keyLen int) ([]byte, error) {
	iteration := costOfHash(alg).iteration
	prf := hmac.New(h, password)
	size := prf.Size()
	key := make([]byte, 0, min(keyLen+size, 1<<20))
	u := make([]byte, 0, size)
	t := make([]byte, size)
	var counter [4]byte
	for block := uint32(1); len(key) < keyLen; block++ {
		binary.BigEndian.PutUint32(counter[:], block)
		for done := 0; done < iter; {
			n := min(iter-done, pbkdf2Chunk)
			if err := spend(ctx, uint64(n)*iteration); err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("PBKDF2 stopped: %w", err)
			}
			for j := done; j < done+n; j++ {
				prf.Reset()
				if j == 0 {
					prf.Write(salt)
					prf.Write(counter[:])
					u = prf.Sum(u[:0])
					copy(t, u)
					continue
				}
				prf.Write(u)
				u = prf.Sum(u[:0])
				subtle.XORBytes(t, t, u)
			}
			done += n
		}
		key = append(key, t...)
	}
	return key[:keyLen], nil
}
