package transparency

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit"
)

// DirSuffix names the directory a Tree keeps beside its log: LOG.tlog.
const DirSuffix = ".tlog"

// ErrDiverged is matched by the errors of a Tree whose log no longer holds
// the records it hashed: the log was truncated, rewritten or replaced after
// the tree (and perhaps a checkpoint signed over it) was made. A Tree that
// reports it signs nothing more; `wasmgate audit verify LOG --checkpoint`
// says what differs.
var ErrDiverged = errors.New("the log no longer holds the records its tree hashed")

// lockWait bounds how long a Tree waits for another process updating the
// same tree (a `wasmgate audit prove` beside a running serve).
const lockWait = 10 * time.Second

// Tree is the Merkle tree over an audit log's records, kept in the
// directory LOG.tlog beside the log:
//
//   - hashes: every stored hash of the tree (golang.org/x/mod/sumdb/tlog's
//     layout: StoredHashIndex), 32 bytes each;
//   - index: for each record, the offset in the log just after its line
//     (8 bytes, big-endian), so an entry is read without scanning;
//   - signed: the size and root of the largest checkpoint signed over it,
//     which every later checkpoint must extend.
//
// A Tree follows its log: Update hashes the records appended since, and
// checks that each continues the chain (seq and prev), so a tree never
// covers lines that are not the log's records in order. Several processes
// may hold Trees of one log (a server and the audit command): updates take
// a lock on the directory.
//
// A Tree is safe for concurrent use.
type Tree struct {
	logPath string
	dir     string

	mu     sync.Mutex
	log    *os.File // read only
	hashes *os.File
	index  *os.File
	lockf  *os.File

	n       int64       // records hashed
	end     int64       // offset in the log just after record n-1
	prev    string      // chain hash of record n-1 (audit.GenesisPrev if none)
	stored  int64       // stored hashes on file
	pending []tlog.Hash // stored hashes computed, not yet on file
	pendIdx []byte      // index entries computed, not yet on file
	synced  int64       // records whose hashes and index are fsynced
	signed  signedState
	broken  error // set once the log diverged
}

// signedState is the largest tree size a checkpoint was signed for.
type signedState struct {
	size int64
	root tlog.Hash
}

// Open opens the tree of the audit log at logPath, creating its directory
// (LOG.tlog, mode 0700) if missing, and brings it up to date with the log's
// complete records (see Update). The log must exist.
//
// # Errors
//
// Open fails, naming the record, when the log no longer holds what the
// tree hashed (ErrDiverged) or when a line does not continue the chain.
func Open(logPath string) (*Tree, error) {
	t, err := open(logPath)
	if err != nil {
		return nil, err
	}
	if _, err := t.Update(-1); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// OpenFollowing is Open without the first Update: for a log a FileSink of
// this process writes, whose durable size the caller passes to Update.
func OpenFollowing(logPath string) (*Tree, error) {
	t, err := open(logPath)
	if err != nil {
		return nil, err
	}
	if err := t.withLock(t.load); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func open(logPath string) (*Tree, error) {
	logf, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("transparency: open audit log: %w", err)
	}
	t := &Tree{logPath: logPath, dir: logPath + DirSuffix, log: logf, prev: audit.GenesisPrev}
	fail := func(err error) (*Tree, error) {
		t.Close()
		return nil, fmt.Errorf("transparency: tree of %s: %w", logPath, err)
	}
	if err := os.Mkdir(t.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fail(err)
	}
	for _, f := range []struct {
		name string
		to   **os.File
	}{{"hashes", &t.hashes}, {"index", &t.index}, {"lock", &t.lockf}} {
		if *f.to, err = os.OpenFile(filepath.Join(t.dir, f.name), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			return fail(err)
		}
	}
	return t, nil
}

// Close releases the tree's files.
func (t *Tree) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, f := range []*os.File{t.log, t.hashes, t.index, t.lockf} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	t.log, t.hashes, t.index, t.lockf = nil, nil, nil, nil
	return errors.Join(errs...)
}

// LogPath is the log the tree follows.
func (t *Tree) LogPath() string { return t.logPath }

// Size is the number of records the tree holds.
func (t *Tree) Size() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// withLock runs f with t.mu held and the directory's lock taken.
func (t *Tree) withLock(f func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log == nil {
		return errors.New("transparency: tree is closed")
	}
	if t.broken != nil {
		return t.broken
	}
	if err := lockFile(t.lockf, lockWait); err != nil {
		return fmt.Errorf("transparency: lock the tree of %s: %w", t.logPath, err)
	}
	defer unlockFile(t.lockf)
	err := f()
	if errors.Is(err, ErrDiverged) {
		t.broken = err
	}
	return err
}

