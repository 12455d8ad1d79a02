package transparency_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
)

// proofSizes are the log sizes proof latency is measured at: it should
// grow with log2 of the size, not with the size.
var proofSizes = []int64{1_000, 10_000, 100_000, 1_000_000}

// writeChainShaped writes a log of n lines that continue the chain as a
// Tree checks it (seq one more each, prev naming the last line's hash),
// without BLAKE3 or canonical JSON: a Tree reads only seq, prev and hash,
// so a log of a million lines is written in a second or two. The lines'
// length (about 200 bytes) is a small verdict's; proofs never read them.
func writeChainShaped(b *testing.B, path string, n int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	prev := audit.GenesisPrev
	line := make([]byte, 0, 256)
	for seq := int64(1); seq <= n; seq++ {
		hash := fmt.Sprintf("%064x", seq)
		line = append(line[:0], `{"event_type":"action_audit","action":"math.sum@1.0.0","status":"SUCCESS","reason_codes":[],"fuel_used":`...)
		line = strconv.AppendInt(line, seq%997, 10)
		line = append(line, `,"seq":`...)
		line = strconv.AppendInt(line, seq, 10)
		line = append(line, `,"prev":"`...)
		line = append(line, prev...)
		line = append(line, `","hash":"`...)
		line = append(line, hash...)
		line = append(line, "\"}\n"...)
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
		prev = hash
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInclusionProof is the latency of an inclusion proof from a
// Tree already open (what a server answers with): Tree.InclusionProof and
// Tree.Root at the tree's size, for the first record and the last, by log
// size. The log and its tree are built once per size, unmeasured.
func BenchmarkInclusionProof(b *testing.B) {
	for _, n := range proofSizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "audit.jsonl")
			writeChainShaped(b, path, n)
			tree, err := transparency.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer tree.Close()
			for _, i := range []int64{0, n - 1} {
				name := "first"
				if i > 0 {
					name = "last"
				}
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						p, err := tree.InclusionProof(i, n)
						if err != nil {
							b.Fatal(err)
						}
						root, err := tree.Root(n)
						if err != nil {
							b.Fatal(err)
						}
						if len(p) == 0 && n > 1 || root == (tlog.Hash{}) {
							b.Fatal("empty proof or root")
						}
					}
				})
			}
		})
	}
}

// BenchmarkProveRecord1Of1M is `wasmgate audit prove LOG --seq 1` on a
// log of a million records whose tree exists, as one call does it: open
// the tree (which checks the log for new records), sign a checkpoint at
// its size (which makes the tree's files durable: fsyncs), prove record 0
// and check the proof, close. Issue 27's target: ≤ 10 ms.
func BenchmarkProveRecord1Of1M(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	writeChainShaped(b, path, n)
	first, err := transparency.Open(path) // builds the tree, unmeasured
	if err != nil {
		b.Fatal(err)
	}
	if err := first.Close(); err != nil {
		b.Fatal(err)
	}
	signer, _, _ := newKey(b, "example.com/audit")
	for b.Loop() {
		tree, err := transparency.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		p, err := tree.Prove(signer, 0)
		if err != nil {
			b.Fatal(err)
		}
		if p.Index != 0 || len(p.Path) != 20 {
			b.Fatalf("proof of index %d with %d hashes, want index 0 and 20 (log2 of a million, rounded up)", p.Index, len(p.Path))
		}
		if err := tree.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
