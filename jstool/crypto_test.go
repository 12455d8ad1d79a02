package jstool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// cryptoTools are the crypto fixtures, relative to the tools directory run
// reads; their npm packages (jose, jsonwebtoken) are pinned by
// testdata/crypto/package-lock.json and installed by make testdata-js.
const cryptoTools = "../crypto/tools"

// cryptoLimits leave the clock out of every verdict: the fixtures run
// hundreds of operations, and RSA key generation is host work the fuel
// does not count.
var cryptoLimits = sandbox.Limits{Fuel: 100_000_000_000, TimeoutMs: 600_000}

// cryptoInWasmgate runs a crypto fixture through the pipeline on wazero
// and answers its output.
func cryptoInWasmgate(t *testing.T, tool, params string) json.RawMessage {
	t.Helper()
	res := run(t, engine(t, sandbox.EngineWazero), filepath.Join(cryptoTools, tool), "", params, cryptoLimits)
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	return res.Output
}

// cryptoInNode runs a crypto fixture in node, as wasmgate runs it.
func cryptoInNode(t *testing.T, tool, params string) json.RawMessage {
	t.Helper()
	return runNode(t, filepath.Join(cryptoTools, tool), params)
}

func requireCryptoPackages(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("testdata", "crypto", "node_modules", "jose", "package.json")); err != nil {
		t.Fatalf("the crypto fixtures' npm packages are not installed (make testdata-js installs them): %v", err)
	}
}

// cryptoDifferences are the cases whose result in wasmgate is not node's,
// with why; the test fails when another case differs and when one of these
// starts to agree. docs/JAVASCRIPT.md says the same.
var cryptoDifferences = map[string]string{
	"importKey Ed448": "Ed448 (experimental in Node 20) is OpenSSL's; Go's crypto has no Ed448, so it is refused by name",
}

// TestCryptoMatchesNode runs every operation of ops.mjs (fixed keys and
// inputs: digests, HMACs, KDFs, ciphers, deterministic signatures, key
// imports and exports), every misuse of errors.mjs and the globals a bundle
// reaches only through globalThis (globalthis.mjs) in wasmgate and in node,
// and requires each case's result (bytes, or the error's class, name, code
// and message) to be node's.
func TestCryptoMatchesNode(t *testing.T) {
	testenv.GuestOnly(t)
	for _, tool := range []string{"ops.mjs", "errors.mjs", "globalthis.mjs"} {
		t.Run(tool, func(t *testing.T) {
			var got, want map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(cryptoInNode(t, tool, `{}`), &want))
			require.NoError(t, json.Unmarshal(cryptoInWasmgate(t, tool, `{}`), &got))
			require.Len(t, got, len(want))
			for name, w := range want {
				g, ok := got[name]
				require.True(t, ok, "%s: no result in wasmgate", name)
				if why, known := cryptoDifferences[name]; known {
					assert.NotEqual(t, canonical(t, w), canonical(t, g), "%s now gives what node gives: remove it from cryptoDifferences (%s)", name, why)
					continue
				}
				assert.JSONEq(t, string(w), string(g), name)
			}
		})
	}
}

func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	c, err := audit.Canonicalize(raw)
	require.NoError(t, err)
	return string(c.Bytes)
}

// TestCryptoCrossChecksWithNode: what differs run to run in node (ECDSA,
// RSA-PSS and RSA-OAEP, generated keys of every type, random IVs) is made
// on one side and checked on the other, both ways: every signature made
// in wasmgate verifies in node, every ciphertext decrypts, every generated
// key's public half is the one its private half signs for, and the other
// way round.
func TestCryptoCrossChecksWithNode(t *testing.T) {
	testenv.GuestOnly(t)
	check := func(t *testing.T, made json.RawMessage, verify func(params string) json.RawMessage) {
		var items struct {
			Items []json.RawMessage `json:"items"`
		}
		require.NoError(t, json.Unmarshal(made, &items))
		require.Len(t, items.Items, 21)
		params, err := json.Marshal(map[string]any{"mode": "check", "items": items.Items})
		require.NoError(t, err)
		var results map[string]any
		require.NoError(t, json.Unmarshal(verify(string(params)), &results))
		require.Len(t, results, len(items.Items))
		for name, ok := range results {
			assert.Equal(t, true, ok, name)
		}
	}
	t.Run("made in wasmgate, checked in node", func(t *testing.T) {
		check(t, cryptoInWasmgate(t, "cross.mjs", `{"mode":"make"}`), func(p string) json.RawMessage { return cryptoInNode(t, "cross.mjs", p) })
	})
	t.Run("made in node, checked in wasmgate", func(t *testing.T) {
		check(t, cryptoInNode(t, "cross.mjs", `{"mode":"make"}`), func(p string) json.RawMessage { return cryptoInWasmgate(t, "cross.mjs", p) })
	})
}