// load reads the tree's state from its files, which another process may
// have advanced, and checks the records it holds past the last checkpoint
// against the log. Called with the lock held.
func (t *Tree) load() error {
	if err := t.flush(); err != nil {
		return err
	}
	hi, err := t.hashes.Stat()
	if err != nil {
		return err
	}
	ii, err := t.index.Stat()
	if err != nil {
		return err
	}
	n := ii.Size() / 8
	for n > 0 && tlog.StoredHashCount(n)*32 > hi.Size() {
		n--
	}
	if err := t.readSigned(); err != nil {
		return err
	}
	if n == t.n && t.stored == tlog.StoredHashCount(n) {
		return nil // nothing changed since this process last looked
	}
	if n < t.signed.size {
		// The tree lost hashes a checkpoint covered (a crash between
		// their write and an fsync cannot do that: they are fsynced
		// before signing). Rebuild it from the log.
		n = 0
	}
	// Keep only whole records, then check the tree against the log at the
	// last record signed and at its last record: a crash, or a sink that
	// failed and cut its log back, may have left hashes of records the log
	// no longer has (never signed: only durable records are). The log
	// only grows or is cut back, so the records it still holds as hashed
	// are a prefix, found by bisection; a change inside the log is what
	// VerifyLog catches, reading all of it.
	if err := t.truncate(n); err != nil {
		return err
	}
	if s := t.signed.size; s > 0 {
		if err := t.matches(s - 1); err != nil {
			reason := strings.TrimPrefix(err.Error(), ErrDiverged.Error()+": ")
			return fmt.Errorf("%w: record %d (seq %d), covered by the checkpoint signed at size %d: %s", ErrDiverged, s-1, s, s, reason)
		}
	}
	if n > t.signed.size && t.matches(n-1) != nil {
		lo := t.signed.size // records [0, lo) match
		keep := lo + int64(sort.Search(int(n-lo), func(k int) bool { return t.matches(lo+int64(k)) != nil }))
		if err := t.truncate(keep); err != nil {
			return err
		}
		n = keep
	}
	t.n = n
	t.end, t.prev = 0, audit.GenesisPrev
	if n > 0 {
		line, err := t.readEntry(n - 1)
		if err != nil {
			return err
		}
		if t.end, err = t.entryEnd(n - 1); err != nil {
			return err
		}
		c, err := parseLink(line)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrDiverged, n-1, err)
		}
		t.prev = c.Hash
	}
	t.synced = min(t.synced, n)
	return nil
}

// matches checks that the log still holds record i as the tree hashed it.
func (t *Tree) matches(i int64) error {
	line, err := t.readEntry(i)
	if err != nil {
		return err
	}
	h, err := hashReader{t}.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
	if err != nil {
		return err
	}
	if h[0] != tlog.RecordHash(line) {
		return errors.New("its line differs from the one hashed")
	}
	return nil
}

// truncate cuts the files to the first n records.
func (t *Tree) truncate(n int64) error {
	t.pending, t.pendIdx = t.pending[:0], t.pendIdx[:0]
	if err := t.hashes.Truncate(tlog.StoredHashCount(n) * 32); err != nil {
		return err
	}
	if err := t.index.Truncate(n * 8); err != nil {
		return err
	}
	t.stored, t.n = tlog.StoredHashCount(n), n
	t.synced = min(t.synced, n)
	return nil
}

func (t *Tree) readSigned() error {
	b, err := os.ReadFile(filepath.Join(t.dir, "signed"))
	if errors.Is(err, os.ErrNotExist) {
		t.signed = signedState{}
		return nil
	}
	if err != nil {
		return err
	}
	size, root, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\n")
	s, err1 := strconv.ParseInt(size, 10, 64)
	h, err2 := tlog.ParseHash(root)
	if !ok || err1 != nil || err2 != nil || s < 0 {
		return fmt.Errorf("%s: not a size and a root hash; delete the directory %s to rebuild it from the log", filepath.Join(t.dir, "signed"), t.dir)
	}
	t.signed = signedState{size: s, root: h}
	return nil
}

// Update hashes the log's complete records past those the tree holds, up
// to the log offset limit (a FileSink's durable size: records that may
// still be cut back must not be signed), or, with limit < 0, every
// complete line, after fsyncing the log, so what it signs is on disk. It
// returns the tree's size.
//
// Each record must continue the chain: seq one more than the last, prev
// naming its hash. Update stops at the first line that does not, and
// fails naming it; a torn last line (no newline yet) is left for later.
func (t *Tree) Update(limit int64) (int64, error) {
	var n int64
	err := t.withLock(func() error {
		if err := t.load(); err != nil {
			return err
		}
		if limit < 0 {
			if err := t.log.Sync(); err != nil {
				return fmt.Errorf("fsync the log: %w", err)
			}
		}
		err := t.follow(limit)
		if ferr := t.flush(); err == nil {
			err = ferr
		}
		n = t.n
		return err
	})
	if err != nil && !errors.Is(err, ErrDiverged) {
		err = fmt.Errorf("transparency: update the tree of %s: %w", t.logPath, err)
	}
	return n, err
}

