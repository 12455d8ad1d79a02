package transparency_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/torchwood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	formatslog "github.com/transparency-dev/formats/log"
	formatsproof "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/compact"
	merkleproof "github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
)

// writeLog writes an audit log of n records (verdicts, as a MemorySink
// links them) to dir/audit.jsonl and returns its path and its lines.
func writeLog(t testing.TB, dir string, n int, tracePrefix ...string) (string, [][]byte) {
	t.Helper()
	prefix := "trace-"
	if len(tracePrefix) > 0 {
		prefix = tracePrefix[0]
	}
	sink := audit.NewMemorySink()
	for i := range n {
		_, err := sink.Append(context.Background(), audit.Record{
			Action: "text_upper@1.2.0", ExecutorID: "text_upper", Status: "BLOCKED",
			ReasonCodes: []string{"EXECUTOR_NOT_FOUND"},
			TraceID:     fmt.Sprintf("%s%d", prefix, i), TsUTC: "2025-01-01T00:00:00Z",
			InputDigest: audit.Digest([]byte(fmt.Sprint(i))),
		})
		require.NoError(t, err)
	}
	var b bytes.Buffer
	_, err := sink.WriteTo(&b)
	require.NoError(t, err)
	path := filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	lines := bytes.SplitAfter(b.Bytes(), []byte("\n"))
	lines = lines[:len(lines)-1]
	for i := range lines {
		lines[i] = bytes.TrimSuffix(lines[i], []byte("\n"))
	}
	return path, lines
}

// bigLog is one log of 70,000 records (two tile levels and a partial third),
// written once for the tests that need a large one.
var bigLog = sync.OnceValue(func() [][]byte {
	dir, err := os.MkdirTemp("", "wasmgate-tlog-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	_, lines := writeLog(&testing.T{}, dir, 70_000)
	return lines
})

// logOf writes the first n lines of bigLog as a log.
func logOf(t testing.TB, n int) (string, [][]byte) {
	lines := bigLog()[:n]
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600))
	return path, lines
}

// referenceRoot is the RFC 6962 root of leaves, computed by
// transparency-dev/merkle's compact ranges: not the code under test.
func referenceRoot(t testing.TB, leaves [][]byte) []byte {
	t.Helper()
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r := rf.NewEmptyRange(0)
	for _, l := range leaves {
		require.NoError(t, r.Append(rfc6962.DefaultHasher.HashLeaf(l), nil))
	}
	if len(leaves) == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	root, err := r.GetRootHash(nil)
	require.NoError(t, err)
	return root
}

func hashes(p []tlog.Hash) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = p[i][:]
	}
	return out
}

func newKey(t testing.TB, origin string) (note.Signer, note.Verifier, string) {
	t.Helper()
	skey, vkey, err := transparency.GenerateKey(origin)
	require.NoError(t, err)
	s, err := note.NewSigner(skey)
	require.NoError(t, err)
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	return s, v, vkey
}

// TestInclusionEveryIndex proves every record of every log of size 1 to
// 300 (the prefixes of one log) and checks each proof with
// transparency-dev/merkle, and each root against its compact ranges.
func TestInclusionEveryIndex(t *testing.T) {
	path, lines := writeLog(t, t.TempDir(), 300)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	require.EqualValues(t, 300, tree.Size())
	for n := int64(1); n <= 300; n++ {
		root, err := tree.Root(n)
		require.NoError(t, err)
		require.Equal(t, referenceRoot(t, lines[:n]), root[:], "root at size %d", n)
		for i := int64(0); i < n; i++ {
			p, err := tree.InclusionProof(i, n)
			require.NoError(t, err)
			err = merkleproof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(n), rfc6962.DefaultHasher.HashLeaf(lines[i]), hashes(p), root[:])
			require.NoError(t, err, "record %d of %d", i, n)
		}
	}
}

// TestInclusionLargeLog proves records across a log of 70,000 records.
func TestInclusionLargeLog(t *testing.T) {
	n := int64(70_000)
	path, lines := logOf(t, int(n))
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	root, err := tree.Root(n)
	require.NoError(t, err)
	require.Equal(t, referenceRoot(t, lines), root[:])
	for _, i := range []int64{0, 1, 255, 256, 4095, 65535, 65536, n / 3, n - 2, n - 1} {
		p, err := tree.InclusionProof(i, n)
		require.NoError(t, err)
		require.NoError(t, merkleproof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(n), rfc6962.DefaultHasher.HashLeaf(lines[i]), hashes(p), root[:]), "record %d", i)
	}
}