// TestCryptoJWTsMatchNode signs JWTs with jose (HS256, RS256, ES256,
// EdDSA, on crypto.subtle) and jsonwebtoken (RS256, ES384, PS256, on
// node:crypto) in wasmgate and in node: the deterministic algorithms give
// the same token, byte for byte, and each side verifies every token the
// other made (and decrypts its A256GCM JWE) with the same claims.
func TestCryptoJWTsMatchNode(t *testing.T) {
	testenv.GuestOnly(t)
	requireCryptoPackages(t)
	type signed struct {
		Tokens     map[string]string `json:"tokens"`
		Thumbprint string            `json:"thumbprint"`
		JWK        json.RawMessage   `json:"jwk"`
		JWEHeader  json.RawMessage   `json:"jweHeader"`
		JWE        string            `json:"jwe"`
	}
	var inWasmgate, inNode signed
	require.NoError(t, json.Unmarshal(cryptoInWasmgate(t, "jwt.mjs", `{"mode":"sign"}`), &inWasmgate))
	require.NoError(t, json.Unmarshal(cryptoInNode(t, "jwt.mjs", `{"mode":"sign"}`), &inNode))
	for _, alg := range []string{"HS256", "RS256", "EdDSA", "jsonwebtoken RS256"} {
		assert.Equal(t, inNode.Tokens[alg], inWasmgate.Tokens[alg], alg)
	}
	for _, alg := range []string{"ES256", "jsonwebtoken ES384", "jsonwebtoken PS256"} {
		// Randomized in node: the same header and claims, another signature.
		n, w := strings.Split(inNode.Tokens[alg], "."), strings.Split(inWasmgate.Tokens[alg], ".")
		require.Len(t, w, 3, alg)
		assert.Equal(t, n[:2], w[:2], alg)
	}
	assert.Equal(t, inNode.Thumbprint, inWasmgate.Thumbprint)
	assert.JSONEq(t, string(inNode.JWK), string(inWasmgate.JWK))
	assert.JSONEq(t, string(inNode.JWEHeader), string(inWasmgate.JWEHeader))

	verify := func(s signed) string {
		p, err := json.Marshal(map[string]any{"mode": "verify", "tokens": s.Tokens, "jwe": s.JWE})
		require.NoError(t, err)
		return string(p)
	}
	nodeVerifies := cryptoInNode(t, "jwt.mjs", verify(inWasmgate))
	wasmgateVerifies := cryptoInWasmgate(t, "jwt.mjs", verify(inNode))
	assert.JSONEq(t, string(nodeVerifies), string(wasmgateVerifies))
	var results map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(wasmgateVerifies, &results))
	assert.JSONEq(t, `{"payload":{"sub":"user-42","scope":["read","write"],"name":"Zoë","iat":1700000000,"exp":1700003600,"iss":"wasmgate","aud":"tests"},"protectedHeader":{"alg":"ES256","typ":"JWT"}}`, string(results["ES256"]))
	assert.JSONEq(t, `{"sub":"user-42","scope":["read","write"],"name":"Zoë","iss":"wasmgate"}`, string(results["jsonwebtoken RS256"]))
	assert.JSONEq(t, `"ERR_JWS_SIGNATURE_VERIFICATION_FAILED: signature verification failed"`, string(results["wrong secret"]))
	assert.JSONEq(t, `"for your eyes"`, string(results["jwe"]))
}

