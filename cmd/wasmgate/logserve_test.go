package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	formatslog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
)

// logWait bounds how long a test waits for a published log to sign a
// checkpoint covering a record: it is re-signed every second, so this is
// only ever reached when something is broken.
const logWait = 30 * time.Second

// writeLogKey writes a checkpoint signer key for origin to a file, as
// 'wasmgate audit keygen' does, and returns its path and verifier.
func writeLogKey(t *testing.T, origin string) (string, note.Verifier) {
	t.Helper()
	skey, vkey, err := transparency.GenerateKey(origin)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "log.key")
	require.NoError(t, os.WriteFile(path, []byte(skey+"\n"), 0o600))
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	return path, v
}

// checkpointCovering polls base's /checkpoint until it covers size
// records, verifying each with sumdb/note and transparency-dev/formats,
// and returns the last.
func checkpointCovering(t *testing.T, base string, v note.Verifier, size uint64) *formatslog.Checkpoint {
	t.Helper()
	deadline := time.Now().Add(logWait)
	for {
		resp, err := http.Get(base + "/checkpoint")
		require.NoError(t, err)
		body := new(bytes.Buffer)
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
		_, err = note.Open(body.Bytes(), note.VerifierList(v))
		require.NoError(t, err, "the checkpoint verifies with sumdb/note")
		c, _, _, err := formatslog.ParseCheckpoint(body.Bytes(), v.Name(), v)
		require.NoError(t, err, "the checkpoint parses with transparency-dev/formats")
		if c.Size >= size {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint covering %d records within %s: the last has %d", size, logWait, c.Size)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// entryVia reads record index of the log base publishes with torchwood's
// tlog client, which checks every tile against the checkpoint's root.
func entryVia(t *testing.T, base string, c *formatslog.Checkpoint, index int64) []byte {
	t.Helper()
	fetcher, err := torchwood.NewTileFetcher(base)
	require.NoError(t, err)
	client, err := torchwood.NewClient(fetcher)
	require.NoError(t, err)
	entry, _, err := client.Entry(context.Background(), tlog.Tree{N: int64(c.Size), Hash: tlog.Hash(c.Hash)}, index)
	require.NoError(t, err)
	return entry
}

// logLine is the line of the record with seq in an audit log.
func logLine(t *testing.T, path string, seq uint64) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	require.GreaterOrEqual(t, uint64(len(lines)), seq)
	var rec struct{ Seq uint64 }
	require.NoError(t, json.Unmarshal(lines[seq-1], &rec))
	require.Equal(t, seq, rec.Seq)
	return lines[seq-1]
}

// TestServePublishesTheAuditLog: serve --audit-key answers a call with its
// verdict's leaf index, and publishes the log, without the API key, as a
// C2SP log that standard clients read: the checkpoint comes to cover the
// verdict, and the entry torchwood reads at that index is the log's line.
func TestServePublishesTheAuditLog(t *testing.T) {
	t.Setenv("EXECUTOR_API_KEY", "sekret")
	key, v := writeLogKey(t, "example.com/wasmgate-test")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	b := startBackground(t, func(s string) bool { return servedURL(s) != "" && strings.Contains(s, "publishing the audit log") },
		"serve", "--addr", "127.0.0.1:0", "--config", sumRegistry(t), "--tools-dir", t.TempDir(),
		"--audit", log, "--audit-key", key, "--auth-all")
	url := servedURL(b.stderr.String())
	vkey := fmt.Sprintf("%s+%08x+", v.Name(), v.KeyHash())
	assert.Contains(t, b.stderr.String(), "origin=example.com/wasmgate-test vkey="+vkey, "the start names the origin and the verifier key")

	c := newProtocolClient(url, "sekret")
	var indexes []uint64
	for i := range 3 {
		r := c.do(t, http.MethodPost, "/execute-tool", call("math.sum", "", "math.sum", fmt.Sprintf(`{"numbers":[1,%d]}`, i)))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var body struct {
			Success  bool
			Wasmgate struct {
				TraceID    string  `json:"traceId"`
				AuditIndex *uint64 `json:"auditIndex"`
			}
		}
		require.NoError(t, json.Unmarshal(r.body, &body))
		require.True(t, body.Success, "%s", r.body)
		require.NotNil(t, body.Wasmgate.AuditIndex, "the result names its verdict's leaf: %s", r.body)
		// An attempt, then its verdict: leaves 1, 3, 5.
		assert.EqualValues(t, 2*i+1, *body.Wasmgate.AuditIndex)
		line := logLine(t, log, *body.Wasmgate.AuditIndex+1)
		assert.Contains(t, string(line), `"event_type":"action_audit"`)
		assert.Contains(t, string(line), `"trace_id":"`+body.Wasmgate.TraceID+`"`)
		indexes = append(indexes, *body.Wasmgate.AuditIndex)
	}

	// The log's routes are public: no key, even with --auth-all; the
	// protocol's routes still want it.
	cp := checkpointCovering(t, url, v, indexes[2]+1)
	assert.Equal(t, "example.com/wasmgate-test", cp.Origin)
	for _, i := range indexes {
		assert.Equal(t, logLine(t, log, i+1), entryVia(t, url, cp, int64(i)))
	}
	noKey := newProtocolClient(url, "")
	assert.Equal(t, http.StatusUnauthorized, noKey.do(t, http.MethodGet, "/info", "").status)
	tile := noKey.do(t, http.MethodGet, fmt.Sprintf("/tile/entries/000.p/%d", cp.Size), "")
	assert.Equal(t, http.StatusOK, tile.status, "%s", tile.body)
	assert.Equal(t, "public, max-age=31536000, immutable", tile.header.Get("Cache-Control"))
	assert.Equal(t, http.StatusNotFound, noKey.do(t, http.MethodGet, "/tile/entries/000.p/200", "").status, "beyond the checkpoint")
}

func TestServeAuditKeyRefusals(t *testing.T) {
	key, _ := writeLogKey(t, "example.com/audit")
	vkeyFile := filepath.Join(t.TempDir(), "log.vkey")
	_, vkey, err := transparency.GenerateKey("example.com/audit")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(vkeyFile, []byte(vkey+"\n"), 0o644))
	missing := filepath.Join(t.TempDir(), "nope.key")
	junk := filepath.Join(t.TempDir(), "junk.key")
	require.NoError(t, os.WriteFile(junk, []byte("PRIVATE+KEY+example.com/audit+0000+AAAA\n"), 0o600))
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no --audit", []string{"--audit-key", key},
			"wasmgate serve: --audit-key publishes the --audit log: give --audit FILE too\n"},
		{"a verifier key", []string{"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--audit-key", vkeyFile},
			"wasmgate serve: --audit-key " + vkeyFile + ": a verifier key, which checks checkpoints but cannot sign them: give the signer key 'wasmgate audit keygen' wrote to its --out file\n"},
		{"not a key", []string{"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--audit-key", junk},
			"wasmgate serve: --audit-key " + junk + ": not a signer key (PRIVATE+KEY+ORIGIN+HASH+KEY): malformed verifier id; make one with 'wasmgate audit keygen --origin ORIGIN --out " + junk + "'\n"},
		{"no such file", []string{"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--audit-key", missing},
			"wasmgate serve: --audit-key: open " + missing + ": no such file or directory\n"},
		{"with --nats", []string{"--nats", "nats://127.0.0.1:1", "--audit-key", key},
			"wasmgate serve: --audit-key does not apply with --nats: the workers hold the registry and the audit chain (publish the registry with 'wasmgate publish')\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, "a bad key file is a usage error, as for the audit commands: %s", r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, tt.want), "got:\n%s\nwant:\n%s", r.stderr, tt.want)
		})
	}
}

