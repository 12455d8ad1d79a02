package transparency_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	formatslog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
)

// TestServerFollowsALiveSink appends to a FileSink while the server
// refreshes its checkpoint and clients read it: every checkpoint served is
// consistent with the one before, and never covers a record the sink had
// not made durable (the race pass runs it: RACE_TESTS).
func TestServerFollowsALiveSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(path)
	require.NoError(t, err)
	defer sink.Close()
	tree, err := transparency.OpenFollowing(path)
	require.NoError(t, err)
	defer tree.Close()
	signer, verifier, _ := newKey(t, "example.com/audit")
	durable := func() int64 { _, size := sink.Durable(); return size }
	srv, err := transparency.NewServer(tree, signer, durable)
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := sink.Append(context.Background(), audit.Record{
					Action: "a@1.0.0", ExecutorID: "a", Status: "BLOCKED", ReasonCodes: []string{"EXECUTOR_NOT_FOUND"},
					TraceID: fmt.Sprintf("w%d-%d", w, i), TsUTC: "2025-01-01T00:00:00Z", InputDigest: audit.Digest([]byte("x")),
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var prev tlog.Tree
	check := func() {
		require.NoError(t, srv.Refresh())
		resp, err := hs.Client().Get(hs.URL + "/checkpoint")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		c, _, _, err := formatslog.ParseCheckpoint(body, "example.com/audit", verifier)
		require.NoError(t, err)
		records, _ := sink.Durable()
		require.LessOrEqual(t, c.Size, records, "a checkpoint covers only durable records")
		cur := tlog.Tree{N: int64(c.Size), Hash: tlog.Hash(c.Hash)}
		if prev.N > 0 && cur.N > prev.N {
			p, err := tree.ConsistencyProof(prev.N, cur.N)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckTree(p, cur.N, cur.Hash, prev.N, prev.Hash))
		}
		require.GreaterOrEqual(t, cur.N, prev.N)
		prev = cur
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		check()
	}
	check()
	require.EqualValues(t, writers*each, prev.N)
}
