package jshost

import (
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"github.com/wasmgate/wasmgate/internal/host"
	"math"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// Work the host does for a JS tool (the Node built-ins' crypto, Intl's
// collation, the bytes crossing the bridge) is charged to the tool's fuel
// (Session.Charge) at a price fixed in advance: a pure function of what the
// work was (bytes hashed, iterations run, candidates tested, the key's
// size), never of how long it took, so that fuel_used stays the same on
// every engine, run and machine.
//
// The prices are the host's CPU time for the work on the project's 2-core
// VM (BenchmarkHostWork, which reports what each operation costs against
// the thread CPU time it takes; docs/BENCHMARKS.md), in nanoseconds, times
// hostFuelPerNs. That rate is twice what the JS engine's fastest code
// burns on a quiet machine (an integer loop spends about 6 billion units a
// second), so a tool pays for a millisecond of host work at least what a
// millisecond of its own code costs, and the fuel that stops its own code
// before the clock stops its host work first too. Operations whose work its arguments choose without
// bound (PBKDF2's iterations, the candidates of an RSA key search) charge
// as they go and stop when the budget is spent.

// hostFuelPerNs is the fuel a nanosecond of host CPU costs (see above).
const hostFuelPerNs = 12

// errHostWorkStopped is what a host operation returns when the budget
// cannot pay for it. The tool never sees it: the budget is spent, so the
// engine traps at its next instruction block (FUEL_EXHAUSTED), or the host
// has stopped the execution (its deadline).
const errHostWorkStopped = sentinel.Error("host: the work was stopped: the execution's fuel is spent, or its time is up")

// spend charges ns nanoseconds of host work to the execution, before the
// work is done.
func spend(ctx context.Context, ns uint64) error {
	fuel := uint64(math.MaxUint64)
	if ns <= math.MaxUint64/hostFuelPerNs {
		fuel = ns * hostFuelPerNs
	}
	if !host.SessionFrom(ctx).Charge(fuel) {
		return errHostWorkStopped
	}
	return nil
}

// perKiB is the cost of n bytes at nsPerKiB nanoseconds a KiB.
func perKiB(nsPerKiB uint64, n int) uint64 { return nsPerKiB * uint64(n) / 1024 }

// Crossing the bridge: decoding the latin1 strings a call hands over (per
// byte of their UTF-8) and encoding its result.
const (
	bridgeInPerKiB  = 1_500
	bridgeOutPerKiB = 3_400
)

// bridgeCost is what handing over args costs.
func bridgeCost(args []string) uint64 {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return perKiB(bridgeInPerKiB, n)
}

// hashCost is what a hash costs: a call (making its state, the final
// block), a KiB of data, an HMAC's key set-up and extra blocks over the
// hash, and one PBKDF2 iteration (an HMAC of one digest).
type hashCost struct{ call, kib, hmac, iteration uint64 }

var hashCosts = map[crypto.Hash]hashCost{
	crypto.MD5:        {210, 1_540, 660, 280},
	crypto.SHA1:       {180, 620, 560, 220},
	crypto.SHA224:     {200, 720, 530, 200},
	crypto.SHA256:     {200, 720, 530, 200},
	crypto.SHA384:     {410, 1_850, 1_400, 680},
	crypto.SHA512:     {410, 1_850, 1_400, 680},
	crypto.SHA512_224: {410, 1_850, 1_400, 680},
	crypto.SHA512_256: {410, 1_850, 1_400, 680},
	crypto.SHA3_224:   {700, 3_200, 1_950, 1_250},
	crypto.SHA3_256:   {700, 3_400, 1_950, 1_250},
	crypto.SHA3_384:   {940, 5_200, 2_550, 1_550},
	crypto.SHA3_512:   {940, 7_400, 2_550, 1_550},
}

// costOfHash is the cost of the hash Node names alg (the most expensive
// one when the name is unknown: the call fails anyway).
func costOfHash(alg string) hashCost {
	if h, ok := hashNames[strings.ToLower(alg)]; ok {
		return hashCosts[h]
	}
	return hashCosts[crypto.SHA3_512]
}

func (c hashCost) digest(n int) uint64 { return c.call + perKiB(c.kib, n) }

// randomPerKiB is the execution's crypto stream (a BLAKE3 XOF).
const randomPerKiB = 1_250

// scrypt: a KiB of its work (128·N·r·p bytes mixed), and a KiB of the key
// derived from the result (PBKDF2-HMAC-SHA256 with one iteration).
const (
	scryptWorkPerKiB = 3_000
	scryptKeyPerKiB  = 11_000
)

// cipherCost is a cipher mode's key schedule and set-up, and a KiB of data.
type cipherCost struct{ call, kib uint64 }

var cipherCosts = map[string]cipherCost{
	"aes-cbc":               {600, 2_300},
	"aes-ecb":               {350, 1_850},
	"des-ede3-cbc":          {6_200, 41_000},
	"des-ede3-ecb":          {6_200, 41_000},
	"ctr":                   {510, 4_400},
	"gcm":                   {510, 4_500},
	"cfb":                   {560, 4_700},
	"cfb8":                  {1_030, 29_600},
	"ofb":                   {570, 4_400},
	"chacha20":              {270, 3_000},
	"chacha20-poly1305":     {270, 3_000},
	"tag-gcm":               {800, 750},
	"tag-chacha20-poly1305": {300, 820},
	"keywrap":               {770, 25_800},
}

func costOfCipher(name string, n int) uint64 {
	c := cipherCosts[name]
	return c.call + perKiB(c.kib, n)
}

// Intl.Collator's comparisons: a call and a KiB of the two strings, for
// the plain collators and for those that compare twice or three times
// (sensitivity "case", caseFirst "upper", ignorePunctuation); and making a
// collator, charged at its first use in an execution whatever the host's
// cache holds, so that the price does not depend on what other executions
// did.
const (
	collateCall         = 100
	collatePerKiB       = 60_000
	collateExtraCall    = 3_400
	collateExtraPerKiB  = 300_000
	collatorFirstUse    = 16_000
	collatorFirstUseKey = "intl.collator "
)

// keyCost is what a key's operations cost: reading it (a private key is
// checked: Go derives its public half, and an RSA key's CRT values, and
// compares), encoding its records (both halves' DER and details), signing,
// verifying, deriving a shared secret, and making one (RSA's search is
// charged as it goes: rsaSearchCost). sign and verify exclude the hash
// of the message, but for Ed25519, which hashes the message itself: kib.
type keyCost struct {
	parsePrivate, parsePublic, record uint64
	sign, verify, derive, generate    uint64
	kib                               uint64
}

// ecCosts are the EC curves' and OKP keys' costs.
var ecCosts = map[string]keyCost{
	"P-256":   {parsePrivate: 24_000, parsePublic: 2_900, record: 12_400, sign: 55_000, verify: 100_000, derive: 110_000, generate: 30_000},
	"P-384":   {parsePrivate: 208_000, parsePublic: 5_300, record: 16_200, sign: 520_000, verify: 1_140_000, derive: 1_050_000, generate: 250_000},
	"P-521":   {parsePrivate: 775_000, parsePublic: 6_800, record: 19_300, sign: 1_800_000, verify: 4_330_000, derive: 2_850_000, generate: 850_000},
	"ed25519": {parsePrivate: 32_000, parsePublic: 2_200, record: 10_000, sign: 40_000, verify: 79_000, generate: 25_000, kib: 4_600},
	"x25519":  {parsePrivate: 69_000, parsePublic: 2_200, record: 10_000, derive: 70_000, generate: 75_000},
}

// rsaCost is what an RSA key of bits bits costs; mr is one Miller-Rabin
// round on a prime candidate of half its size, finish the key's
// completion after the search (its CRT values and Validate).
type rsaCost struct {
	bits int
	keyCost
	mr, finish uint64
}

// rsaCosts are measured sizes; others are interpolated (costOfRSA).
var rsaCosts = []rsaCost{
	{1024, keyCost{parsePrivate: 64_000, parsePublic: 3_200, record: 26_000, sign: 631_000, verify: 14_500}, 187_000, 285_000},
	{2048, keyCost{parsePrivate: 250_000, parsePublic: 3_200, record: 29_500, sign: 1_700_000, verify: 58_000}, 740_000, 760_000},
	{3072, keyCost{parsePrivate: 431_000, parsePublic: 3_200, record: 37_000, sign: 3_561_000, verify: 218_000}, 2_500_000, 3_020_000},
	{4096, keyCost{parsePrivate: 850_000, parsePublic: 3_900, record: 69_000, sign: 10_577_000, verify: 584_000}, 4_800_000, 4_689_000},
	{8192, keyCost{parsePrivate: 2_961_000, parsePublic: 3_900, record: 90_000, sign: 171_772_000, verify: 1_526_000}, 34_700_000, 91_848_000},
}

// costOfRSA interpolates rsaCosts linearly between the sizes measured;
// beyond the largest, the costs that grow with the size grow with its
// cube, as schoolbook modular arithmetic does.
func costOfRSA(bits int) rsaCost {
	first, last := rsaCosts[0], rsaCosts[len(rsaCosts)-1]
	switch {
	case bits <= first.bits:
		return first
	case bits >= last.bits:
		f := func(v uint64) uint64 {
			r := float64(bits) / float64(last.bits)
			return uint64(math.Min(float64(v)*r*r*r, math.MaxUint64/4))
		}
		c := last
		c.bits = bits
		c.parsePrivate, c.sign, c.verify, c.mr, c.finish = f(c.parsePrivate), f(c.sign), f(c.verify), f(c.mr), f(c.finish)
		return c
	}
	i := 1
	for rsaCosts[i].bits < bits {
		i++
	}
	lo, hi := rsaCosts[i-1], rsaCosts[i]
	at := func(a, b uint64) uint64 {
		return a + (b-a)*uint64(bits-lo.bits)/uint64(hi.bits-lo.bits)
	}
	return rsaCost{bits, keyCost{
		parsePrivate: at(lo.parsePrivate, hi.parsePrivate), parsePublic: at(lo.parsePublic, hi.parsePublic),
		record: at(lo.record, hi.record), sign: at(lo.sign, hi.sign), verify: at(lo.verify, hi.verify),
	}, at(lo.mr, hi.mr), at(lo.finish, hi.finish)}
}

// The RSA key search (randomPrime): dividing a candidate by every sieve
// prime (per sieve prime, growing with the candidate's size), and one step
// of the sieve (one residue checked).
const (
	rsaResidueNs    = 150
	rsaResiduePer64 = 13 // ns per 64 bits of the candidate, per sieve prime
	rsaSieveCheckNs = 2
)

func rsaResiduesCost(bits int) uint64 {
	return uint64(len(sievePrimes)) * (rsaResidueNs + rsaResiduePer64*uint64(bits)/64)
}

// costOfKey is what k's operations cost.
func costOfKey(k *asymKey) keyCost {
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		return costOfRSA(pub.N.BitLen()).keyCost
	case *ecdsa.PublicKey:
		return ecCosts[pub.Curve.Params().Name]
	case ed25519.PublicKey:
		return ecCosts["ed25519"]
	case *ecdh.PublicKey:
		return ecCosts["x25519"] // the only ecdh keys asymKey holds
	}
	// A key of no kind above cannot be used: the call fails.
	return keyCost{}
}
