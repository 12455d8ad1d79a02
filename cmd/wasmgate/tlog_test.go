package main

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	formatslog "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	formatsproof "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

// TestAuditTransparencyCommands runs what docs/AUDIT.md shows: keygen,
// checkpoint, prove, an offline verify of the proof, consistency, verify
// against a checkpoint; then truncates the log and sees it caught. What the
// commands print is checked with implementations other than ours.
func TestAuditTransparencyCommands(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	for n := range 3 {
		require.Equal(t, exitSuccess, sumRun(t, log, n).code)
	}
	key := filepath.Join(dir, "log.key")
	r := wasmgate(t, "", "audit", "keygen", "--origin", "example.com/audit", "--out", key)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	vkey := strings.TrimSpace(r.stdout)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	fi, err := os.Stat(key)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	vkeyFile := filepath.Join(dir, "log.vkey")
	require.NoError(t, os.WriteFile(vkeyFile, []byte(r.stdout), 0o644))

	r = wasmgate(t, "", "audit", "keygen", "--origin", "example.com/audit", "--out", key)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "keygen never overwrites a key")

	r = wasmgate(t, "", "audit", "checkpoint", log, "--key", key)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	cp, _, _, err := formatslog.ParseCheckpoint([]byte(r.stdout), "example.com/audit", verifier)
	require.NoError(t, err)
	require.EqualValues(t, 6, cp.Size, "3 attempts and 3 verdicts")
	cpFile := filepath.Join(dir, "cp")
	require.NoError(t, os.WriteFile(cpFile, []byte(r.stdout), 0o644))

	lines := strings.Split(strings.TrimSuffix(readFile(t, log), "\n"), "\n")
	r = wasmgate(t, "", "audit", "prove", log, "--seq", "4", "--key", key)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	var p formatsproof.TLogProof
	require.NoError(t, p.Unmarshal([]byte(r.stdout)))
	require.EqualValues(t, 3, p.Index)
	pcp, _, _, err := formatslog.ParseCheckpoint(p.Checkpoint, "example.com/audit", verifier)
	require.NoError(t, err)
	path := make([][]byte, len(p.Hashes))
	for i := range p.Hashes {
		path[i] = p.Hashes[i][:]
	}
	require.NoError(t, proof.VerifyInclusion(rfc6962.DefaultHasher, 3, pcp.Size, rfc6962.DefaultHasher.HashLeaf([]byte(lines[3])), path, pcp.Hash))

	proofFile := filepath.Join(dir, "4.tlog-proof")
	require.NoError(t, os.WriteFile(proofFile, []byte(r.stdout), 0o644))
	entry := filepath.Join(dir, "verdict.json")
	require.NoError(t, os.WriteFile(entry, []byte(lines[3]+"\n"), 0o644))
	r = wasmgate(t, "", "audit", "verify", "--proof", proofFile, "--entry", entry, "--vkey", vkeyFile)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Contains(t, r.stdout, "ok, record seq 4 (action_audit SUCCESS of sum")
	assert.Contains(t, r.stdout, "is in example.com/audit's log of 6 records")
	// The line of another record does not verify; the log's own line does.
	require.NoError(t, os.WriteFile(entry, []byte(lines[1]), 0o644))
	r = wasmgate(t, "", "audit", "verify", "--proof", proofFile, "--entry", entry, "--vkey", vkey)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "the entry is not in the log at that index under that checkpoint")
	r = wasmgate(t, "", "audit", "verify", log, "--proof", proofFile, "--vkey", vkey)
	assert.Equal(t, exitSuccess, r.code, r.stderr)

	r = wasmgate(t, "", "audit", "verify", log, "--checkpoint", cpFile, "--vkey", vkeyFile)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Contains(t, r.stdout, "its first 6 records give the root of example.com/audit's checkpoint")

	// The log grows; the consistency proof from the checkpoint verifies.
	require.Equal(t, exitSuccess, sumRun(t, log, 9).code)
	r = wasmgate(t, "", "audit", "checkpoint", log, "--key", key)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	cp2, _, _, err := formatslog.ParseCheckpoint([]byte(r.stdout), "example.com/audit", verifier)
	require.NoError(t, err)
	require.EqualValues(t, 8, cp2.Size)
	r = wasmgate(t, "", "audit", "consistency", log, "--from", "6")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	var cproof [][]byte
	for _, l := range strings.Fields(r.stdout) {
		h, err := decodeB64(l)
		require.NoError(t, err)
		cproof = append(cproof, h)
	}
	require.NoError(t, proof.VerifyConsistency(rfc6962.DefaultHasher, 6, 8, cproof, cp.Hash, cp2.Hash))

	// Truncated below the checkpoint: verify names it, checkpoint refuses.
	keep := strings.Join(lines[:5], "\n") + "\n"
	require.NoError(t, os.WriteFile(log, []byte(keep), 0o600))
	r = wasmgate(t, "", "audit", "verify", log, "--checkpoint", cpFile, "--vkey", vkeyFile)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "the log has 5 records, the checkpoint signed 6: 1 record was removed from its end (truncated)")
	r = wasmgate(t, "", "audit", "checkpoint", log, "--key", key)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "covered by the checkpoint signed at size 8")

	// Rewritten within it: the chain check names the edited line first.
	edited := strings.Replace(strings.Join(lines, "\n")+"\n", `"duration_ms":`, `"duration_ms":1`, 1)
	require.NotEqual(t, strings.Join(lines, "\n")+"\n", edited)
	require.NoError(t, os.WriteFile(log, []byte(edited), 0o600))
	r = wasmgate(t, "", "audit", "verify", log, "--checkpoint", cpFile, "--vkey", vkeyFile)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, log+":2: ")

	// Another history whose chain is intact (a forger re-ran the chain, or
	// the operator shows this party another log): only the checkpoint
	// tells.
	forged := filepath.Join(dir, "forged.jsonl")
	for n := range 3 {
		require.Equal(t, exitSuccess, sumRun(t, forged, 100+n).code)
	}
	r = wasmgate(t, "", "audit", "verify", forged, "--checkpoint", cpFile, "--vkey", vkeyFile)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "its first 6 records give the root")
	assert.Contains(t, r.stderr, "the log was rewritten, or the checkpoint is of another history (a fork)")

	for _, args := range [][]string{
		{"audit", "prove", log, "--key", key},
		{"audit", "checkpoint", log, "--key", filepath.Join(dir, "none")},
		{"audit", "checkpoint", log, "--key", vkeyFile},
		{"audit", "verify", "--proof", proofFile, "--vkey", vkeyFile},
		{"audit", "consistency", log},
		{"audit", "keygen", "--origin", "has space", "--out", filepath.Join(dir, "k2")},
	} {
		r = wasmgate(t, "", args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// TestWitnessCosignsProofsAndRefusesAFork: prove asks a running witness to
// cosign; verify requires its cosignature (k of n, and a tlog-policy
// file); a forked log signed with the same key is refused by the witness,
// so its proof cannot meet the policy.
func TestWitnessCosignsProofsAndRefusesAFork(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	for n := range 2 {
		require.Equal(t, exitSuccess, sumRun(t, log, n).code)
	}
	key := filepath.Join(dir, "log.key")
	r := wasmgate(t, "", "audit", "keygen", "--origin", "example.com/audit", "--out", key)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	logVKey := strings.TrimSpace(r.stdout)

	wkey := filepath.Join(dir, "w.key")
	r = wasmgate(t, "", "witness", "keygen", "--name", "witness.example/w1", "--out", wkey)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	wvkey := strings.TrimSpace(r.stdout)
	b := startBackground(t, func(s string) bool { return servedURL(s) != "" },
		"witness", "--key", wkey, "--log", logVKey, "--state", filepath.Join(dir, "state"), "--addr", "127.0.0.1:0")
	url := servedURL(b.stderr.String())

	proofFile := filepath.Join(dir, "p.tlog-proof")
	r = wasmgate(t, "", "audit", "prove", log, "--seq", "2", "--key", key, "--witness", wvkey+"="+url)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	require.NoError(t, os.WriteFile(proofFile, []byte(r.stdout), 0o644))
	cosigVerifier, err := fnote.NewVerifierForCosignatureV1(wvkey)
	require.NoError(t, err)
	logVerifier, err := note.NewVerifier(logVKey)
	require.NoError(t, err)
	p, err := transparency.ParseProof([]byte(r.stdout))
	require.NoError(t, err)
	opened, err := note.Open(p.Checkpoint, note.VerifierList(logVerifier, cosigVerifier))
	require.NoError(t, err, "sumdb/note verifies the log's signature and the witness's cosignature")
	require.Len(t, opened.Sigs, 2)

	r = wasmgate(t, "", "audit", "verify", log, "--proof", proofFile, "--vkey", logVKey, "--witness", wvkey)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Contains(t, r.stdout, "cosigned by witness.example/w1 (the witness policy is met)")

	// A second witness the proof lacks: 2 of 2 fails, 1 of 2 passes.
	_, other, err := note.GenerateKey(rand.Reader, "witness.example/w2")
	require.NoError(t, err)
	otherCosig, err := fnote.VKeyToCosignatureV1(other)
	require.NoError(t, err)
	r = wasmgate(t, "", "audit", "verify", log, "--proof", proofFile, "--vkey", logVKey, "--witness", wvkey, "--witness", otherCosig)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "witness quorum not met")
	r = wasmgate(t, "", "audit", "verify", log, "--proof", proofFile, "--vkey", logVKey, "--witness", wvkey, "--witness", otherCosig, "--witness-quorum", "1")
	assert.Equal(t, exitSuccess, r.code, r.stderr)
	policy := filepath.Join(dir, "policy")
	require.NoError(t, os.WriteFile(policy, []byte("log "+logVKey+"\nwitness w1 "+wvkey+"\nwitness w2 "+otherCosig+"\ngroup both all w1 w2\nquorum both\n"), 0o644))
	r = wasmgate(t, "", "audit", "verify", log, "--proof", proofFile, "--vkey", logVKey, "--witness-policy", policy)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "cosigned by w1; the quorum needs both = all of [w1, w2]")

	// A fork: another log of the same size, signed with the same key. The
	// witness has cosigned the first history and refuses this one.
	fork := filepath.Join(dir, "fork.jsonl")
	for n := range 2 {
		require.Equal(t, exitSuccess, sumRun(t, fork, 50+n).code)
	}
	r = wasmgate(t, "", "audit", "prove", fork, "--seq", "2", "--key", key, "--witness", wvkey+"="+url)
	assert.Equal(t, exitInternal, r.code, r.stderr)
	assert.Contains(t, r.stderr, "422")
	assert.Contains(t, r.stderr, "witness quorum not met")
}
