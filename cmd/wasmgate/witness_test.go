package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

func TestWitnessKeygen(t *testing.T) {
	out := filepath.Join(t.TempDir(), "witness.key")
	r := wasmgate(t, "", "witness", "keygen", "--name", "witness.example/w1", "--out", out)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	vkey := strings.TrimSuffix(r.stdout, "\n")

	st, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	key, err := os.ReadFile(out)
	require.NoError(t, err)
	signer, err := note.NewSigner(strings.TrimSpace(string(key)))
	require.NoError(t, err, "the file is a signed-note signer key")
	assert.Equal(t, "witness.example/w1", signer.Name())
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	require.NoError(t, err, "stdout is a cosignature verifier key: %q", vkey)
	assert.Equal(t, "witness.example/w1", v.Name())
	raw, err := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	require.NoError(t, err)
	assert.Equal(t, byte(0x04), raw[0], "signature type of a cosignature/v1 key")

	again := wasmgate(t, "", "witness", "keygen", "--name", "witness.example/w2", "--out", out)
	assert.Equal(t, exitUsage, again.code)
	assert.Contains(t, again.stderr, "exists: refusing to overwrite a key")
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, key, after, "the key is untouched")
}

func TestWitnessUsageErrors(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "w.key")
	require.Equal(t, exitSuccess, wasmgate(t, "", "witness", "keygen", "--name", "witness.example/w1", "--out", keyFile).code)
	_, logVKey, err := note.GenerateKey(rand.Reader, "example.com/log")
	require.NoError(t, err)
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no flags", nil, "--key is required"},
		{"no log", []string{"--key", keyFile, "--state", dir}, "--log is required"},
		{"no state", []string{"--key", keyFile, "--log", logVKey}, "--state is required"},
		{"log not a vkey", []string{"--key", keyFile, "--log", "example.com/log", "--state", dir}, `"example.com/log" is not an Ed25519 verifier key`},
		{"argument", []string{"--key", keyFile, "--log", logVKey, "--state", dir, "extra"}, `unexpected argument "extra"`},
		{"missing key file", []string{"--key", filepath.Join(dir, "nope"), "--log", logVKey, "--state", dir}, "--key: open"},
		{"keygen without name", []string{"keygen", "--out", filepath.Join(dir, "k")}, "--name and --out are required"},
		{"keygen name with space", []string{"keygen", "--name", "a b", "--out", filepath.Join(dir, "k")}, "a key name has no spaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"witness"}, tc.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.msg)
		})
	}
	r := wasmgate(t, "", "witness")
	assert.Contains(t, r.stderr, witnessUsage, "a usage error shows the usage line")
}

var witnessVKeyLogged = regexp.MustCompile(`msg=listening url=\S+ vkey="?([^"\s]+)`)

// TestWitnessServesCosignatures runs the command in-process and gets a
// checkpoint cosigned with the package's client.
func TestWitnessServesCosignatures(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "w.key")
	kg := wasmgate(t, "", "witness", "keygen", "--name", "witness.example/w1", "--out", keyFile)
	require.Equal(t, exitSuccess, kg.code, kg.stderr)
	printed := strings.TrimSpace(kg.stdout)

	logSKey, logVKey, err := note.GenerateKey(rand.Reader, "example.com/log")
	require.NoError(t, err)
	logSigner, err := note.NewSigner(logSKey)
	require.NoError(t, err)
	logVerifier, err := note.NewVerifier(logVKey)
	require.NoError(t, err)

	b := startBackground(t, func(s string) bool { return servedURL(s) != "" },
		"witness", "--key", keyFile, "--log", logVKey, "--state", filepath.Join(dir, "state"), "--addr", "127.0.0.1:0")
	url := servedURL(b.stderr.String())
	assert.Equal(t, printed+"\n", b.stdout.String(), "the witness prints the vkey keygen printed")
	m := witnessVKeyLogged.FindStringSubmatch(b.stderr.String())
	require.NotNil(t, m, b.stderr.String())
	assert.Equal(t, printed, m[1], "and logs it with its address")

	// A log of three leaves, made with x/mod's tlog.
	var hashes []tlog.Hash
	var leaves int64
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	checkpoint := func(n int64) []byte {
		for ; leaves < n; leaves++ {
			hs, err := tlog.StoredHashes(leaves, fmt.Appendf(nil, "leaf %d", leaves), reader)
			require.NoError(t, err)
			hashes = append(hashes, hs...)
		}
		root, err := tlog.TreeHash(n, reader)
		require.NoError(t, err)
		cp, err := note.Sign(&note.Note{Text: fmt.Sprintf("example.com/log\n%d\n%s\n", n, base64.StdEncoding.EncodeToString(root[:]))}, logSigner)
		require.NoError(t, err)
		return cp
	}
	witnessVerifier, err := fnote.NewVerifierForCosignatureV1(printed)
	require.NoError(t, err)
	for _, n := range []int64{1, 3} {
		cp := checkpoint(n)
		cosig, err := transparency.Cosign(context.Background(), nil, url, cp, func(old int64) (tlog.TreeProof, error) {
			return tlog.ProveTree(n, old, reader)
		})
		require.NoError(t, err)
		opened, err := note.Open(append(cp, cosig...), note.VerifierList(logVerifier, witnessVerifier))
		require.NoError(t, err)
		assert.Len(t, opened.Sigs, 2, "the log's signature and the witness's cosignature")
	}

	resp, err := http.Get(url + "/" + "0000/checkpoint")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, b.stderr.String(), "msg=refused method=GET path=/0000/checkpoint status=404", "refusals are logged")
}
