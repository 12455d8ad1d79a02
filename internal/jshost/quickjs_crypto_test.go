package jshost

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"github.com/wasmgate/wasmgate/internal/host"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cryptoSession is a context for crypto operations, with the crypto stream
// of an execution whose input digest is seed.
func cryptoSession(seed byte) context.Context {
	return host.WithSession(context.Background(), host.NewSession(nil, [32]byte{seed}, 1<<20))
}

func runOp(t *testing.T, ctx context.Context, op string, args ...string) string {
	t.Helper()
	out, ok, err := runCryptoOp(ctx, op, args)
	require.True(t, ok, op)
	require.NoError(t, err, op)
	return out
}

// TestCryptoRandomnessIsTheExecutionsStream: everything that draws
// randomness (keys of every type, RSA-PSS salts, RSA-OAEP seeds, PKCS #1
// v1.5 padding) draws it from the execution's stream, never crypto/rand:
// two executions of one input get the same bytes, another input others.
func TestCryptoRandomnessIsTheExecutionsStream(t *testing.T) {
	draw := func(seed byte) []string {
		ctx := cryptoSession(seed)
		var out []string
		for _, kty := range []struct{ kty, options string }{
			{"rsa", `{"modulusLength":1024}`}, {"ec", `{"namedCurve":"P-521"}`}, {"ed25519", `{}`}, {"x25519", `{}`},
		} {
			out = append(out, runOp(t, ctx, "crypto.keyGenerate", kty.kty, kty.options))
		}
		var rsaKey map[string]keyRecord
		require.NoError(t, json.Unmarshal([]byte(out[0]), &rsaKey))
		priv, pub := rsaKey["private"], rsaKey["public"]
		out = append(out,
			runOp(t, ctx, "crypto.sign", priv.DER, "sha256", "pss", "-2", "der", "message"),
			runOp(t, ctx, "crypto.rsa", "publicEncrypt", "public", pub.DER, "oaep", "sha256", "", "message"),
			runOp(t, ctx, "crypto.rsa", "publicEncrypt", "public", pub.DER, "pkcs1", "", "", "message"))
		return out
	}
	one, again, other := draw(1), draw(1), draw(2)
	assert.Equal(t, one, again)
	for i := range one {
		assert.NotEqual(t, one[i], other[i], i)
	}
}

// TestPKCS1v15EncryptionDecryptsInGo: node 20 no longer decrypts PKCS #1
// v1.5 (CVE-2023-46809), so Go's own decryption checks the padding the
// host makes from the stream.
func TestPKCS1v15EncryptionDecryptsInGo(t *testing.T) {
	ctx := cryptoSession(3)
	var key map[string]keyRecord
	require.NoError(t, json.Unmarshal([]byte(runOp(t, ctx, "crypto.keyGenerate", "rsa", `{"modulusLength":2048}`)), &key))
	der, err := latin1Bytes(key["private"].DER)
	require.NoError(t, err)
	priv, err := x509.ParsePKCS8PrivateKey(der)
	require.NoError(t, err)
	for _, msg := range []string{"", "hello", string(make([]byte, 245))} {
		ct, err := latin1Bytes(runOp(t, ctx, "crypto.rsa", "publicEncrypt", "public", key["public"].DER, "pkcs1", "", "", msg))
		require.NoError(t, err)
		plain, err := rsa.DecryptPKCS1v15(nil, priv.(*rsa.PrivateKey), ct)
		require.NoError(t, err)
		assert.Equal(t, msg, string(plain))
	}
	_, _, err = runCryptoOp(ctx, "crypto.rsa", []string{"publicEncrypt", "public", key["public"].DER, "pkcs1", "", "", string(make([]byte, 246))})
	assert.EqualError(t, err, "[ERR_OSSL_RSA_DATA_TOO_LARGE_FOR_KEY_SIZE] error:0200006E:rsa routines::data too large for key size")
}

