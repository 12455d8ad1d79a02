package jshost

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"github.com/wasmgate/wasmgate/internal/host"
	"math/big"
)

// Key generation from the execution's crypto stream. Go 1.26 ignores the
// io.Reader handed to rsa.GenerateKey and ecdsa.GenerateKey (it always
// reads crypto/rand), so the keys are made here from stream bytes with Go's
// own constructors and checks: an EC private key is a scalar drawn from the
// stream until ecdsa.ParseRawPrivateKey accepts it (rejection sampling), an
// Ed25519 or X25519 key is a 32-byte seed, and RSA primes are searched
// from stream bytes and tested by math/big's ProbablyPrime, a deterministic
// test (Miller-Rabin rounds with bases derived from the candidate, and
// Baillie-PSW), before rsa.PrivateKey's Precompute and Validate.

// keygenOptions are generateKeyPair's options the host needs.
type keygenOptions struct {
	ModulusLength     int    `json:"modulusLength"`
	PublicExponent    int    `json:"publicExponent"`
	NamedCurve        string `json:"namedCurve"`
	HashAlgorithm     string `json:"hashAlgorithm"`
	MGF1HashAlgorithm string `json:"mgf1HashAlgorithm"`
	SaltLength        *int   `json:"saltLength"`
}

// Bounds on RSA key generation: Go refuses keys under 1024 bits, and
// 16384 bits is OpenSSL's largest modulus (OPENSSL_RSA_MAX_MODULUS_BITS).
// The search is paid for as it goes, so the budget bounds its time; the
// upper bound bounds its longest step, which cannot be stopped midway (a
// primality test of an 8192-bit prime takes the host about 2 s).
const (
	minRSABits = 1024
	maxRSABits = 16384
)

// generateKeyPair makes a key of kty (rsa, rsa-pss, ec, ed25519, x25519).
func generateKeyPair(ctx context.Context, kty string, options []byte) (*asymKey, error) {
	var o keygenOptions
	if len(options) > 0 {
		if err := json.Unmarshal(options, &o); err != nil {
			return nil, fmt.Errorf("key generation options: %w", err)
		}
	}
	random := host.SessionFrom(ctx).CryptoRandom
	switch kty {
	case "rsa", "rsa-pss":
		if o.ModulusLength < minRSABits || o.ModulusLength > maxRSABits {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf(
				"wasmgate's crypto makes RSA keys of %d to %d bits (Go refuses shorter keys; OpenSSL's longest modulus is 16384 bits): modulusLength is %d",
				minRSABits, maxRSABits, o.ModulusLength)}
		}
		if o.PublicExponent == 0 {
			o.PublicExponent = 65537
		}
		if o.PublicExponent < 3 || o.PublicExponent%2 == 0 {
			return nil, &cryptoError{"ERR_OSSL_BN_BAD_ENCODING", fmt.Sprintf("the public exponent %d is not an odd number above 1", o.PublicExponent)}
		}
		priv, err := generateRSA(ctx, random, o.ModulusLength, o.PublicExponent)
		if err != nil {
			return nil, err
		}
		k := &asymKey{kty: kty, priv: priv, pub: &priv.PublicKey}
		if kty == "rsa-pss" && (o.HashAlgorithm != "" || o.MGF1HashAlgorithm != "" || o.SaltLength != nil) {
			k.pss = &pssParams{hash: o.HashAlgorithm, mgf1: o.MGF1HashAlgorithm}
			if k.pss.hash == "" {
				k.pss.hash = "sha1"
			}
			if k.pss.mgf1 == "" {
				k.pss.mgf1 = k.pss.hash
			}
			for _, h := range []string{k.pss.hash, k.pss.mgf1} {
				if _, ok := hashOIDs[h]; !ok {
					return nil, &cryptoError{"ERR_CRYPTO_INVALID_DIGEST", "Invalid MGF1 digest: " + h}
				}
			}
			if o.SaltLength != nil {
				k.pss.saltLength = *o.SaltLength
			} else {
				h, _ := newHash(k.pss.hash)
				k.pss.saltLength = h.Size()
			}
		}
		return k, nil
	case "ec":
		c, ok := namedCurves[o.NamedCurve]
		if !ok {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_CURVE", "Invalid EC curve name"}
		}
		size := (c.curve.Params().BitSize + 7) / 8
		excess := uint(size*8 - c.curve.Params().BitSize)
		d := make([]byte, size)
		for {
			// Every draw is paid for: a scalar out of range is refused
			// before the multiplication, but the draws are few (P-521's
			// top byte is 1 bit, so the first is nearly always in range).
			if err := spend(ctx, ecCosts[c.curve.Params().Name].generate); err != nil {
				return nil, err
			}
			random(d)
			d[0] &= 0xff >> excess
			if priv, err := ecdsa.ParseRawPrivateKey(c.curve, d); err == nil {
				return newAsymKey(priv)
			}
		}
	case "ed25519", "x25519":
		if err := spend(ctx, ecCosts[kty].generate); err != nil {
			return nil, err
		}
		seed := make([]byte, 32)
		random(seed)
		crv := map[string]string{"ed25519": "Ed25519", "x25519": "X25519"}[kty]
		return rawOKPKey(crv, true, seed)
	}
	return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf(
		"wasmgate's crypto does not make %s keys (it makes rsa, rsa-pss, ec, ed25519 and x25519 keys)", kty)}
}