// TestConsistencyEveryPair proves every size up to 64 consistent with
// every larger one, checked by transparency-dev/merkle.
func TestConsistencyEveryPair(t *testing.T) {
	path, lines := writeLog(t, t.TempDir(), 64)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	for m := int64(0); m <= 64; m++ {
		for n := m; n <= 64; n++ {
			p, err := tree.ConsistencyProof(m, n)
			require.NoError(t, err)
			err = merkleproof.VerifyConsistency(rfc6962.DefaultHasher, uint64(m), uint64(n), hashes(p), referenceRoot(t, lines[:m]), referenceRoot(t, lines[:n]))
			require.NoError(t, err, "%d to %d", m, n)
		}
	}
	_, err = tree.ConsistencyProof(5, 4)
	require.ErrorContains(t, err, "no consistency proof from size 5 to 4")
	_, err = tree.ConsistencyProof(1, 65)
	require.ErrorContains(t, err, "size 65 is beyond the tree's 64 records")
}

// TestCheckpointReadByOthers checks a checkpoint with sumdb/note and the
// checkpoint parsers of transparency-dev/formats and torchwood.
func TestCheckpointReadByOthers(t *testing.T) {
	path, lines := writeLog(t, t.TempDir(), 7)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, verifier, _ := newKey(t, "example.com/audit")
	cp, err := tree.Sign(signer, 7)
	require.NoError(t, err)

	n, err := note.Open(cp, note.VerifierList(verifier))
	require.NoError(t, err)
	lines3 := strings.Split(n.Text, "\n")
	require.Equal(t, []string{"example.com/audit", "7"}, lines3[:2])

	c, _, _, err := formatslog.ParseCheckpoint(cp, "example.com/audit", verifier)
	require.NoError(t, err)
	assert.EqualValues(t, 7, c.Size)
	assert.Equal(t, referenceRoot(t, lines), c.Hash)

	tc, err := torchwood.ParseCheckpoint(n.Text)
	require.NoError(t, err)
	assert.EqualValues(t, 7, tc.N)
	assert.Equal(t, referenceRoot(t, lines), tc.Hash[:])
}

// TestProofFileReadByOthers writes a tlog-proof, parses it with
// transparency-dev/formats, verifies it with ours, and parses formats'
// own proof with ours.
func TestProofFileReadByOthers(t *testing.T) {
	path, lines := writeLog(t, t.TempDir(), 21)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, verifier, _ := newKey(t, "example.com/audit")
	for _, i := range []int64{0, 10, 20} {
		p, err := tree.Prove(signer, i)
		require.NoError(t, err)
		text := p.Marshal()

		var fp formatsproof.TLogProof
		require.NoError(t, fp.Unmarshal(text))
		assert.EqualValues(t, i, fp.Index)
		assert.Equal(t, p.Checkpoint, fp.Checkpoint)
		c, _, _, err := formatslog.ParseCheckpoint(fp.Checkpoint, "example.com/audit", verifier)
		require.NoError(t, err)
		fh := make([][]byte, len(fp.Hashes))
		for k := range fp.Hashes {
			fh[k] = fp.Hashes[k][:]
		}
		require.NoError(t, merkleproof.VerifyInclusion(rfc6962.DefaultHasher, fp.Index, c.Size, rfc6962.DefaultHasher.HashLeaf(lines[i]), fh, c.Hash))

		back, err := transparency.ParseProof(fp.Marshal())
		require.NoError(t, err)
		assert.Equal(t, p, back)
		got, err := transparency.VerifyProof(back, lines[i], verifier)
		require.NoError(t, err)
		assert.EqualValues(t, 21, got.Size)

		// The entry of another record does not verify.
		_, err = transparency.VerifyProof(back, lines[(i+1)%21], verifier)
		require.ErrorIs(t, err, transparency.ErrNotIncluded)
	}
	// A proof signed by another log's key does not verify.
	p, err := tree.Prove(signer, 3)
	require.NoError(t, err)
	_, other, _ := newKey(t, "example.com/audit")
	_, err = transparency.VerifyProof(p, lines[3], other)
	require.ErrorContains(t, err, "no signature by the log key example.com/audit")
}