// TestRSAKeyGenerationStopsWithItsContext: the prime search, the one host
// operation whose time its input does not bound, ends when the
// execution's context does.
func TestRSAKeyGenerationStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(cryptoSession(4))
	cancel()
	_, _, err := runCryptoOp(ctx, "crypto.keyGenerate", []string{"rsa", `{"modulusLength":4096}`})
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, "RSA key generation stopped: context canceled")
}

// TestCryptoOpsRefuseBadCalls: the JS side checks arguments as Node does;
// what reaches the host anyway is refused with an error naming it.
func TestCryptoOpsRefuseBadCalls(t *testing.T) {
	ctx := cryptoSession(5)
	cases := []struct {
		op   string
		args []string
		err  string
	}{
		{"crypto.sign", []string{"x"}, "crypto.sign: want 6 arguments, got 1"},
		{"crypto.sign", []string{"not der", "", "", "", "der", "x"}, "[ERR_OSSL_UNSUPPORTED] error:1E08010C:DECODER routines::unsupported"},
		{"crypto.keyExport", []string{"secret", "", "der", "spki"}, `unknown key type "secret"`},
		{"crypto.keyParse", []string{"private", "xml", "", "x"}, `unknown key format "xml"`},
		{"crypto.stream", []string{"ctr", "encrypt", "0123456789abcdef", "0123456789abcdef", "0", "x", "129"}, "stream: a counter of 129 bits"},
		{"crypto.stream", []string{"xts", "encrypt", "0123456789abcdef", "0123456789abcdef", "0", "x", "128"}, `unknown stream mode "xts"`},
		{"crypto.blocks", []string{"aes", "cbc", "encrypt", "0123456789abcdef", "0123456789abcdef", "short"}, "5 bytes are not whole 16-byte blocks"},
		{"crypto.keyGenerate", []string{"rsa", `{"modulusLength":16385}`}, "[ERR_FEATURE_UNAVAILABLE_ON_PLATFORM] wasmgate's crypto makes RSA keys of 1024 to 16384 bits (Go refuses shorter keys; OpenSSL's longest modulus is 16384 bits): modulusLength is 16385"},
		{"crypto.keyGenerate", []string{"rsa", `{"modulusLength":2048,"publicExponent":4}`}, "[ERR_OSSL_BN_BAD_ENCODING] the public exponent 4 is not an odd number above 1"},
		{"crypto.pbkdf2", []string{"sha256", "pw", "salt", "1", "67108865"}, "[ERR_FEATURE_UNAVAILABLE_ON_PLATFORM] wasmgate derives keys of at most 64 MiB a call (the most a host call hands back): keylen is 67108865"},
		{"crypto.pbkdf2", []string{"sha256", "pw", "salt", "0", "32"}, "pbkdf2: 0 iterations of a 32-byte key: Node takes 1 to 2^31-1 iterations and 0 to 2^31-1 bytes"},
		{"crypto.scrypt", []string{"pw", "salt", "2", "1", "1", "67108865", "33554432"}, "[ERR_FEATURE_UNAVAILABLE_ON_PLATFORM] wasmgate derives keys of at most 64 MiB a call (the most a host call hands back): keylen is 67108865"},
		{"crypto.pbkdf2", []string{"md4", "pw", "salt", "1", "32"}, "[ERR_CRYPTO_INVALID_DIGEST] Invalid digest: md4"},
		{"crypto.scrypt", []string{"pw", "salt", "3", "8", "1", "32", "33554432"}, "[ERR_CRYPTO_INVALID_SCRYPT_PARAMS] Invalid scrypt params: error:030000AC:digital envelope routines::memory limit exceeded"},
	}
	for _, c := range cases {
		_, ok, err := runCryptoOp(ctx, c.op, c.args)
		require.True(t, ok, c.op)
		assert.EqualError(t, err, c.err, c.op)
	}
	_, ok, _ := runCryptoOp(ctx, "crypto.nothing", nil)
	assert.False(t, ok)
}