// follow reads the log from t.end. Called with the lock held.
func (t *Tree) follow(limit int64) error {
	fi, err := t.log.Stat()
	if err != nil {
		return err
	}
	upTo := fi.Size()
	if limit >= 0 {
		upTo = min(upTo, limit)
	}
	if upTo < t.end {
		return fmt.Errorf("%w: the log is %d bytes, shorter than the %d its %d hashed records take", ErrDiverged, upTo, t.end, t.n)
	}
	buf := make([]byte, 0, 1<<20)
	off := t.end
	for off < upTo {
		want := min(int64(cap(buf)-len(buf)), upTo-off)
		if want == 0 {
			buf = append(make([]byte, 0, 2*cap(buf)), buf...) // one line longer than the buffer
			continue
		}
		got, err := t.log.ReadAt(buf[len(buf):int64(len(buf))+want], off)
		if got == 0 && err != nil {
			return err
		}
		buf = buf[:len(buf)+got]
		off += int64(got)
		rest := buf
		for {
			nl := bytes.IndexByte(rest, '\n')
			if nl < 0 {
				break
			}
			if err := t.add(rest[:nl]); err != nil {
				return err
			}
			rest = rest[nl+1:]
		}
		buf = append(buf[:0], rest...)
		if len(t.pending) > 1<<16 {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// link is what Update reads of a record: its place in the chain.
type link struct {
	Seq  uint64 `json:"seq"`
	Prev string `json:"prev"`
	Hash string `json:"hash"`
}

func parseLink(line []byte) (link, error) {
	var c link
	if err := json.Unmarshal(line, &c); err != nil {
		return c, fmt.Errorf("not an audit record: %w", err)
	}
	return c, nil
}

// add hashes the line of record t.n into the tree.
func (t *Tree) add(line []byte) error {
	c, err := parseLink(line)
	if err != nil {
		return fmt.Errorf("%s line %d: %w", t.logPath, t.n+1, err)
	}
	if c.Seq != uint64(t.n)+1 || c.Prev != t.prev {
		return fmt.Errorf("%s line %d: seq %d, prev %.20s…: does not continue the chain (want seq %d after %.20s…); run `wasmgate audit verify %s`", t.logPath, t.n+1, c.Seq, c.Prev, t.n+1, t.prev, t.logPath)
	}
	hs, err := tlog.StoredHashes(t.n, line, hashReader{t})
	if err != nil {
		return err
	}
	t.pending = append(t.pending, hs...)
	t.end += int64(len(line)) + 1
	t.pendIdx = binary.BigEndian.AppendUint64(t.pendIdx, uint64(t.end))
	t.n++
	t.prev = c.Hash
	return nil
}

// flush writes the pending hashes and index entries.
func (t *Tree) flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	b := make([]byte, 0, 32*len(t.pending))
	for _, h := range t.pending {
		b = append(b, h[:]...)
	}
	if _, err := t.hashes.WriteAt(b, t.stored*32); err != nil {
		return err
	}
	from := t.n - int64(len(t.pendIdx)/8)
	if _, err := t.index.WriteAt(t.pendIdx, from*8); err != nil {
		return err
	}
	t.stored += int64(len(t.pending))
	t.pending, t.pendIdx = t.pending[:0], t.pendIdx[:0]
	return nil
}

// hashReader reads t's stored hashes (tlog.HashReader) for the tlog
// functions, which the Tree calls with t.mu held.
type hashReader struct{ t *Tree }

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	t := r.t
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		switch {
		case x >= t.stored && x-t.stored < int64(len(t.pending)):
			out[i] = t.pending[x-t.stored]
		case x >= 0 && x < t.stored:
			if _, err := t.hashes.ReadAt(out[i][:], x*32); err != nil {
				return nil, fmt.Errorf("read stored hash %d: %w", x, err)
			}
		default:
			return nil, fmt.Errorf("stored hash %d is not in the tree (%d records)", x, t.n)
		}
	}
	return out, nil
}

// entryEnd is the log offset just after record i's line.
func (t *Tree) entryEnd(i int64) (int64, error) {
	var b [8]byte
	if _, err := t.index.ReadAt(b[:], i*8); err != nil {
		return 0, fmt.Errorf("read the index of record %d: %w", i, err)
	}
	return int64(binary.BigEndian.Uint64(b[:])), nil
}

