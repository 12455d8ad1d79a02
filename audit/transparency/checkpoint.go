package transparency

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// GenerateKey makes an Ed25519 key pair for signing checkpoints, in
// golang.org/x/mod/sumdb/note's encoding: skey, the signer key to keep
// secret, and vkey, the verifier key to give verifiers. The key's name is
// the log's origin (C2SP tlog-checkpoint: the key name SHOULD match it): a
// schema-less URL such as example.com/audit, without spaces or '+'.
func GenerateKey(origin string) (skey, vkey string, err error) {
	if origin == "" || strings.ContainsAny(origin, " \t\n+") {
		return "", "", fmt.Errorf("transparency: origin %q: want a non-empty name without spaces or '+', such as example.com/audit", origin)
	}
	return note.GenerateKey(rand.Reader, origin)
}

// Checkpoint is a checkpoint's body (C2SP tlog-checkpoint): the log's
// origin, its size and the RFC 6962 root of its first Size records.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// String is the checkpoint's note text.
func (c Checkpoint) String() string { return checkpointBody(c.Origin, c.Size, c.Root) }

// ParseCheckpoint parses a checkpoint's note text: origin, size and root
// lines; extension lines after them are allowed and ignored.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) < 4 || !strings.HasSuffix(text, "\n") {
		return Checkpoint{}, errors.New("transparency: a checkpoint has an origin, a size and a root hash line, each ending in a newline")
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	size := strings.TrimSuffix(lines[1], "\n")
	root := strings.TrimSuffix(lines[2], "\n")
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 || (len(size) > 1 && size[0] == '0') || size[0] == '+' {
		return Checkpoint{}, fmt.Errorf("transparency: checkpoint size %q is not a decimal without leading zeroes", size)
	}
	h, err := base64.StdEncoding.DecodeString(root)
	if err != nil || len(h) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("transparency: checkpoint root %q is not a base64 SHA-256 hash", root)
	}
	if origin == "" {
		return Checkpoint{}, errors.New("transparency: checkpoint origin line is empty")
	}
	for _, ext := range lines[3:] {
		if ext == "\n" {
			return Checkpoint{}, errors.New("transparency: checkpoint extension lines must not be empty")
		}
	}
	return Checkpoint{Origin: origin, Size: n, Root: tlog.Hash(h)}, nil
}

// OpenCheckpoint verifies a signed checkpoint (a note) with the log's key,
// whose name must be the checkpoint's origin, and parses it. Signatures by
// other keys (witnesses' cosignatures) are left in the note's
// UnverifiedSigs for a Policy to check.
func OpenCheckpoint(signed []byte, logKey note.Verifier) (Checkpoint, *note.Note, error) {
	n, err := note.Open(signed, note.VerifierList(logKey))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			return Checkpoint{}, nil, fmt.Errorf("transparency: the checkpoint carries no signature by the log key %s (%s+%08x): signed by another log, or a wrong --vkey", logKey.Name(), logKey.Name(), logKey.KeyHash())
		}
		return Checkpoint{}, nil, fmt.Errorf("transparency: checkpoint: %w", err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	if c.Origin != logKey.Name() {
		return Checkpoint{}, nil, fmt.Errorf("transparency: the checkpoint's origin %q is not the log key's name %q", c.Origin, logKey.Name())
	}
	return c, n, nil
}

// Sign signs a checkpoint of the tree at size n (≤ Size) with signer,
// whose name is the origin. A Tree signs no checkpoint that does not
// extend the largest it signed before (C2SP tlog-checkpoint: a log MUST
// NOT sign inconsistent checkpoints): a log truncated or rewritten below
// it fails with ErrDiverged.
func (t *Tree) Sign(signer note.Signer, n int64) ([]byte, error) {
	var root tlog.Hash
	err := t.withLock(func() error {
		var err error
		root, err = t.prepareSign(n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("transparency: sign a checkpoint of %s at size %d: %w", t.logPath, n, err)
	}
	return note.Sign(&note.Note{Text: checkpointBody(signer.Name(), n, root)}, signer)
}
