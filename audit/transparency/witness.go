package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// maxAddCheckpointBody bounds an add-checkpoint request: the old size, at
// most 63 proof lines and a checkpoint with its signatures (16 ML-DSA-44
// signatures are about 54 KB).
const maxAddCheckpointBody = 256 << 10

// maxProofLines is the most consistency proof lines a client may send
// (c2sp.org/tlog-witness).
const maxProofLines = 63

// sizeContentType is the media type of a 409 response's body.
const sizeContentType = "text/x.tlog.size"

// Witness is a C2SP tlog-witness: it cosigns a log's checkpoint only when
// the checkpoint is consistent with the last one it cosigned for that log,
// so that a log cannot show two histories to parties who both require its
// cosignature. It serves POST /add-checkpoint and, for monitors, GET
// /<hex SHA-256 of the origin>/checkpoint (mount it under a prefix with
// http.StripPrefix). Its state, the latest cosigned checkpoint of each log,
// is a file per log in its state directory, written durably before a
// cosignature is returned.
//
// # Notes
//
//   - One process per state directory: the check-and-update is atomic
//     within a Witness, not across processes sharing a directory.
type Witness struct {
	signer *torchwood.CosignatureSigner
	vkey   string
	dir    string
	logs   map[string]*witnessedLog // by origin
	byHash map[string]*witnessedLog // by hex SHA-256 of the origin
}

// witnessedLog is what the witness knows of one log; mu makes the check of
// a submission against size and the update after it one step.
type witnessedLog struct {
	origin    string
	verifiers []note.Verifier
	file      string

	mu       sync.Mutex
	size     int64
	root     tlog.Hash
	cosigned []byte // the latest cosigned checkpoint with the log's and the witness's signatures; nil before the first
}

