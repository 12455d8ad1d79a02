package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"

	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit/transparency"
	"github.com/wasmgate/wasmgate/internal/cluster"
)

// logNATS is `wasmgate log --nats URL --mirror FILE`: it keeps FILE a
// durable copy of the deployment's audit chain and publishes it as it
// grows.
func (e env) logNATS(ctx context.Context, nf natsFlags, path string, signer note.Signer, vkey, addr string, handler slog.Handler) int {
	const name = "log"
	m, err := openMirror(path)
	if err != nil {
		return e.fail(name, err)
	}
	defer m.f.Close()
	c, err := nf.connect(ctx, "log")
	if err != nil {
		return e.fail(name, err)
	}
	defer c.Close()
	if err := cluster.CheckAuditCopy(ctx, c, m.have, m.last); err != nil {
		return e.fail(name, fmt.Errorf("--mirror %s: %w; give a new --mirror FILE to copy this chain from its start", path, err))
	}

	tree, err := transparency.OpenFollowing(path)
	if err != nil {
		return e.fail(name, err)
	}
	defer tree.Close()
	// The tree signs no byte of the copy before it is fsynced: what a
	// checkpoint covers survives a crash of this process or machine.
	published, stop, err := publishLog(ctx, tree, signer, m.durable.Load)
	if err != nil {
		return e.fail(name, err)
	}
	defer stop()

	// The copy is made while the log is served; a copy that fails (the
	// chain no longer a continuation of the copy, JetStream gone for
	// longer than a leader election, a full disk) stops the server.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		err := cluster.FollowAudit(fctx, c, m.have, &m.pending, m.write)
		cancel()
		followed <- err
	}()
	serr := servePublished(fctx, addr, published, handler, "log", path, "nats", c.Names.AuditStream(),
		"origin", signer.Name(), "vkey", vkey)
	cancel()
	if ferr := <-followed; ferr != nil {
		return e.fail(name, fmt.Errorf("copy the audit chain to %s: %w", path, ferr))
	}
	if serr != nil {
		return e.fail(name, serr)
	}
	return exitSuccess
}

// mirror is the local copy of a deployment's audit chain that `wasmgate
// log --nats` keeps.
type mirror struct {
	path string
	f    *os.File
	have uint64 // records it holds
	last []byte // its last line (record have), nil if none
	// pending holds the lines FollowAudit copied since its last call of
	// write, which appends them in one write: a crash leaves whole lines.
	pending bytes.Buffer
	size    int64
	// durable is the copy's size up to its last fsync: what a checkpoint
	// may cover.
	durable atomic.Int64
}

// openMirror opens the copy at path, creating it (mode 0600) if missing,
// and locks it. A copy that exists must end in a complete record: its
// last line is read to know how many records it holds.
//
// # Errors
//
// One naming the file and what to do when it is not a regular file,
// another process keeps it, it ends in a torn line (`wasmgate audit
// repair` cuts it back), or its last line is not an audit record.
func openMirror(path string) (*mirror, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--mirror: %w", err)
	}
	m := &mirror{path: path, f: f}
	if err := m.load(); err != nil {
		f.Close()
		return nil, fmt.Errorf("--mirror %s: %w", path, err)
	}
	return m, nil
}

func (m *mirror) load() error {
	fi, err := m.f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if err := lockMirror(m.f); err != nil {
		return err
	}
	m.size = fi.Size()
	if m.size > 0 {
		if m.last, err = tornOrLastLine(m.f, m.size); err != nil {
			return err
		}
		var rec struct {
			Seq *uint64 `json:"seq"`
		}
		if err := json.Unmarshal(m.last, &rec); err != nil || rec.Seq == nil || *rec.Seq == 0 {
			return fmt.Errorf("its last line is not an audit record (no seq): a --mirror holds a deployment's audit chain and nothing else; give a new file")
		}
		m.have = *rec.Seq
	}
	// What an earlier run wrote and a crash kept unsynced is made durable
	// before any of it is signed.
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	m.durable.Store(m.size)
	return nil
}

// tornOrLastLine reads the line that ends at size, without its newline. A file
// not ending in a newline ends in a torn line.
func tornOrLastLine(f *os.File, size int64) ([]byte, error) {
	var tail []byte
	for chunk := int64(4096); ; chunk *= 2 {
		from := max(size-chunk, 0)
		tail = make([]byte, size-from)
		if _, err := f.ReadAt(tail, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if tail[len(tail)-1] != '\n' {
			return nil, fmt.Errorf("ends in a torn line (an append cut short by a crash or a full disk): run 'wasmgate audit repair %s' to cut it back to its last complete record", f.Name())
		}
		if nl := bytes.LastIndexByte(tail[:len(tail)-1], '\n'); nl >= 0 {
			return tail[nl+1 : len(tail)-1], nil
		}
		if from == 0 {
			return tail[:len(tail)-1], nil
		}
	}
}

// write appends the lines FollowAudit copied and fsyncs them (FollowAudit's
// written callback): only then may a checkpoint cover them.
func (m *mirror) write(uint64) error {
	n, err := m.f.Write(m.pending.Bytes())
	m.size += int64(n)
	m.pending.Reset()
	if err != nil {
		return fmt.Errorf("append to %s: %w", m.path, err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", m.path, err)
	}
	m.durable.Store(m.size)
	return nil
}
