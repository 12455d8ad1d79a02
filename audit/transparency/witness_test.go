package transparency_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/torchwood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

// memLog is the log side of the witness tests, made with x/mod's tlog and
// note over leaves held in memory, apart from the package's own tree.
type memLog struct {
	origin   string
	signer   note.Signer
	verifier note.Verifier
	vkey     string
	hashes   []tlog.Hash // tlog's stored hashes
	n        int64
}

func newMemLog(t *testing.T, origin string) *memLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	require.NoError(t, err)
	s, err := note.NewSigner(skey)
	require.NoError(t, err)
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	return &memLog{origin: origin, signer: s, verifier: v, vkey: vkey}
}

// fork is a log with the same origin and key and no leaves: what a log
// showing a second history signs.
func (l *memLog) fork() *memLog {
	return &memLog{origin: l.origin, signer: l.signer, verifier: l.verifier, vkey: l.vkey}
}

func (l *memLog) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(l.hashes)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = l.hashes[x]
		}
		return out, nil
	})
}

// grow appends leaves until the log has size leaves, each named by prefix
// and its index.
func (l *memLog) grow(t *testing.T, size int64, prefix string) {
	t.Helper()
	for l.n < size {
		hs, err := tlog.StoredHashes(l.n, fmt.Appendf(nil, "%s %d", prefix, l.n), l.reader())
		require.NoError(t, err)
		l.hashes = append(l.hashes, hs...)
		l.n++
	}
}

func (l *memLog) root(t *testing.T, size int64) tlog.Hash {
	t.Helper()
	h, err := tlog.TreeHash(size, l.reader())
	require.NoError(t, err)
	return h
}

// checkpoint is the log's signed checkpoint at size.
func (l *memLog) checkpoint(t *testing.T, size int64) []byte {
	t.Helper()
	root := l.root(t, size)
	text := fmt.Sprintf("%s\n%d\n%s\n", l.origin, size, base64.StdEncoding.EncodeToString(root[:]))
	cp, err := note.Sign(&note.Note{Text: text}, l.signer)
	require.NoError(t, err)
	return cp
}

func (l *memLog) proof(t *testing.T, old, size int64) tlog.TreeProof {
	t.Helper()
	p, err := tlog.ProveTree(size, old, l.reader())
	require.NoError(t, err)
	return p
}

// witnessKey makes a witness signer key and the cosignature vkey that
// formats derives from its plain vkey.
func witnessKey(t *testing.T, name string) (skey, cosigVKey string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	require.NoError(t, err)
	cosigVKey, err = fnote.VKeyToCosignatureV1(vkey)
	require.NoError(t, err)
	return skey, cosigVKey
}

type witnessFixture struct {
	w     *transparency.Witness
	srv   *httptest.Server
	dir   string
	skey  string
	vkey  string
	log   *memLog
	cosig note.Verifier // formats' verifier of the witness's cosignatures
}

func newWitnessFixture(t *testing.T) *witnessFixture {
	t.Helper()
	f := &witnessFixture{dir: t.TempDir(), log: newMemLog(t, "example.com/audit-log")}
	f.skey, f.vkey = witnessKey(t, "witness.example/w1")
	var err error
	f.w, err = transparency.NewWitness(f.skey, f.dir, f.log.vkey)
	require.NoError(t, err)
	f.srv = httptest.NewServer(f.w)
	t.Cleanup(f.srv.Close)
	f.cosig, err = fnote.NewVerifierForCosignatureV1(f.vkey)
	require.NoError(t, err)
	return f
}

