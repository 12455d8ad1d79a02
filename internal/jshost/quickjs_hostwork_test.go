package jshost

import (
	"context"
	"crypto"
	"crypto/pbkdf2"
	"crypto/sha256"
	"github.com/wasmgate/wasmgate/internal/host"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatin1RoundTrips: every byte pair, and random data of odd and even
// lengths, crosses the bridge as the engine encodes latin1 (a character
// per byte, in UTF-8) and back unchanged.
func TestLatin1RoundTrips(t *testing.T) {
	for x := range 256 {
		for y := range 256 {
			b := []byte{byte(x), byte(y)}
			s := latin1String(b)
			require.Equal(t, string(rune(x))+string(rune(y)), s)
			back, err := latin1Bytes(s)
			require.NoError(t, err)
			require.Equal(t, b, back)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		back, err := latin1Bytes(latin1String(b))
		require.NoError(t, err)
		require.Equal(t, b, back, n)
	}
}

// TestLatin1BytesRefusesWhatIsNotAByte names the first character that is
// not a byte (invalid UTF-8 reads as U+FFFD).
func TestLatin1BytesRefusesWhatIsNotAByte(t *testing.T) {
	for in, char := range map[string]string{
		"ab€":       "U+20AC",
		"é𝄞":        "U+1D11E",
		"a\xc3":     "U+FFFD",
		"\x80":      "U+FFFD",
		"\xc3\x28x": "U+FFFD",
		"\xc4\x80":  "U+0100",
		"ok\xc2":    "U+FFFD",
	} {
		_, err := latin1Bytes(in)
		assert.EqualError(t, err, "binary data holds the character "+char+", which is not a byte", "%q", in)
	}
}

// TestPBKDF2MatchesGo: the host's PBKDF2, which pays for its iterations as
// it goes, derives what Go's crypto/pbkdf2 derives, across the chunk
// boundaries and block counts.
func TestPBKDF2MatchesGo(t *testing.T) {
	ctx := cryptoSession(1)
	for _, alg := range []string{"sha1", "sha256", "sha512", "sha3-256"} {
		h, err := hashFunc(alg)
		require.NoError(t, err)
		for _, iter := range []int{1, 2, pbkdf2Chunk - 1, pbkdf2Chunk, pbkdf2Chunk + 1, 2*pbkdf2Chunk + 1} {
			for _, keyLen := range []int{1, 20, 32, 33, 64, 65, 100} {
				got, err := pbkdf2Key(ctx, alg, h, []byte("password"), []byte("salt"), iter, keyLen)
				require.NoError(t, err)
				want, err := pbkdf2.Key(h, "password", []byte("salt"), iter, keyLen)
				require.NoError(t, err)
				require.Equal(t, want, got, "%s, %d iterations, %d bytes", alg, iter, keyLen)
			}
		}
	}
}

// budgetSession is an execution's context whose budget is fuel units, as
// the runtime's meter keeps it: a charge it cannot pay fails and leaves it
// spent. charges counts the charges made.
func budgetSession(seed byte, fuel uint64) (ctx context.Context, left *uint64, charges *int) {
	left, charges = &fuel, new(int)
	sess := host.NewSession(nil, [32]byte{seed}, 1<<20)
	sess.SetFuelCharge(func(n uint64) bool {
		*charges++
		if n > *left {
			*left = 0
			return false
		}
		*left -= n
		return true
	})
	return host.WithSession(context.Background(), sess), left, charges
}

// TestHostWorkPricesAreFixedInAdvance: what an operation is charged is a
// function of what it did, the same on every run, and grows with the work.
func TestHostWorkPricesAreFixedInAdvance(t *testing.T) {
	charged := func(seed byte, args ...string) uint64 {
		ctx, left, _ := budgetSession(seed, 1<<62)
		_, err := nodeOps(ctx, args)
		require.NoError(t, err, args[0])
		return 1<<62 - *left
	}
	data := func(n int) string { return latin1String(make([]byte, n)) }
	// A hash is its bytes handed over, hashed and handed back.
	digest := sha256.Sum256(make([]byte, 4096))
	assert.Equal(t, hostFuelPerNs*(perKiB(bridgeInPerKiB, len("hash")+len("sha256")+4096)+hashCosts[crypto.SHA256].digest(4096)+perKiB(bridgeOutPerKiB, len(latin1String(digest[:])))),
		charged(1, "hash", "sha256", data(4096)))
	assert.Less(t, charged(1, "hash", "sha256", data(1024)), charged(1, "hash", "sha256", data(2048)))
	assert.Less(t, charged(1, "hash", "sha256", data(1024)), charged(1, "hash", "sha512", data(1024)))
	assert.Less(t, charged(1, "crypto.pbkdf2", "sha256", "pw", "salt", "1000", "32"), charged(1, "crypto.pbkdf2", "sha256", "pw", "salt", "2000", "32"))
	assert.Less(t, charged(1, "crypto.pbkdf2", "sha256", "pw", "salt", "1000", "32"), charged(1, "crypto.pbkdf2", "sha256", "pw", "salt", "1000", "33"), "a second block")
	// A key search tests as many candidates as the execution's stream
	// makes it: the same seed, the same price.
	for _, options := range []string{`{"modulusLength":1024}`, `{"modulusLength":2048}`} {
		one, again := charged(3, "crypto.keyGenerate", "rsa", options), charged(3, "crypto.keyGenerate", "rsa", options)
		assert.Equal(t, one, again, options)
		assert.Greater(t, one, uint64(hostFuelPerNs*costOfRSA(1024).mr), options)
	}
	assert.Less(t, charged(3, "crypto.keyGenerate", "ec", `{"namedCurve":"P-256"}`), charged(3, "crypto.keyGenerate", "ec", `{"namedCurve":"P-521"}`))
}

// TestHostWorkStopsWhenTheBudgetIsSpent: work whose size the tool chooses
// stops when the budget cannot pay for more (the operation fails; the
// engine then traps), without a charge after the one refused, and scrypt,
// which cannot stop midway, is refused before it starts.
func TestHostWorkStopsWhenTheBudgetIsSpent(t *testing.T) {
	const budget = 2_000_000_000 // about 170 ms of host work
	cases := []struct {
		name string
		args []string
		// atOnce: refused at the first charge beyond the bridge's.
		atOnce bool
	}{
		{"PBKDF2 of 2^31-1 iterations", []string{"crypto.pbkdf2", "sha256", "pw", "salt", strconv.Itoa(1<<31 - 1), "32"}, false},
		{"an RSA key of 16384 bits", []string{"crypto.keyGenerate", "rsa", `{"modulusLength":16384}`}, false},
		{"scrypt beyond the budget", []string{"crypto.scrypt", "pw", "salt", "65536", "8", "4", "64", "1073741824"}, true},
		{"hashing beyond the budget", []string{"hash", "sha3-512", latin1String(make([]byte, 32<<20))}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, left, charges := budgetSession(4, budget)
			_, err := nodeOps(ctx, c.args)
			require.ErrorIs(t, err, errHostWorkStopped)
			assert.Zero(t, *left, "the budget is spent")
			if c.atOnce {
				assert.Equal(t, 2, *charges, "the bridge, then the work")
			}
		})
	}
}

// TestCollatorIsChargedAtItsFirstUseInAnExecution: making a collator is
// charged at the first comparison with its options in each execution,
// whether or not the host's cache already holds it.
func TestCollatorIsChargedAtItsFirstUseInAnExecution(t *testing.T) {
	compare := []string{"intl.collate", "sv", "base", "0", "false", "0", "a", "b"}
	ctx, left, _ := budgetSession(1, 1<<40)
	cost := func() uint64 {
		before := *left
		_, err := nodeOps(ctx, compare)
		require.NoError(t, err)
		return before - *left
	}
	first, second := cost(), cost()
	assert.Equal(t, uint64(hostFuelPerNs*collatorFirstUse), first-second)
	ctx, left, _ = budgetSession(2, 1<<40)
	assert.Equal(t, first, cost(), "another execution pays for it again")
}

// TestCostOfRSA: sizes between those measured are interpolated, and sizes
// beyond grow with the cube of the size.
func TestCostOfRSA(t *testing.T) {
	assert.Equal(t, rsaCosts[1], costOfRSA(2048))
	assert.Equal(t, rsaCosts[0], costOfRSA(1024))
	mid := costOfRSA(2560)
	assert.Equal(t, (rsaCosts[1].sign+rsaCosts[2].sign)/2, mid.sign)
	assert.Equal(t, (rsaCosts[1].mr+rsaCosts[2].mr)/2, mid.mr)
	last := rsaCosts[len(rsaCosts)-1]
	assert.Equal(t, 8*last.mr, costOfRSA(2*last.bits).mr)
	for bits := 1024; bits < 16384; bits += 512 {
		a, b := costOfRSA(bits), costOfRSA(bits+512)
		require.LessOrEqual(t, a.sign, b.sign, bits)
		require.LessOrEqual(t, a.mr, b.mr, bits)
		require.LessOrEqual(t, a.finish, b.finish, bits)
	}
}