// TestServeLogFollowsAnotherProcess: `wasmgate log` publishes a log a
// FileSink of another writer keeps appending to, and its checkpoints
// grow with it, consistently.
func TestServeLogFollowsAnotherProcess(t *testing.T) {
	key, v := writeLogKey(t, "example.com/follow")
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(path)
	require.NoError(t, err)
	defer sink.Close()
	appendRecords := func(n int, round int) {
		for i := range n {
			_, err := sink.Append(context.Background(), audit.Record{
				Action: "a@1.0.0", ExecutorID: "a", Status: "BLOCKED", ReasonCodes: []string{"EXECUTOR_NOT_FOUND"},
				TraceID: fmt.Sprintf("00000000-0000-4000-8000-%012d", round*1000+i), TsUTC: "2025-01-01T00:00:00Z",
				InputDigest: audit.Digest([]byte("x")),
			})
			require.NoError(t, err)
		}
	}
	appendRecords(5, 0)
	b := startBackground(t, func(s string) bool { return servedURL(s) != "" },
		"log", path, "--audit-key", key, "--addr", "127.0.0.1:0")
	url := servedURL(b.stderr.String())
	assert.Contains(t, b.stderr.String(), "origin=example.com/follow")
	assert.Contains(t, b.stderr.String(), "size=5")

	first := checkpointCovering(t, url, v, 5)
	require.EqualValues(t, 5, first.Size)
	assert.Equal(t, logLine(t, path, 3), entryVia(t, url, first, 2))

	appendRecords(300, 1)
	grown := checkpointCovering(t, url, v, 305)
	require.EqualValues(t, 305, grown.Size)
	for _, i := range []int64{0, 4, 255, 256, 304} {
		assert.Equal(t, logLine(t, path, uint64(i)+1), entryVia(t, url, grown, i), "record %d", i)
	}
	// The grown tree extends the first: a consistency proof between them,
	// from the published log's tree, checks with sumdb/tlog.
	tree, err := transparency.Open(path)
	require.NoError(t, err)
	defer tree.Close()
	proof, err := tree.ConsistencyProof(5, 305)
	require.NoError(t, err)
	require.NoError(t, tlog.CheckTree(proof, 305, tlog.Hash(grown.Hash), 5, tlog.Hash(first.Hash)))

	r, err := http.Get(url + "/execute-tool")
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusNotFound, r.StatusCode, "a published log serves its routes only")
}