// readEntry reads record i's line from the log, without its newline.
func (t *Tree) readEntry(i int64) ([]byte, error) {
	from := int64(0)
	if i > 0 {
		var err error
		if from, err = t.entryEnd(i - 1); err != nil {
			return nil, err
		}
	}
	end, err := t.entryEnd(i)
	if err != nil {
		return nil, err
	}
	if end <= from || end-from > 64<<20 {
		return nil, fmt.Errorf("the index says record %d spans bytes %d to %d; delete %s to rebuild it", i, from, end, t.dir)
	}
	b := make([]byte, end-from)
	if _, err := t.log.ReadAt(b, from); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the log ends before record %d (seq %d)", ErrDiverged, i, i+1)
		}
		return nil, err
	}
	if b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: record %d (seq %d) is not where its line was", ErrDiverged, i, i+1)
	}
	return b[:len(b)-1], nil
}

// Entry returns record i's line (leaf i), without its newline.
func (t *Tree) Entry(i int64) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i < 0 || i >= t.n {
		return nil, fmt.Errorf("transparency: record %d is not in the tree (%d records)", i, t.n)
	}
	return t.readEntry(i)
}

// Root is the tree's root hash at size n (≤ Size).
func (t *Tree) Root(n int64) (tlog.Hash, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.inTree(n); err != nil {
		return tlog.Hash{}, err
	}
	return tlog.TreeHash(n, hashReader{t})
}

func (t *Tree) inTree(n int64) error {
	if n < 0 || n > t.n {
		return fmt.Errorf("transparency: size %d is beyond the tree's %d records", n, t.n)
	}
	return nil
}

// InclusionProof proves that record i is in the tree of size n: the RFC
// 6962 audit path, from the leaf's sibling up to the root's child.
func (t *Tree) InclusionProof(i, n int64) (tlog.RecordProof, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.inTree(n); err != nil {
		return nil, err
	}
	if i < 0 || i >= n {
		return nil, fmt.Errorf("transparency: record %d is not in a tree of size %d", i, n)
	}
	return tlog.ProveRecord(n, i, hashReader{t})
}

// ConsistencyProof proves that the tree of size n extends the tree of size
// m (0 < m ≤ n): the RFC 6962 consistency proof. From m = 0 or m = n it is
// empty.
func (t *Tree) ConsistencyProof(m, n int64) (tlog.TreeProof, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.inTree(n); err != nil {
		return nil, err
	}
	if m < 0 || m > n {
		return nil, fmt.Errorf("transparency: no consistency proof from size %d to %d: the old size must be between 0 and the new", m, n)
	}
	if m == 0 || m == n {
		return tlog.TreeProof{}, nil
	}
	return tlog.ProveTree(n, m, hashReader{t})
}

// checkpointBody is a C2SP checkpoint's note text.
func checkpointBody(origin string, n int64, root tlog.Hash) string {
	return origin + "\n" + strconv.FormatInt(n, 10) + "\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
}

// prepareSign checks that a checkpoint of size n may be signed (it extends
// every checkpoint signed before), makes its hashes durable and records it
// as signed. It returns the root. Called with the lock held.
func (t *Tree) prepareSign(n int64) (tlog.Hash, error) {
	if err := t.inTree(n); err != nil {
		return tlog.Hash{}, err
	}
	if s := t.signed; s.size > 0 {
		if t.n < s.size {
			return tlog.Hash{}, fmt.Errorf("%w: it holds %d records, fewer than the %d a checkpoint was signed for: records were removed from its end", ErrDiverged, t.n, s.size)
		}
		if h, err := tlog.TreeHash(s.size, hashReader{t}); err != nil || h != s.root {
			return tlog.Hash{}, fmt.Errorf("%w: the tree at size %d no longer has the root a checkpoint was signed for", ErrDiverged, s.size)
		}
	}
	root, err := tlog.TreeHash(n, hashReader{t})
	if err != nil {
		return tlog.Hash{}, err
	}
	if t.synced < n {
		if err := t.flush(); err != nil {
			return tlog.Hash{}, err
		}
		if err := t.hashes.Sync(); err != nil {
			return tlog.Hash{}, err
		}
		if err := t.index.Sync(); err != nil {
			return tlog.Hash{}, err
		}
		t.synced = t.n
	}
	if n > t.signed.size {
		if err := writeFileAtomic(filepath.Join(t.dir, "signed"), []byte(fmt.Sprintf("%d\n%s\n", n, root))); err != nil {
			return tlog.Hash{}, err
		}
		t.signed = signedState{size: n, root: root}
	}
	return root, nil
}

// writeFileAtomic replaces name with data: a reader sees the old content
// or the new, never a part, and after a crash the one that was last
// durable.
func writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}