// post sends a raw add-checkpoint body and returns status, content type
// and body.
func (f *witnessFixture) post(t *testing.T, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(f.srv.URL+"/add-checkpoint", "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// monitored is what the witness serves to monitors for the log, and the
// status.
func (f *witnessFixture) monitored(t *testing.T) (int, string) {
	t.Helper()
	sum := sha256.Sum256([]byte(f.log.origin))
	resp, err := http.Get(f.srv.URL + "/" + hex.EncodeToString(sum[:]) + "/checkpoint")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// requireCosigned verifies cosig on checkpoint with formats' cosignature
// verifier and x/mod's note, and checks its timestamp.
func (f *witnessFixture) requireCosigned(t *testing.T, checkpoint, cosig []byte) {
	t.Helper()
	require.Equal(t, 1, bytes.Count(cosig, []byte("\n")), "one cosignature line: %q", cosig)
	require.True(t, bytes.HasPrefix(cosig, []byte("— witness.example/w1 ")), "%q", cosig)
	n, err := note.Open(append(bytes.Clone(checkpoint), cosig...), note.VerifierList(f.log.verifier, f.cosig))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 2, "the log's signature and the witness's cosignature verify")
	for _, s := range n.Sigs {
		if s.Name == f.cosig.Name() {
			ts, err := fnote.CoSigV1Timestamp(s)
			require.NoError(t, err)
			assert.Positive(t, ts.Unix(), "the cosignature carries a timestamp")
		}
	}
}

func TestWitnessCosignsFirstCheckpointAndGrowth(t *testing.T) {
	f := newWitnessFixture(t)
	assert.Equal(t, f.vkey, f.w.VKey(), "the witness's vkey is formats' cosignature/v1 form of its key")
	code, _ := f.monitored(t)
	assert.Equal(t, http.StatusNotFound, code, "nothing cosigned yet")

	f.log.grow(t, 5, "a")
	cp5 := f.log.checkpoint(t, 5)
	cosig, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 0, nil, cp5)
	require.NoError(t, err)
	f.requireCosigned(t, cp5, cosig)

	f.log.grow(t, 12, "a")
	cp12 := f.log.checkpoint(t, 12)
	cosig12, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL+"/", 5, f.log.proof(t, 5, 12), cp12)
	require.NoError(t, err)
	f.requireCosigned(t, cp12, cosig12)

	code, body := f.monitored(t)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, string(cp12)+string(cosig12), body, "monitors read the log's signature and the cosignature returned")

	// The same checkpoint again is consistent with itself.
	again, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 12, nil, cp12)
	require.NoError(t, err)
	f.requireCosigned(t, cp12, again)

	// The state outlives the process: a new witness on the directory
	// knows size 12 (and drops what a crash before a rename left).
	sum := sha256.Sum256([]byte(f.log.origin))
	stale := filepath.Join(f.dir, hex.EncodeToString(sum[:])+".tmp-123")
	require.NoError(t, os.WriteFile(stale, []byte("half a checkpoint"), 0o600))
	w2, err := transparency.NewWitness(f.skey, f.dir, f.log.vkey)
	require.NoError(t, err)
	srv2 := httptest.NewServer(w2)
	defer srv2.Close()
	_, err = transparency.AddCheckpoint(context.Background(), nil, srv2.URL, 5, f.log.proof(t, 5, 12), cp12)
	assert.Equal(t, &transparency.ConflictError{Size: 12}, err)
	assert.NoFileExists(t, stale)
	entries, err := os.ReadDir(f.dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "one state file per log, no temporary file left")
}

func TestWitnessConflictNamesItsSize(t *testing.T) {
	f := newWitnessFixture(t)
	f.log.grow(t, 7, "a")
	cp7 := f.log.checkpoint(t, 7)
	_, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 0, nil, cp7)
	require.NoError(t, err)

	f.log.grow(t, 9, "a")
	cp9 := f.log.checkpoint(t, 9)
	code, ctype, body := f.post(t, "old 0\n\n"+string(cp9))
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, "text/x.tlog.size", ctype)
	assert.Equal(t, "7\n", body)

	_, err = transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 3, f.log.proof(t, 3, 9), cp9)
	var conflict *transparency.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, int64(7), conflict.Size)

	// Cosign does the dance: old 0, 409 with 7, the proof from 7.
	var asked []int64
	cosig, err := transparency.Cosign(context.Background(), nil, f.srv.URL, cp9, func(old int64) (tlog.TreeProof, error) {
		asked = append(asked, old)
		return f.log.proof(t, old, 9), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int64{7}, asked)
	f.requireCosigned(t, cp9, cosig)

	// A witness ahead of the checkpoint cannot cosign it.
	_, err = transparency.Cosign(context.Background(), nil, f.srv.URL, cp7, func(int64) (tlog.TreeProof, error) {
		t.Fatal("no proof can help")
		return nil, nil
	})
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, int64(9), conflict.Size)
	assert.ErrorContains(t, err, "beyond this checkpoint's 7: submit a newer checkpoint")
}