// NewWitness makes a witness that cosigns with signerKey (an Ed25519
// signed-note signer key, "PRIVATE+KEY+<name>+<id>+<key>", as 'wasmgate
// witness keygen' writes) the checkpoints of the logs whose verifier keys
// are given; a log's origin is its key's name (two keys of one name are
// the same log, e.g. across a key rotation). stateDir must exist; the
// state found there is loaded.
//
// # Errors
//
// A key that does not parse, no log, a state file that does not verify
// with the log's keys (it names the file: remove it to start the log over,
// or configure the key that signed it).
func NewWitness(signerKey string, stateDir string, logs ...string) (*Witness, error) {
	signer, err := cosignatureSigner(signerKey)
	if err != nil {
		return nil, err
	}
	if len(logs) == 0 {
		return nil, errors.New("transparency: a witness needs at least one log verifier key to cosign for")
	}
	if st, err := os.Stat(stateDir); err != nil {
		return nil, fmt.Errorf("transparency: witness state directory: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("transparency: witness state directory %s is not a directory", stateDir)
	}
	w := &Witness{
		signer: signer,
		vkey:   signer.Verifier().String(),
		dir:    stateDir,
		logs:   map[string]*witnessedLog{},
		byHash: map[string]*witnessedLog{},
	}
	for _, vkey := range logs {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("transparency: log key %q: %w (want an Ed25519 signed-note verifier key, as 'wasmgate audit keygen' prints)", vkey, err)
		}
		l := w.logs[v.Name()]
		if l == nil {
			sum := sha256.Sum256([]byte(v.Name()))
			h := hex.EncodeToString(sum[:])
			l = &witnessedLog{origin: v.Name(), file: filepath.Join(stateDir, h)}
			w.logs[l.origin], w.byHash[h] = l, l
		}
		l.verifiers = append(l.verifiers, v)
	}
	for _, l := range w.logs {
		if err := w.load(l); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// cosignatureSigner makes torchwood's cosignature/v1 signer of an Ed25519
// note signer key.
func cosignatureSigner(skey string) (*torchwood.CosignatureSigner, error) {
	skey = strings.TrimSpace(skey)
	// note.NewSigner checks the key's form and ID; the seed is then ours to take.
	if _, err := note.NewSigner(skey); err != nil {
		return nil, fmt.Errorf("transparency: witness signer key: %w (want an Ed25519 signed-note signer key, as 'wasmgate witness keygen' writes)", err)
	}
	parts := strings.SplitN(skey, "+", 5) // base64 has pluses too
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize {
		return nil, errors.New("transparency: witness signer key: not an Ed25519 seed")
	}
	s, err := torchwood.NewCosignatureSigner(parts[2], ed25519.NewKeyFromSeed(raw[1:]))
	if err != nil {
		return nil, fmt.Errorf("transparency: witness signer key: %w", err)
	}
	return s, nil
}

// VKey is the witness's cosignature verifier key (signature type 0x04), the
// one a policy lists it by.
func (w *Witness) VKey() string { return w.vkey }

// load reads a log's state file, if any.
func (w *Witness) load(l *witnessedLog) error {
	// A crash between writing and renaming leaves a temporary file: the
	// state is the file it was meant to replace.
	if stale, err := filepath.Glob(l.file + ".tmp-*"); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	data, err := os.ReadFile(l.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("transparency: witness state of %s: %w", l.origin, err)
	}
	n, err := note.Open(data, note.VerifierList(l.verifiers...))
	if err != nil {
		return fmt.Errorf("transparency: witness state %s of log %s does not verify with the log's keys: %w (configure the key that signed it, or remove the file to start that log over)", l.file, l.origin, err)
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil || c.Origin != l.origin {
		return fmt.Errorf("transparency: witness state %s is not a checkpoint of log %s (remove the file to start that log over)", l.file, l.origin)
	}
	l.size, l.root, l.cosigned = c.N, c.Hash, data
	return nil
}

// ServeHTTP answers POST /add-checkpoint and GET /<origin hash>/checkpoint.
func (w *Witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/add-checkpoint" {
		if r.Method != http.MethodPost {
			rw.Header().Set("Allow", http.MethodPost)
			http.Error(rw, "add-checkpoint takes POST", http.StatusMethodNotAllowed)
			return
		}
		w.addCheckpoint(rw, r)
		return
	}
	h, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if rest != "checkpoint" {
		http.NotFound(rw, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "a checkpoint is read with GET", http.StatusMethodNotAllowed)
		return
	}
	l := w.byHash[h]
	if l == nil {
		http.Error(rw, "no log with that origin hash is witnessed here", http.StatusNotFound)
		return
	}
	l.mu.Lock()
	cosigned := l.cosigned
	l.mu.Unlock()
	if cosigned == nil {
		http.Error(rw, "no checkpoint of "+l.origin+" cosigned yet", http.StatusNotFound)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Write(cosigned)
}

// refusal is an add-checkpoint answer other than 200.
type refusal struct {
	code int
	msg  string
}

func refuse(code int, format string, args ...any) *refusal {
	return &refusal{code, fmt.Sprintf(format, args...)}
}

func (w *Witness) addCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, maxAddCheckpointBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(rw, fmt.Sprintf("request body over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(rw, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	cosig, size, ref := w.add(body)
	if ref != nil {
		if ref.code == http.StatusConflict {
			rw.Header().Set("Content-Type", sizeContentType)
			rw.WriteHeader(http.StatusConflict)
			fmt.Fprintf(rw, "%d\n", size)
			return
		}
		http.Error(rw, ref.msg, ref.code)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Write(cosig)
}

// add checks a submission and cosigns it: it returns the cosignature line,
// or a refusal (with the latest cosigned size for a 409).
func (w *Witness) add(body []byte) ([]byte, int64, *refusal) {
	old, consistency, checkpoint, ref := parseAddCheckpoint(body)
	if ref != nil {
		return nil, 0, ref
	}
	origin, _, _ := bytes.Cut(checkpoint, []byte("\n"))
	l := w.logs[string(origin)]
	if l == nil {
		return nil, 0, refuse(http.StatusNotFound, "unknown log origin %q: this witness does not cosign it", origin)
	}
	n, err := note.Open(checkpoint, note.VerifierList(l.verifiers...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, 0, refuse(http.StatusForbidden, "the checkpoint has no signature of a key this witness trusts for %s", l.origin)
		case errors.As(err, &invalid):
			return nil, 0, refuse(http.StatusForbidden, "the checkpoint's signature by %s does not verify", invalid.Name)
		}
		return nil, 0, refuse(http.StatusBadRequest, "the checkpoint is not a signed note: %v", err)
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, 0, refuse(http.StatusBadRequest, "the note is not a checkpoint: %v", err)
	}
	if old > c.N {
		return nil, 0, refuse(http.StatusBadRequest, "old size %d is beyond the checkpoint's size %d", old, c.N)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if old != l.size {
		return nil, l.size, refuse(http.StatusConflict, "")
	}
	switch {
	case c.N == 0 && !bytes.Equal(c.Hash[:], rfc6962.DefaultHasher.EmptyRoot()):
		return nil, 0, refuse(http.StatusUnprocessableEntity, "a checkpoint of size 0 must have the empty tree's root hash")
	case old == 0 && len(consistency) > 0:
		return nil, 0, refuse(http.StatusUnprocessableEntity, "old size 0 takes no consistency proof (%d lines sent)", len(consistency))
	case old > 0 && old == c.N && c.Hash != l.root:
		return nil, 0, refuse(http.StatusUnprocessableEntity, "size %d was cosigned with another root hash: refusing a fork", old)
	case old > 0:
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(old), uint64(c.N), consistency, l.root[:], c.Hash[:]); err != nil {
			return nil, 0, refuse(http.StatusUnprocessableEntity, "consistency proof from size %d to %d does not verify: %v", old, c.N, err)
		}
	}

	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		return nil, 0, refuse(http.StatusInternalServerError, "cosigning: %v", err)
	}
	cosig := signed[len(n.Text)+1:]
	// What monitors read: the log's signatures the witness verified, and
	// the very cosignature it returns (no other witness's).
	logSigned, err := note.Sign(&note.Note{Text: n.Text, Sigs: n.Sigs})
	if err != nil {
		return nil, 0, refuse(http.StatusInternalServerError, "cosigning: %v", err)
	}
	state := append(logSigned, cosig...)
	if err := writeFileDurably(l.file, state); err != nil {
		return nil, 0, refuse(http.StatusInternalServerError, "saving the witness state: %v", err)
	}
	l.size, l.root, l.cosigned = c.N, c.Hash, state
	return cosig, 0, nil
}

// parseAddCheckpoint splits an add-checkpoint body: "old <size>", the
// consistency proof lines, an empty line, the checkpoint.
func parseAddCheckpoint(body []byte) (old int64, consistency [][]byte, checkpoint []byte, ref *refusal) {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	num, isOld := bytes.CutPrefix(line, []byte("old "))
	if !ok || !isOld {
		return 0, nil, nil, refuse(http.StatusBadRequest, "the body must start with a line \"old <size>\"")
	}
	old, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || old < 0 || strconv.FormatInt(old, 10) != string(num) {
		return 0, nil, nil, refuse(http.StatusBadRequest, "old size %q is not a decimal number without leading zeroes", num)
	}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return 0, nil, nil, refuse(http.StatusBadRequest, "the consistency proof must end with an empty line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		if len(consistency) == maxProofLines {
			return 0, nil, nil, refuse(http.StatusBadRequest, "more than %d consistency proof lines", maxProofLines)
		}
		h, err := base64.StdEncoding.DecodeString(string(line))
		if err != nil || len(h) != sha256.Size {
			return 0, nil, nil, refuse(http.StatusBadRequest, "consistency proof line %d is not the base64 of a 32-byte hash", len(consistency)+1)
		}
		consistency = append(consistency, h)
	}
	if len(rest) == 0 {
		return 0, nil, nil, refuse(http.StatusBadRequest, "no checkpoint after the empty line")
	}
	return old, consistency, rest, nil
}

// writeFileDurably replaces path with data so that a crash leaves the old
// or the new content, and the new one is on disk when it returns: a
// temporary file, fsync, rename, fsync of the directory.
func writeFileDurably(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ConflictError is AddCheckpoint's error when the witness answers 409: the
// old size sent is not the size of the latest checkpoint it cosigned for the
// log, which is Size. Resubmit with a consistency proof from Size.
type ConflictError struct {
	Size int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("transparency: the witness's latest cosigned checkpoint of this log has size %d: resubmit with a consistency proof from that size", e.Size)
}

// maxWitnessResponse bounds what AddCheckpoint reads of an answer.
const maxWitnessResponse = 64 << 10

// AddCheckpoint submits a checkpoint to a witness (C2SP tlog-witness
// add-checkpoint; witnessURL is its submission prefix) with the consistency
// proof from oldSize, the size of the latest checkpoint the witness
// cosigned, and returns the witness's cosignature lines ("— <name>
// <signature>\n"), to be appended to the checkpoint. They are not verified
// here: verify them with the witness's key (Policy.Verify). client nil
// means http.DefaultClient.
//
// # Errors
//
// *ConflictError when the witness has another latest size; otherwise an
// error naming the HTTP status and the witness's message (404: it does not
// know the log; 403: the log's signature; 422: the proof does not verify,
// or a fork).
func AddCheckpoint(ctx context.Context, client *http.Client, witnessURL string, oldSize int64, consistency tlog.TreeProof, checkpoint []byte) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if oldSize < 0 {
		return nil, fmt.Errorf("transparency: old size %d is negative", oldSize)
	}
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", oldSize)
	for _, h := range consistency {
		body.WriteString(base64.StdEncoding.EncodeToString(h[:]))
		body.WriteByte('\n')
	}
	body.WriteByte('\n')
	body.Write(checkpoint)
	url := strings.TrimSuffix(witnessURL, "/") + "/add-checkpoint"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &body)
	if err != nil {
		return nil, fmt.Errorf("transparency: witness URL: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("transparency: witness %s: %w", url, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessResponse))
	if err != nil {
		return nil, fmt.Errorf("transparency: witness %s: reading the answer: %w", url, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		s := strings.TrimSuffix(string(answer), "\n")
		size, err := strconv.ParseInt(s, 10, 64)
		if err != nil || size < 0 || s+"\n" != string(answer) {
			return nil, fmt.Errorf("transparency: witness %s: 409 without a size in its body (%q)", url, clip(answer))
		}
		return nil, &ConflictError{Size: size}
	default:
		return nil, fmt.Errorf("transparency: witness %s refused the checkpoint: %s: %s", url, resp.Status, clip(answer))
	}
	if err := checkSignatureLines(answer, checkpoint); err != nil {
		return nil, fmt.Errorf("transparency: witness %s: %w", url, err)
	}
	return answer, nil
}

// checkSignatureLines checks that lines are note signature lines that can
// be appended to checkpoint.
func checkSignatureLines(lines, checkpoint []byte) error {
	if len(lines) == 0 {
		return errors.New("answer 200 has no cosignature")
	}
	for line := range strings.Lines(string(lines)) {
		if !strings.HasPrefix(line, "— ") || !strings.HasSuffix(line, "\n") {
			return fmt.Errorf("answer line %q is not a signature line (\"— <name> <signature>\")", clip([]byte(line)))
		}
	}
	// With no verifier, a well-formed note fails only for want of one.
	_, err := note.Open(append(bytes.Clone(checkpoint), lines...), note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return fmt.Errorf("the checkpoint with the answer's cosignatures is not a signed note: %w", err)
	}
	return nil
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// maxConflictRetries bounds Cosign's resubmissions: each 409 means another
// submitter moved the witness on meanwhile.
const maxConflictRetries = 3

// Cosign gets a witness's cosignature on a checkpoint without knowing what
// the witness last saw: it submits with old size 0, and when the witness
// answers with its latest size (409) it resubmits with the consistency
// proof proofFrom gives from that size to the checkpoint's. It returns the
// cosignature lines, as AddCheckpoint does.
//
// # Errors
//
// AddCheckpoint's, proofFrom's, and a witness whose latest size is beyond
// the checkpoint's (it has seen a larger tree: submit a newer checkpoint).
func Cosign(ctx context.Context, client *http.Client, witnessURL string, checkpoint []byte, proofFrom func(old int64) (tlog.TreeProof, error)) ([]byte, error) {
	_, err := note.Open(checkpoint, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return nil, fmt.Errorf("transparency: checkpoint is not a signed note: %w", err)
	}
	c, err := torchwood.ParseCheckpoint(unverified.Note.Text)
	if err != nil {
		return nil, fmt.Errorf("transparency: checkpoint: %w", err)
	}
	var old int64
	var consistency tlog.TreeProof
	for range maxConflictRetries + 1 {
		sigs, err := AddCheckpoint(ctx, client, witnessURL, old, consistency, checkpoint)
		var conflict *ConflictError
		if !errors.As(err, &conflict) {
			return sigs, err
		}
		if conflict.Size > c.N {
			return nil, fmt.Errorf("transparency: witness %s has cosigned size %d of %s, beyond this checkpoint's %d: submit a newer checkpoint: %w", witnessURL, conflict.Size, c.Origin, c.N, err)
		}
		old, consistency = conflict.Size, nil
		if old > 0 && old < c.N {
			if consistency, err = proofFrom(old); err != nil {
				return nil, fmt.Errorf("transparency: consistency proof from size %d to %d: %w", old, c.N, err)
			}
		}
	}
	return nil, fmt.Errorf("transparency: witness %s: its latest size kept changing over %d submissions", witnessURL, maxConflictRetries+1)
}