// TestTilesReadByTorchwood serves the tree and reads every entry back with
// torchwood's tlog client, which checks each tile and bundle against the
// checkpoint's root.
func TestTilesReadByTorchwood(t *testing.T) {
	for _, n := range []int{1, 255, 256, 257, 70_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			path, lines := logOf(t, n)
			tree, err := transparency.Open(path)
			require.NoError(t, err)
			defer tree.Close()
			signer, verifier, _ := newKey(t, "example.com/audit")
			srv, err := transparency.NewServer(tree, signer, nil)
			require.NoError(t, err)
			hs := httptest.NewServer(srv)
			defer hs.Close()

			fetcher, err := torchwood.NewTileFetcher(hs.URL)
			require.NoError(t, err)
			cpText, err := fetcher.ReadEndpoint(context.Background(), "checkpoint")
			require.NoError(t, err)
			c, _, _, err := formatslog.ParseCheckpoint(cpText, "example.com/audit", verifier)
			require.NoError(t, err)
			require.EqualValues(t, n, c.Size)
			client, err := torchwood.NewClient(fetcher)
			require.NoError(t, err)
			tr := tlog.Tree{N: int64(c.Size), Hash: tlog.Hash(c.Hash)}
			var next int64
			for i, e := range client.Entries(context.Background(), tr, 0) {
				require.Equal(t, next, i)
				require.Equal(t, lines[i], e)
				next++
			}
			require.NoError(t, client.Err())
			for ; next < int64(n); next++ { // the trailing partial bundle
				e, _, err := client.Entry(context.Background(), tr, next)
				require.NoError(t, err)
				require.Equal(t, lines[next], e)
			}
		})
	}
}

