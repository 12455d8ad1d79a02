package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
	"github.com/wasmgate/wasmgate/pipeline"
)

// logProcess is a `wasmgate log` run in-process that the test stops.
type logProcess struct {
	url    string
	stderr *syncBuffer
	stop   func() int // cancels the command, waits for it, returns its exit code
}

// startLogNATS runs `wasmgate log --nats url --mirror mirror --audit-key
// key` in-process and returns once it is listening.
func startLogNATS(t *testing.T, url, mirror, key string) *logProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &logProcess{stderr: &syncBuffer{}}
	done := make(chan int, 1)
	args := []string{"log", "--nats", url, "--mirror", mirror, "--audit-key", key, "--addr", "127.0.0.1:0"}
	go func() { done <- run(ctx, args, strings.NewReader(""), &syncBuffer{}, p.stderr) }()
	code, stopped := -1, false
	p.stop = func() int {
		if !stopped {
			cancel()
			select {
			case code = <-done:
			case <-time.After(natsWait):
				t.Fatalf("wasmgate log did not stop within %s of its context's end:\n%s", natsWait, p.stderr)
			}
			stopped = true
		}
		return code
	}
	t.Cleanup(func() { p.stop() })
	deadline := time.After(natsWait)
	for p.url == "" {
		select {
		case code := <-done:
			t.Fatalf("wasmgate log exited %d before it was listening:\n%s", code, p.stderr)
		case <-deadline:
			t.Fatalf("wasmgate log not listening within %s:\n%s", natsWait, p.stderr)
		case <-time.After(5 * time.Millisecond):
			p.url = servedURL(p.stderr.String())
		}
	}
	return p
}

// runSums runs n actions on the deployment, each with a trace id of its
// own, and returns the trace ids.
func runSums(t *testing.T, url string, from, n int) []string {
	t.Helper()
	var traces []string
	for i := range n {
		trace := pipeline.NewTraceID()
		r := wasmgate(t, "", "run", "--nats", url, "--action", "math.sum",
			"--input", fmt.Sprintf(`{"numbers":[1,%d]}`, from+i), "--trace-id", trace)
		require.Equal(t, exitSuccess, r.code, "%s%s", r.stdout, r.stderr)
		traces = append(traces, trace)
	}
	return traces
}

// exportedChain is the deployment's chain as `wasmgate audit export`
// writes it, and the leaf index of each trace's verdict in it.
func exportedChain(t *testing.T, url string) (string, map[string]int64) {
	t.Helper()
	ex := wasmgate(t, "", "audit", "export", "--nats", url)
	require.Equal(t, exitSuccess, ex.code, ex.stderr)
	verdicts := map[string]int64{}
	i := int64(0)
	for line := range strings.Lines(ex.stdout) {
		var rec audit.Record
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		require.Equal(t, uint64(i+1), rec.Seq)
		if rec.EventType == audit.EventActionAudit {
			verdicts[rec.TraceID] = i
		}
		i++
	}
	return ex.stdout, verdicts
}