func TestWitnessRefusesForks(t *testing.T) {
	f := newWitnessFixture(t)
	f.log.grow(t, 6, "a")
	cp6 := f.log.checkpoint(t, 6)
	_, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 0, nil, cp6)
	require.NoError(t, err)
	_, before := f.monitored(t)
	stateFile := filepath.Join(f.dir, func() string { s := sha256.Sum256([]byte(f.log.origin)); return hex.EncodeToString(s[:]) }())
	stored, err := os.ReadFile(stateFile)
	require.NoError(t, err)
	assert.Equal(t, before, string(stored), "the state file is what monitors read")

	// The same log key signs a second history.
	other := f.log.fork()
	other.grow(t, 6, "b")
	require.NotEqual(t, f.log.root(t, 6), other.root(t, 6))
	code, _, body := f.post(t, "old 6\n\n"+string(other.checkpoint(t, 6)))
	assert.Equal(t, http.StatusUnprocessableEntity, code)
	assert.Contains(t, body, "size 6 was cosigned with another root hash: refusing a fork")

	// A grown tree whose first 6 leaves differ: its own proof from 6 does
	// not lead from the root the witness cosigned.
	other.grow(t, 10, "b")
	_, err = transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 6, other.proof(t, 6, 10), other.checkpoint(t, 10))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "422 Unprocessable Entity: consistency proof from size 6 to 10 does not verify")
	// Nor does the honest log's proof with the fork's checkpoint.
	f.log.grow(t, 10, "a")
	_, err = transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 6, f.log.proof(t, 6, 10), other.checkpoint(t, 10))
	assert.ErrorContains(t, err, "422 Unprocessable Entity")

	_, after := f.monitored(t)
	assert.Equal(t, before, after, "a refused fork leaves the state as it was")
	stored, err = os.ReadFile(stateFile)
	require.NoError(t, err)
	assert.Equal(t, before, string(stored))
	// And the honest log goes on.
	cp10 := f.log.checkpoint(t, 10)
	cosig, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 6, f.log.proof(t, 6, 10), cp10)
	require.NoError(t, err)
	f.requireCosigned(t, cp10, cosig)
}

func TestWitnessRefusals(t *testing.T) {
	f := newWitnessFixture(t)
	f.log.grow(t, 4, "a")
	cp4 := string(f.log.checkpoint(t, 4))

	stranger := newMemLog(t, "example.com/another-log")
	stranger.grow(t, 4, "s")
	impostor := newMemLog(t, f.log.origin) // same origin, a key the witness does not trust
	impostor.grow(t, 4, "a")
	// The trusted key's signature, one byte of it changed.
	sigAt := strings.LastIndex(cp4, " ") + 1
	sigBytes, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(cp4[sigAt:], "\n"))
	require.NoError(t, err)
	sigBytes[10] ^= 1
	tampered := cp4[:sigAt] + base64.StdEncoding.EncodeToString(sigBytes) + "\n"

	emptyLog := f.log.fork()
	emptyText := fmt.Sprintf("%s\n0\n%s\n", f.log.origin, base64.StdEncoding.EncodeToString(make([]byte, 32)))
	wrongEmpty, err := note.Sign(&note.Note{Text: emptyText}, f.log.signer)
	require.NoError(t, err)

	hash := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name string
		body string
		code int
		msg  string
	}{
		{"unknown origin", "old 0\n\n" + string(stranger.checkpoint(t, 4)), 404, `unknown log origin "example.com/another-log"`},
		{"untrusted key", "old 0\n\n" + string(impostor.checkpoint(t, 4)), 403, "no signature of a key this witness trusts"},
		{"bad signature", "old 0\n\n" + tampered, 403, "signature by example.com/audit-log does not verify"},
		{"old beyond size", "old 5\n" + hash + "\n\n" + cp4, 400, "old size 5 is beyond the checkpoint's size 4"},
		{"no old line", "\n" + cp4, 400, `must start with a line "old <size>"`},
		{"old with leading zero", "old 00\n\n" + cp4, 400, `old size "00" is not a decimal number`},
		{"negative old", "old -1\n\n" + cp4, 400, `old size "-1"`},
		{"proof line not a hash", "old 0\nAAAA\n\n" + cp4, 400, "consistency proof line 1 is not the base64 of a 32-byte hash"},
		{"64 proof lines", "old 0\n" + strings.Repeat(hash+"\n", 64) + "\n" + cp4, 400, "more than 63 consistency proof lines"},
		{"no empty line", "old 0\n" + hash, 400, "must end with an empty line"},
		{"no checkpoint", "old 0\n\n", 400, "no checkpoint after the empty line"},
		{"not a note", "old 0\n\n" + f.log.origin + "\n4\n", 400, "not a signed note"},
		{"proof with old 0", "old 0\n" + hash + "\n\n" + cp4, 422, "old size 0 takes no consistency proof (1 lines sent)"},
		{"empty tree with a root", "old 0\n\n" + string(wrongEmpty), 422, "a checkpoint of size 0 must have the empty tree's root hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := f.post(t, tc.body)
			assert.Equal(t, tc.code, code, "body: %s", body)
			assert.Contains(t, body, tc.msg)
		})
	}
	code, _ := f.monitored(t)
	assert.Equal(t, http.StatusNotFound, code, "no refusal cosigned anything")

	// The empty tree with its right root is cosigned.
	cp0 := emptyLog.checkpoint(t, 0)
	cosig, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, 0, nil, cp0)
	require.NoError(t, err)
	f.requireCosigned(t, cp0, cosig)

	resp, err := http.Get(f.srv.URL + "/add-checkpoint")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	big := "old 0\n\n" + cp4 + strings.Repeat("x", 256<<10)
	code, _, _ = f.post(t, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
}