// TestCryptoIsDeterministicOnEveryEngine: everything crypto draws from the
// random stream (keys of every type, ECDSA, RSA-PSS and RSA-OAEP, random
// IVs and secrets) is the same on every run and engine for one input, and
// other for another input.
func TestCryptoIsDeterministicOnEveryEngine(t *testing.T) {
	ctx := context.Background()
	b, err := jstool.BundleFile(filepath.Join("testdata", "crypto", "tools", "generate.mjs"))
	require.NoError(t, err)
	execute := func(tool *jstool.Tool, params string) sandbox.Outcome {
		in := []byte(params)
		out, err := tool.Execute(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in), Limits: cryptoLimits})
		require.NoError(t, err)
		require.Equal(t, sandbox.Completed, out.Kind, out.Message)
		return out
	}
	var first sandbox.Outcome
	var wazero *jstool.Tool
	for _, name := range enginetest.JSEnginesCompared() {
		tool, err := jstool.Load(ctx, engine(t, name), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "generate", Version: "1.0.0"}})
		require.NoError(t, err, name)
		if name == sandbox.EngineWazero {
			wazero = tool
		}
		for range 2 {
			out := execute(tool, `{"text":"hello"}`)
			if first.Output == nil {
				first = out
				continue
			}
			assert.Equal(t, string(first.Output), string(out.Output), name)
			assert.Equal(t, first.FuelUsed, out.FuelUsed, name)
		}
	}
	var one, other map[string]string
	require.NoError(t, json.Unmarshal(first.Output, &one))
	require.NoError(t, json.Unmarshal(execute(wazero, `{"text":"other"}`).Output, &other))
	require.Len(t, one, 19)
	for k, v := range one {
		assert.NotEqual(t, v, other[k], k)
	}
}

// TestCryptoMissingFailsNamingIt: what wasmgate's crypto does not have
// fails with an error that names it, never silently.
func TestCryptoMissingFailsNamingIt(t *testing.T) {
	var got map[string]string
	require.NoError(t, json.Unmarshal(cryptoInWasmgate(t, "missing.mjs", `{}`), &got))
	want := map[string]string{
		"createDiffieHellman": "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: crypto.createDiffieHellman() is not available in the wasmgate sandbox",
		"generatePrimeSync":   "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: crypto.generatePrimeSync() is not available in the wasmgate sandbox",
		"X509Certificate":     "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: crypto.X509Certificate() is not available in the wasmgate sandbox",
		"dsa keys":            "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: dsa key generation (wasmgate's crypto makes rsa, rsa-pss, ec, ed25519 and x25519 keys) is not available in the wasmgate sandbox",
		"ed448 keys":          "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: ed448 key generation (wasmgate's crypto makes rsa, rsa-pss, ec, ed25519 and x25519 keys) is not available in the wasmgate sandbox",
		"secp256k1":           "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate's crypto does not support the curve \"secp256k1\" (it has P-256, P-384 and P-521)",
		"aes-128-ccm":         "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: The cipher aes-128-ccm (wasmgate's crypto has AES CBC, ECB, CTR, CFB, OFB, GCM and key wrap, ChaCha20-Poly1305 and 3DES) is not available in the wasmgate sandbox",
		"encrypted PEM":       "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate's crypto does not read encrypted private keys: decrypt the key before handing it over",
		"export with cipher":  "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: Encrypting a private key on export (options.cipher) is not available in the wasmgate sandbox",
		"RSA 512":             "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate's crypto makes RSA keys of 1024 to 16384 bits (Go refuses shorter keys; OpenSSL's longest modulus is 16384 bits): modulusLength is 512",
		"PSS empty salt":      "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate's crypto (Go's crypto/rsa) cannot make or check RSA-PSS signatures with an empty salt",
		"RSA_NO_PADDING":      "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: RSA_NO_PADDING (crypto.publicEncrypt()) is not available in the wasmgate sandbox",
		"scrypt over the cap": "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate computes scrypt with at most 64 MiB of memory (128·N·r) and 256 MiB of work (128·N·r·p) a call: N=131072 r=8 p=1 asked",
		"subtle Ed448":        "NotSupportedError: Ed448 is not available in the wasmgate sandbox (Go's crypto lacks it)",
		"subtle RSA 512":      "OperationError: The operation failed for an operation-specific reason (cause: ERR_FEATURE_UNAVAILABLE_ON_PLATFORM: wasmgate's crypto makes RSA keys of 1024 to 16384 bits (Go refuses shorter keys; OpenSSL's longest modulus is 16384 bits): modulusLength is 512)",
	}
	assert.Equal(t, want, got)
}
