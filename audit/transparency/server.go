package transparency

import (
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Server publishes a Tree as a C2SP tlog-tiles log: GET /checkpoint (the
// latest signed checkpoint), /tile/<L>/<N>[.p/<W>] and
// /tile/entries/<N>[.p/<W>], so that standard tlog clients, monitors and
// mirrors read it. It serves paths relative to its mount point (use
// http.StripPrefix to mount it under a prefix).
//
// Tiles are served within the latest checkpoint's size: a client asks for
// what a checkpoint it verified covers. Run re-signs the checkpoint as the
// log grows.
type Server struct {
	tree    *Tree
	signer  note.Signer
	durable func() int64

	mu      sync.Mutex
	cp      []byte
	size    int64
	lastErr error
}

// NewServer signs a first checkpoint of tree and returns the server.
// durable, when not nil, bounds what is signed to the log's records a
// FileSink has made durable (its log offset; see audit.FileSink.Durable),
// so that no checkpoint covers a record the sink may still cut back; nil
// follows every complete line of the log (see Tree.Update).
func NewServer(tree *Tree, signer note.Signer, durable func() int64) (*Server, error) {
	s := &Server{tree: tree, signer: signer, durable: durable}
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh hashes the records added since the last call and, when there
// are any, signs a new checkpoint.
func (s *Server) Refresh() error {
	limit := int64(-1)
	if s.durable != nil {
		limit = s.durable()
	}
	n, err := s.tree.Update(limit)
	if err == nil && (n > s.Size() || s.Checkpoint() == nil) {
		var cp []byte
		if cp, err = s.tree.Sign(s.signer, n); err == nil {
			s.mu.Lock()
			if n >= s.size { // a concurrent Refresh may have signed a larger one
				s.cp, s.size = cp, n
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	return err
}

// Run calls Refresh every interval (at most one second apart for the C2SP
// logs' "re-signed at least every second while records are added") until
// ctx ends. A failed refresh keeps the last checkpoint served; Err says
// why.
func (s *Server) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.Refresh()
		}
	}
}

// Err is the last refresh's error, nil if it succeeded.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Checkpoint is the latest signed checkpoint.
func (s *Server) Checkpoint() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cp
}

// Size is the latest checkpoint's size.
func (s *Server) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// Handles reports whether path is one the Server serves.
func Handles(path string) bool {
	return path == "/checkpoint" || strings.HasPrefix(path, "/tile/")
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the log's resources are read with GET", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/checkpoint" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// Mutable: C2SP says caches may keep it a few seconds at most.
		w.Header().Set("Cache-Control", "no-cache, max-age=1")
		w.Write(s.Checkpoint())
		return
	}
	tile, err := parseTilePath(strings.TrimPrefix(r.URL.Path, "/"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	data, err := s.tree.ReadTile(tile, s.Size())
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	// A tile's content never changes (a partial one is named by its width).
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	if tile.L == -1 {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(data)
			zw.Close()
			return
		}
	}
	w.Write(data)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(coding) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// parseTilePath parses a C2SP tlog-tiles path: tile/<L>/<N>[.p/<W>] or
// tile/entries/<N>[.p/<W>], N in 3-digit elements, all but the last
// prefixed with x. Its grammar is sumdb's with the height left out and
// "entries" for "data".
func parseTilePath(path string) (tlog.Tile, error) {
	var sumdb string
	switch {
	case strings.HasPrefix(path, "tile/entries/"):
		sumdb = "tile/8/data/" + strings.TrimPrefix(path, "tile/entries/")
	case strings.HasPrefix(path, "tile/"):
		sumdb = "tile/8/" + strings.TrimPrefix(path, "tile/")
	default:
		return tlog.Tile{}, fmt.Errorf("not a tile path: %q", path)
	}
	t, err := tlog.ParseTilePath(sumdb)
	if err != nil || t.H != tileHeight {
		return tlog.Tile{}, fmt.Errorf("malformed tile path %q: want tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]", path)
	}
	return t, nil
}

// tilePath is t's C2SP path.
func tilePath(t tlog.Tile) string {
	p := t.Path() // tile/8/L/N or tile/8/data/N
	if t.L == -1 {
		return "tile/entries/" + strings.TrimPrefix(p, "tile/8/data/")
	}
	return "tile/" + strings.TrimPrefix(p, "tile/8/")
}