func TestNewWitnessRefusesBadConfiguration(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	skey, vkey := witnessKey(t, "witness.example/w1")
	dir := t.TempDir()
	tests := []struct {
		name       string
		skey, dir  string
		logs       []string
		wantErrMsg string
	}{
		{"no log", skey, dir, nil, "at least one log verifier key"},
		{"a vkey as signer", vkey, dir, []string{log.vkey}, "witness signer key"},
		{"a cosignature vkey as log", skey, dir, []string{vkey}, "log key"},
		{"missing directory", skey, filepath.Join(dir, "nope"), []string{log.vkey}, "witness state directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := transparency.NewWitness(tc.skey, tc.dir, tc.logs...)
			assert.ErrorContains(t, err, tc.wantErrMsg)
		})
	}

	// A state file the log's key does not verify is refused, named.
	sum := sha256.Sum256([]byte(log.origin))
	state := filepath.Join(dir, hex.EncodeToString(sum[:]))
	other := newMemLog(t, log.origin)
	require.NoError(t, os.WriteFile(state, other.checkpoint(t, 0), 0o600))
	_, err := transparency.NewWitness(skey, dir, log.vkey)
	assert.ErrorContains(t, err, "witness state "+state+" of log example.com/log does not verify")
}

// TestWitnessConcurrentSubmissionsNeverRollBack: submitters racing with
// checkpoints of many sizes never see the witness move back, and its final
// state is the largest checkpoint any of them got cosigned.
func TestWitnessConcurrentSubmissionsNeverRollBack(t *testing.T) {
	f := newWitnessFixture(t)
	const maxSize = 48
	f.log.grow(t, maxSize, "a")
	cps := make([][]byte, maxSize+1)
	for n := range cps {
		cps[n] = f.log.checkpoint(t, int64(n))
	}
	var (
		mu      sync.Mutex
		largest int64
		wg      sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			var seen int64 // the witness's size as this submitter last learned it
			for n := int64(g + 1); n <= maxSize; n += 8 {
				if seen > n {
					continue // the witness is beyond n already
				}
				// Until cosigned or the witness is beyond n: each 409 names a
				// larger size, so this ends.
				old := seen
				for {
					var consistency tlog.TreeProof
					if old > 0 && old < n {
						var err error
						consistency, err = tlog.ProveTree(n, old, f.log.reader())
						if !assert.NoError(t, err) {
							return
						}
					}
					cosig, err := transparency.AddCheckpoint(context.Background(), nil, f.srv.URL, old, consistency, cps[n])
					var conflict *transparency.ConflictError
					if errors.As(err, &conflict) {
						assert.GreaterOrEqual(t, conflict.Size, seen, "the witness's size went back")
						seen, old = conflict.Size, conflict.Size
						if conflict.Size > n {
							break
						}
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					_, err = note.Open(append(bytes.Clone(cps[n]), cosig...), note.VerifierList(f.cosig))
					assert.NoError(t, err)
					seen = n
					mu.Lock()
					largest = max(largest, n)
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	_, body := f.monitored(t)
	n, err := note.Open([]byte(body), note.VerifierList(f.log.verifier, f.cosig))
	require.NoError(t, err)
	c, err := torchwood.ParseCheckpoint(n.Text)
	require.NoError(t, err)
	assert.Equal(t, largest, c.N, "the state is the largest cosigned checkpoint")
	assert.Equal(t, int64(maxSize), largest, "a submission of the largest size cannot be refused: nothing is beyond it")
}