func TestServeLogRefusals(t *testing.T) {
	key, _ := writeLogKey(t, "example.com/audit")
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no log", []string{"--audit-key", key}, exitUsage, "wasmgate log: want one audit log (wasmgate log LOG --audit-key KEYFILE), got 0 arguments\n"},
		{"no key", []string{missing}, exitUsage, "wasmgate log: --audit-key KEYFILE is required: make one with 'wasmgate audit keygen --origin ORIGIN --out KEYFILE'\n"},
		{"no such log", []string{missing, "--audit-key", key}, exitInternal, "wasmgate log: audit log: stat " + missing + ": no such file or directory\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"log"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, tt.want), "got:\n%s\nwant:\n%s", r.stderr, tt.want)
		})
	}
}

// takeChainIndex removes the leaf index a result from a NATS deployment
// carries (key, in m or, with nested, in m[nested]) and checks that it
// names a verdict of the deployment's audit chain (as `wasmgate audit
// export` writes it) with the result's trace id, action and input digest.
// It returns the index.
func takeChainIndex(t *testing.T, url string, m map[string]any, nested, key string) uint64 {
	t.Helper()
	res := m
	if nested != "" {
		res = m[nested].(map[string]any)
	}
	raw, ok := res[key]
	require.True(t, ok, "a result from the deployment names its verdict's leaf (%s): %v", key, m)
	delete(res, key)
	index := uint64(raw.(float64))
	out := wasmgate(t, "", "audit", "export", "--nats", url)
	require.Equal(t, exitSuccess, out.code, out.stderr)
	lines := strings.Split(strings.TrimSuffix(out.stdout, "\n"), "\n")
	require.Less(t, index, uint64(len(lines)), "leaf %d of a chain of %d records", index, len(lines))
	var rec audit.Record
	require.NoError(t, json.Unmarshal([]byte(lines[index]), &rec))
	assert.Equal(t, index+1, rec.Seq)
	assert.Equal(t, audit.EventActionAudit, rec.EventType, "leaf %d is a verdict", index)
	for _, f := range [][2]string{{"trace_id", rec.TraceID}, {"traceId", rec.TraceID}, {"action", rec.Action}, {"input_digest", rec.InputDigest}, {"inputDigest", rec.InputDigest}} {
		if v, ok := res[f[0]]; ok {
			assert.Equal(t, f[1], v, "leaf %d's %s", index, f[0])
		}
	}
	return index
}
