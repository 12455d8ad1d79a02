package transparency

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// proofHeader is the first line of a C2SP tlog-proof.
const proofHeader = "c2sp.org/tlog-proof@v1"

// Proof is an offline-verifiable proof that a record is in the log (C2SP
// tlog-proof, stored as a .tlog-proof file): its leaf index, the RFC 6962
// inclusion path in the checkpointed tree, and the signed checkpoint, with
// any witness cosignatures.
type Proof struct {
	Index      int64
	Path       tlog.RecordProof
	Checkpoint []byte // the signed note, verbatim
	Extra      []byte // optional, not authenticated
}

// Marshal is the proof's text.
func (p Proof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(proofHeader + "\n")
	if p.Extra != nil {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	b.WriteString("index " + strconv.FormatInt(p.Index, 10) + "\n")
	for _, h := range p.Path {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseProof parses a C2SP tlog-proof.
func ParseProof(text []byte) (Proof, error) {
	bad := func(format string, args ...any) (Proof, error) {
		return Proof{}, fmt.Errorf("transparency: not a c2sp.org/tlog-proof@v1: "+format, args...)
	}
	head, cp, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return bad("no empty line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != proofHeader {
		return bad("the first line is %.40q, want %q", lines[0], proofHeader)
	}
	var p Proof
	lines = lines[1:]
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		e, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[0], "extra "))
		if err != nil {
			return bad("the extra line is not base64: %v", err)
		}
		p.Extra = e
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return bad("no index line")
	}
	idx := strings.TrimPrefix(lines[0], "index ")
	i, err := strconv.ParseInt(idx, 10, 64)
	if err != nil || i < 0 || (len(idx) > 1 && idx[0] == '0') || idx[0] == '+' {
		return bad("index %q is not a decimal without leading zeroes", idx)
	}
	p.Index = i
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != tlog.HashSize {
			return bad("inclusion proof line %q is not a base64 SHA-256 hash", l)
		}
		p.Path = append(p.Path, tlog.Hash(h))
	}
	if len(p.Path) > 63 {
		return bad("%d inclusion proof hashes; a tree of at most 2^63 records needs at most 63", len(p.Path))
	}
	p.Checkpoint = cp
	return p, nil
}

// Prove makes the proof that record i (seq i+1) is in the tree, with a
// checkpoint signer signs at the tree's current size.
func (t *Tree) Prove(signer note.Signer, i int64) (Proof, error) {
	n := t.Size()
	if i < 0 || i >= n {
		return Proof{}, fmt.Errorf("transparency: record %d (seq %d) is not in the log's tree of %d records", i, i+1, n)
	}
	cp, err := t.Sign(signer, n)
	if err != nil {
		return Proof{}, err
	}
	path, err := t.InclusionProof(i, n)
	if err != nil {
		return Proof{}, err
	}
	// Never hand out a proof that does not verify: a damaged tree
	// directory would otherwise make one.
	entry, err := t.Entry(i)
	if err != nil {
		return Proof{}, err
	}
	root, err := t.Root(n)
	if err != nil {
		return Proof{}, err
	}
	if err := tlog.CheckRecord(path, n, root, i, tlog.RecordHash(entry)); err != nil {
		return Proof{}, fmt.Errorf("transparency: the proof of record %d does not verify against the tree's own root (%v): the tree directory %s is damaged; delete it to rebuild it from the log", i, err, t.dir)
	}
	return Proof{Index: i, Path: path, Checkpoint: cp}, nil
}

// ErrNotIncluded is matched by VerifyProof's error when the inclusion path
// does not bind the entry to the checkpoint's root.
var ErrNotIncluded = errors.New("the entry is not in the log at that index under that checkpoint")

// VerifyProof checks p for entry (the record's line, without its newline):
// the checkpoint is signed by logKey and names its origin, the index is in
// the checkpointed tree, and the inclusion path binds the entry's RFC 6962
// leaf hash to the checkpoint's root. Witness cosignatures are a Policy's
// to check. It returns the checkpoint.
func VerifyProof(p Proof, entry []byte, logKey note.Verifier) (Checkpoint, error) {
	c, _, err := OpenCheckpoint(p.Checkpoint, logKey)
	if err != nil {
		return Checkpoint{}, err
	}
	if p.Index >= c.Size {
		return c, fmt.Errorf("transparency: index %d is not in the checkpointed tree of size %d", p.Index, c.Size)
	}
	entry = bytes.TrimSuffix(entry, []byte("\n"))
	if err := tlog.CheckRecord(p.Path, c.Size, c.Root, p.Index, tlog.RecordHash(entry)); err != nil {
		return c, fmt.Errorf("transparency: %w (index %d, tree size %d): %v", ErrNotIncluded, p.Index, c.Size, err)
	}
	return c, nil
}