// TestNATSLogMirror: `wasmgate log --nats --mirror` publishes a
// deployment's audit chain live: its checkpoint (verified with sumdb/note
// and transparency-dev/formats) grows to cover the verdicts of actions run
// after it started, the entries torchwood's tlog client reads are the
// exported chain's lines, and the mirror is the export byte for byte.
// Started again on the same mirror it continues: nothing is copied twice,
// and its checkpoints extend the first run's. A mirror that is not a
// prefix of the chain, or is torn, is refused, naming what to do.
func TestNATSLogMirror(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	publishNATS(t, url, td("registry.json"))
	startWorker(t, url)
	before := runSums(t, url, 0, 2)

	key, v := writeLogKey(t, "example.com/nats-chain")
	mirror := filepath.Join(t.TempDir(), "chain.jsonl")
	lp := startLogNATS(t, url, mirror, key)
	assert.Contains(t, lp.stderr.String(), "nats=WASMGATE_AUDIT origin=example.com/nats-chain")
	fi, err := os.Stat(mirror)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the mirror is created 0600")

	after := runSums(t, url, 2, 2)
	chain, verdicts := exportedChain(t, url)
	lines := strings.SplitAfter(chain, "\n")
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 8, "an attempt and a verdict for each of 4 actions")
	first := checkpointCovering(t, lp.url, v, uint64(len(lines)))
	require.EqualValues(t, len(lines), first.Size, "nothing was stored past the export")
	for _, trace := range append(before, after...) {
		i, ok := verdicts[trace]
		require.True(t, ok, "the chain holds the verdict of %s", trace)
		assert.Equal(t, strings.TrimSuffix(lines[i], "\n"), string(entryVia(t, lp.url, first, i)), "leaf %d, the verdict of %s", i, trace)
	}
	for i := range lines {
		assert.Equal(t, strings.TrimSuffix(lines[i], "\n"), string(entryVia(t, lp.url, first, int64(i))), "leaf %d", i)
	}
	got, err := os.ReadFile(mirror)
	require.NoError(t, err)
	assert.Equal(t, chain, string(got), "the mirror is the chain as exported")
	require.Equal(t, exitSuccess, lp.stop(), lp.stderr.String())

	// Records stored while no log ran are copied by the next, once.
	later := runSums(t, url, 4, 1)
	lp = startLogNATS(t, url, mirror, key)
	assert.Contains(t, lp.stderr.String(), "size=8", "the restart publishes the mirror it found")
	chain, verdicts = exportedChain(t, url)
	lines = strings.SplitAfter(chain, "\n")
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 10)
	grown := checkpointCovering(t, lp.url, v, uint64(len(lines)))
	require.EqualValues(t, len(lines), grown.Size)
	i := verdicts[later[0]]
	assert.Equal(t, strings.TrimSuffix(lines[i], "\n"), string(entryVia(t, lp.url, grown, i)))
	got, err = os.ReadFile(mirror)
	require.NoError(t, err)
	assert.Equal(t, chain, string(got), "no record copied twice")
	vr := wasmgate(t, "", "audit", "verify", mirror)
	assert.Equal(t, exitSuccess, vr.code, vr.stdout+vr.stderr)

	// The second run's checkpoint extends the first's: a consistency
	// proof from the mirror's tree checks with sumdb/tlog.
	tree, err := transparency.Open(mirror)
	require.NoError(t, err)
	proof, err := tree.ConsistencyProof(int64(first.Size), int64(grown.Size))
	require.NoError(t, err)
	require.NoError(t, tree.Close())
	require.NoError(t, tlog.CheckTree(proof, int64(grown.Size), tlog.Hash(grown.Hash), int64(first.Size), tlog.Hash(first.Hash)))

	// One process at a time keeps a mirror.
	r := wasmgate(t, "", "log", "--nats", url, "--mirror", mirror, "--audit-key", key, "--addr", "127.0.0.1:0")
	assert.Equal(t, exitInternal, r.code)
	assert.Equal(t, "wasmgate log: --mirror "+mirror+": another process keeps it (a 'wasmgate log --nats' with the same --mirror)\n", r.stderr)
	require.Equal(t, exitSuccess, lp.stop(), lp.stderr.String())

	t.Run("refused", func(t *testing.T) {
		edited := strings.Replace(lines[1], `"seq":2`, `"seq":2,"x":1`, 1)
		require.NotEqual(t, lines[1], edited)
		dir := t.TempDir()
		for _, tt := range []struct {
			name, content, want string
		}{
			{"not a prefix", lines[0] + edited,
				"audit stream WASMGATE_AUDIT: record 2 differs from the copy's last line: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again); give a new --mirror FILE to copy this chain from its start"},
			{"longer than the chain", chain + strings.Replace(lines[9], `"seq":10`, `"seq":11`, 1),
				"audit stream WASMGATE_AUDIT holds 10 records, fewer than the 11 of the copy: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again); give a new --mirror FILE to copy this chain from its start"},
			{"torn", lines[0] + lines[1][:20],
				"ends in a torn line (an append cut short by a crash or a full disk): run 'wasmgate audit repair MIRROR' to cut it back to its last complete record"},
			{"not a chain", "{\"hello\":1}\n",
				"its last line is not an audit record (no seq): a --mirror holds a deployment's audit chain and nothing else; give a new file"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".jsonl")
				require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))
				r := wasmgate(t, "", "log", "--nats", url, "--mirror", path, "--audit-key", key, "--addr", "127.0.0.1:0")
				assert.Equal(t, exitInternal, r.code, r.stderr)
				want := "wasmgate log: --mirror " + path + ": " + strings.ReplaceAll(tt.want, "MIRROR", path) + "\n"
				assert.Equal(t, want, r.stderr)
				after, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, tt.content, string(after), "a refused mirror is left as it was")
			})
		}
	})
}

// TestNATSLogUsage: the flags of `wasmgate log --nats` that do not go
// together are refused before anything is opened.
func TestNATSLogUsage(t *testing.T) {
	key, _ := writeLogKey(t, "example.com/audit")
	mirror := filepath.Join(t.TempDir(), "m.jsonl")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no mirror", []string{"--nats", "nats://127.0.0.1:1", "--audit-key", key},
			"wasmgate log: --nats needs --mirror FILE: the local copy of the chain that is published\n"},
		{"a log too", []string{"a.jsonl", "--nats", "nats://127.0.0.1:1", "--mirror", mirror, "--audit-key", key},
			"wasmgate log: --nats publishes the deployment's chain, copied to --mirror FILE: no log argument (\"a.jsonl\")\n"},
		{"mirror without nats", []string{"--mirror", mirror, "--audit-key", key},
			"wasmgate log: --mirror keeps a copy of a NATS deployment's chain: give --nats URL too\n"},
		{"no key", []string{"--nats", "nats://127.0.0.1:1", "--mirror", mirror},
			"wasmgate log: --audit-key KEYFILE is required: make one with 'wasmgate audit keygen --origin ORIGIN --out KEYFILE'\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"log"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, tt.want), "got:\n%s\nwant:\n%s", r.stderr, tt.want)
		})
	}
	_, err := os.Stat(mirror)
	assert.ErrorIs(t, err, os.ErrNotExist, "no mirror made on a usage error")
}
