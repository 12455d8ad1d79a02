package transparency

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"
)

// ErrLogMismatch is matched by VerifyLog's error: the log does not hold
// the history the checkpoint signed.
var ErrLogMismatch = errors.New("the log does not match the checkpoint")

// LogReport is what VerifyLog found.
type LogReport struct {
	Records int64     // complete lines in the log
	Root    tlog.Hash // the RFC 6962 root of its first checkpoint-size records (if it has that many)
}

// VerifyLog reads a whole log and checks that its first c.Size records
// give c.Root: a log truncated below the checkpoint, or rewritten or forked
// within it, fails with an error matching ErrLogMismatch that says which.
// Records past c.Size (the log grew) are counted, not checked.
//
// It computes the tree itself, from the lines, without a Tree's stored
// hashes. When tree is not nil and holds the checkpoint's history (its root
// at c.Size is c.Root, as for the tree of the log before it was changed),
// the error also names the first record that differs from the one the tree
// hashed.
func VerifyLog(r io.Reader, c Checkpoint, tree *Tree) (LogReport, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var rep LogReport
	var stack []tlog.Hash // roots of the perfect subtrees so far, largest first
	firstDiff := int64(-1)
	known := tree != nil && tree.Size() >= c.Size && c.Size > 0
	if known {
		if h, err := tree.Root(c.Size); err != nil || h != c.Root {
			known = false
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			break // a torn last line is no record
		}
		if err != nil {
			return rep, fmt.Errorf("transparency: read the log: %w", err)
		}
		i := rep.Records
		rep.Records++
		if i >= c.Size {
			continue
		}
		h := tlog.RecordHash(line[:len(line)-1])
		if known && firstDiff < 0 {
			if want, err := tree.leaf(i); err == nil && want != h {
				firstDiff = i
			}
		}
		stack = append(stack, h)
		for k := i + 1; k&1 == 0; k >>= 1 {
			n := len(stack)
			stack = append(stack[:n-2], tlog.NodeHash(stack[n-2], stack[n-1]))
		}
	}
	if rep.Records < c.Size {
		return rep, fmt.Errorf("transparency: %w: the log has %d records, the checkpoint signed %d: %s removed from its end (truncated)", ErrLogMismatch, rep.Records, c.Size, removed(c.Size-rep.Records))
	}
	if len(stack) > 0 {
		rep.Root = stack[len(stack)-1]
		for j := len(stack) - 2; j >= 0; j-- {
			rep.Root = tlog.NodeHash(stack[j], rep.Root)
		}
	} else {
		rep.Root = emptyRoot()
	}
	if rep.Root != c.Root {
		if firstDiff >= 0 {
			return rep, fmt.Errorf("transparency: %w: record %d (seq %d) is not the one the checkpoint of size %d covers: the log was rewritten from there", ErrLogMismatch, firstDiff, firstDiff+1, c.Size)
		}
		return rep, fmt.Errorf("transparency: %w: its first %d records give the root %s, the checkpoint signed %s: the log was rewritten, or the checkpoint is of another history (a fork)", ErrLogMismatch, c.Size, base64.StdEncoding.EncodeToString(rep.Root[:]), base64.StdEncoding.EncodeToString(c.Root[:]))
	}
	return rep, nil
}

// emptyRoot is the root of the empty tree: SHA-256 of nothing (RFC 6962).
func emptyRoot() tlog.Hash {
	h, _ := tlog.TreeHash(0, tlog.HashReaderFunc(func([]int64) ([]tlog.Hash, error) { return nil, nil }))
	return h
}

// leaf is the hash the tree holds for record i.
func (t *Tree) leaf(i int64) (tlog.Hash, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i < 0 || i >= t.n {
		return tlog.Hash{}, fmt.Errorf("record %d is not in the tree", i)
	}
	h, err := hashReader{t}.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
	if err != nil {
		return tlog.Hash{}, err
	}
	return h[0], nil
}

func removed(n int64) string {
	if n == 1 {
		return "1 record was"
	}
	return fmt.Sprintf("%d records were", n)
}