// TestTileRequestsRefused checks the paths a log must not serve.
func TestTileRequestsRefused(t *testing.T) {
	path, _ := writeLog(t, t.TempDir(), 300)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, _, _ := newKey(t, "example.com/audit")
	srv, err := transparency.NewServer(tree, signer, nil)
	require.NoError(t, err)
	for path, code := range map[string]int{
		"/tile/0/000":            200,
		"/tile/0/001.p/44":       200,
		"/tile/0/001.p/45":       404, // wider than the tree
		"/tile/0/001":            404, // not full yet
		"/tile/1/000.p/1":        200,
		"/tile/entries/001.p/44": 200,
		"/tile/0/1":              404, // not 3 digits
		"/tile/0/x000/000":       404,
		"/tile/entries/000":      200,
		"/tile/9/000.p/1":        404,
		"/checkpoint":            200,
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		assert.Equal(t, code, rec.Code, path)
		if code == 200 && path != "/checkpoint" {
			assert.Equal(t, "public, max-age=31536000, immutable", rec.Header().Get("Cache-Control"), path)
			assert.Equal(t, "application/octet-stream", rec.Header().Get("Content-Type"), path)
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/tile/0/001.p/44", nil))
	assert.Equal(t, 44*32, rec.Body.Len())
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/checkpoint", nil))
	assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
}

// TestVerifyLogDetects checks a log against a checkpoint of it: intact,
// grown, truncated, rewritten and forked.
func TestVerifyLogDetects(t *testing.T) {
	dir := t.TempDir()
	path, lines := writeLog(t, dir, 40)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, verifier, _ := newKey(t, "example.com/audit")
	cpText, err := tree.Sign(signer, 30)
	require.NoError(t, err)
	cp, _, err := transparency.OpenCheckpoint(cpText, verifier)
	require.NoError(t, err)
	join := func(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }

	rep, err := transparency.VerifyLog(bytes.NewReader(join(lines)), cp, nil)
	require.NoError(t, err, "the log grew past the checkpoint")
	assert.EqualValues(t, 40, rep.Records)

	_, err = transparency.VerifyLog(bytes.NewReader(join(lines[:29])), cp, nil)
	require.ErrorIs(t, err, transparency.ErrLogMismatch)
	require.ErrorContains(t, err, "the log has 29 records, the checkpoint signed 30: 1 record was removed from its end (truncated)")

	edited := bytes.Clone(join(lines))
	edited = bytes.Replace(edited, []byte("trace-12"), []byte("trace-99"), 1)
	_, err = transparency.VerifyLog(bytes.NewReader(edited), cp, nil)
	require.ErrorIs(t, err, transparency.ErrLogMismatch)
	require.ErrorContains(t, err, "its first 30 records give the root")
	// With the tree made from the log before the edit, the record is named.
	_, err = transparency.VerifyLog(bytes.NewReader(edited), cp, tree)
	require.ErrorContains(t, err, "record 12 (seq 13) is not the one the checkpoint of size 30 covers")

	// A fork: another history of the same size, signed by the same key.
	forkPath, _ := writeLog(t, t.TempDir(), 31, "fork-")
	fork, err := transparency.Open(forkPath)
	require.NoError(t, err)
	defer fork.Close()
	forkText, err := fork.Sign(signer, 30)
	require.NoError(t, err)
	forkCP, _, err := transparency.OpenCheckpoint(forkText, verifier)
	require.NoError(t, err)
	require.Equal(t, cp.Size, forkCP.Size)
	_, err = transparency.VerifyLog(bytes.NewReader(join(lines)), forkCP, nil)
	require.ErrorContains(t, err, "or the checkpoint is of another history (a fork)")
}

// TestTreeRefusesToSignAfterTruncation: once a checkpoint is signed, a log
// cut back below it, or rewritten within it, gets no more checkpoints.
func TestTreeRefusesToSignAfterTruncation(t *testing.T) {
	path, lines := writeLog(t, t.TempDir(), 20)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	signer, _, _ := newKey(t, "example.com/audit")
	_, err = tree.Sign(signer, 20)
	require.NoError(t, err)
	require.NoError(t, tree.Close())

	keep := append(bytes.Join(lines[:15], []byte("\n")), '\n')
	require.NoError(t, os.WriteFile(path, keep, 0o600))
	_, err = transparency.Open(path)
	require.ErrorIs(t, err, transparency.ErrDiverged)
	require.ErrorContains(t, err, "covered by the checkpoint signed at size 20")

	// Deleting the tree does not help: the signed size is recorded.
	path2, lines2 := writeLog(t, t.TempDir(), 20)
	tree2, err := transparency.Open(path2)
	require.NoError(t, err)
	_, err = tree2.Sign(signer, 20)
	require.NoError(t, err)
	require.NoError(t, tree2.Close())
	edited := bytes.Replace(append(bytes.Join(lines2, []byte("\n")), '\n'), []byte("trace-19"), []byte("trace-XX"), 1)
	require.NoError(t, os.WriteFile(path2, edited, 0o600))
	_, err = transparency.Open(path2)
	require.ErrorIs(t, err, transparency.ErrDiverged)
}

// TestTreeFollowsAGrowingLog appends to a live FileSink and checks the
// tree catches up, and that a tree rebuilt from scratch agrees.
func TestTreeFollowsAGrowingLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sink, err := audit.OpenFile(path)
	require.NoError(t, err)
	defer sink.Close()
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, verifier, _ := newKey(t, "example.com/audit")
	var prev transparency.Checkpoint
	for round := range 5 {
		for i := range round * 3 {
			_, err := sink.Append(context.Background(), audit.Record{
				Action: "a@1.0.0", ExecutorID: "a", Status: "BLOCKED", ReasonCodes: []string{"EXECUTOR_NOT_FOUND"},
				TraceID: fmt.Sprintf("t%d-%d", round, i), TsUTC: "2025-01-01T00:00:00Z", InputDigest: audit.Digest([]byte("x")),
			})
			require.NoError(t, err)
		}
		_, size := sink.Durable()
		n, err := tree.Update(size)
		require.NoError(t, err)
		text, err := tree.Sign(signer, n)
		require.NoError(t, err)
		c, _, err := transparency.OpenCheckpoint(text, verifier)
		require.NoError(t, err)
		p, err := tree.ConsistencyProof(prev.Size, c.Size)
		require.NoError(t, err)
		if prev.Size > 0 {
			require.NoError(t, tlog.CheckTree(p, c.Size, c.Root, prev.Size, prev.Root))
		}
		prev = c
	}
	require.EqualValues(t, 30, prev.Size)
	require.NoError(t, os.RemoveAll(path+transparency.DirSuffix))
	again, err := transparency.Open(path)
	require.NoError(t, err)
	defer again.Close()
	root, err := again.Root(30)
	require.NoError(t, err)
	require.Equal(t, prev.Root, root)
}

// TestTreeForgetsUnsignedRecordsTheLogLost: records hashed but never
// signed, then cut from the log (a sink that failed cuts its log back),
// leave the tree, which follows what the log holds instead.
func TestTreeForgetsUnsignedRecordsTheLogLost(t *testing.T) {
	dir := t.TempDir()
	path, lines := writeLog(t, dir, 20)
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	signer, _, _ := newKey(t, "example.com/audit")
	_, err = tree.Sign(signer, 8)
	require.NoError(t, err)
	require.NoError(t, tree.Close())

	// The log loses its last 7 records.
	kept := append(bytes.Join(lines[:13], []byte("\n")), '\n')
	require.NoError(t, os.WriteFile(path, kept, 0o600))
	again, err := transparency.Open(path)
	require.NoError(t, err)
	defer again.Close()
	require.EqualValues(t, 13, again.Size(), "the tree keeps the records the log still holds")
	root, err := again.Root(13)
	require.NoError(t, err)
	require.Equal(t, referenceRoot(t, lines[:13]), root[:])
	_, err = again.Sign(signer, 13)
	require.NoError(t, err, "13 records extend the checkpoint signed at 8")
}