// generateRSA makes a two-prime RSA key of bits bits and exponent e, as
// FIPS 186-5 B.3.3 asks of probable primes: each prime has its top two
// bits set (so that their product has exactly bits bits), p-1 and q-1 are
// coprime to e, |p-q| > 2^(bits/2-100), and d > 2^(bits/2); d is the
// inverse of e modulo lcm(p-1, q-1), as OpenSSL computes it. The search
// is paid for as it goes (randomPrime), and stops when the budget is spent
// or ctx is done: how many candidates it tests is not known in advance,
// though the same stream always gives the same number.
func generateRSA(ctx context.Context, random func([]byte), bits, e int) (*rsa.PrivateKey, error) {
	one := big.NewInt(1)
	bigE := big.NewInt(int64(e))
	minDiff := new(big.Int).Lsh(one, uint(bits/2-100))
	for {
		p, err := randomPrime(ctx, random, (bits+1)/2, bigE)
		if err != nil {
			return nil, err
		}
		q, err := randomPrime(ctx, random, bits/2, bigE)
		if err != nil {
			return nil, err
		}
		if new(big.Int).Abs(new(big.Int).Sub(p, q)).Cmp(minDiff) <= 0 {
			continue
		}
		if p.Cmp(q) < 0 {
			p, q = q, p
		}
		n := new(big.Int).Mul(p, q)
		if n.BitLen() != bits {
			continue
		}
		p1, q1 := new(big.Int).Sub(p, one), new(big.Int).Sub(q, one)
		gcd := new(big.Int).GCD(nil, nil, p1, q1)
		lambda := new(big.Int).Div(new(big.Int).Mul(p1, q1), gcd)
		d := new(big.Int).ModInverse(bigE, lambda)
		if d == nil || d.BitLen() <= bits/2 {
			continue
		}
		if err := spend(ctx, costOfRSA(bits).finish); err != nil {
			return nil, err
		}
		key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: e}, D: d, Primes: []*big.Int{p, q}}
		key.Precompute()
		if err := key.Validate(); err != nil {
			return nil, fmt.Errorf("the generated RSA key is not valid: %w", err)
		}
		return key, nil
	}
}

// randomPrime finds a bits-bit probable prime p with gcd(p-1, e) = 1 by
// incremental search, as OpenSSL does: from a random odd start with its
// top two bits set, it steps by two past every number a small prime
// divides (kept as residues, so each step costs no big arithmetic), and
// tests the rest with ProbablyPrime. The sieve spares nine in ten of the
// Miller-Rabin tests a plain draw-and-test would run.
//
// Each step is paid for (rsaSearchCost) before the expensive ones run: the
// residues of a start, the sieve's checks, and a Miller-Rabin round before
// each test; a candidate found prime then pays for the rest of its test
// (its other rounds and the Lucas test, about rounds+3 rounds).
func randomPrime(ctx context.Context, random func([]byte), bits int, e *big.Int) (*big.Int, error) {
	b := make([]byte, (bits+7)/8)
	start, p, p1, gcd := new(big.Int), new(big.Int), new(big.Int), new(big.Int)
	one := big.NewInt(1)
	residues := make([]uint32, len(sievePrimes))
	rounds := millerRabinRounds(bits)
	mr := costOfRSA(2 * bits).mr
	for {
		if err := spend(ctx, rsaResiduesCost(bits)); err != nil {
			return nil, err
		}
		random(b)
		start.SetBytes(b)
		for i := bits; i < len(b)*8; i++ {
			start.SetBit(start, i, 0)
		}
		start.SetBit(start, bits-1, 1)
		start.SetBit(start, bits-2, 1)
		start.SetBit(start, 0, 1)
		for i, q := range sievePrimes {
			residues[i] = uint32(new(big.Int).Mod(start, big.NewInt(int64(q))).Uint64())
		}
		// checks counts the sieve's residue checks not yet paid for.
		var checks uint64
	search:
		for delta := uint32(0); delta < 1<<20; delta += 2 {
			for i, q := range sievePrimes {
				checks++
				if (residues[i]+delta)%q == 0 {
					continue search
				}
			}
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("RSA key generation stopped: %w", err)
			}
			p.Add(start, big.NewInt(int64(delta)))
			if p.BitLen() != bits {
				break
			}
			p1.Sub(p, one)
			if gcd.GCD(nil, nil, p1, e).Cmp(one) != 0 {
				continue
			}
			if err := spend(ctx, checks*rsaSieveCheckNs+mr); err != nil {
				return nil, err
			}
			checks = 0
			if p.ProbablyPrime(rounds) {
				if err := spend(ctx, uint64(rounds+3)*mr); err != nil {
					return nil, err
				}
				return new(big.Int).Set(p), nil
			}
		}
		if err := spend(ctx, checks*rsaSieveCheckNs); err != nil {
			return nil, err
		}
	}
}

// millerRabinRounds is how many Miller-Rabin rounds ProbablyPrime runs on
// a bits-bit candidate besides its Baillie-PSW test. FIPS 186-5 table B.1
// asks 4 rounds of RSA primes of 1024 bits for an error below 2^-100 and
// 5 for 2^-112 (fewer for longer primes); this runs 5, and 7 on the 512-bit
// primes of 1024-bit keys, as FIPS 186-4 asked. More would only cost time:
// a round is a modular exponentiation, and Baillie-PSW alone has no known
// pseudoprime.
func millerRabinRounds(bits int) int {
	if bits < 1024 {
		return 7
	}
	return 5
}

// sievePrimes are the odd primes below 2^14.
var sievePrimes = func() []uint32 {
	const limit = 1 << 14
	composite := make([]bool, limit)
	var primes []uint32
	for i := 3; i < limit; i += 2 {
		if composite[i] {
			continue
		}
		primes = append(primes, uint32(i))
		for j := i * i; j < limit; j += 2 * i {
			composite[j] = true
		}
	}
	return primes
}()
