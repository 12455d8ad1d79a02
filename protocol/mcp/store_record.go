package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/buildid"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// The catalog's record of a package: which of its exports are tools (with
// the manifest each loaded with) and which are not (with why), kept in the
// package's directory in the tool store beside its bundle, so that a later
// start reads it instead of loading every export in the sandbox again.
//
// It is trusted as far as the store itself is: whoever can write it can
// write the bundle beside it. It only says what to list; a call still
// loads the tool from its bundle, and the pipeline enforces that
// executor's own manifest.
const (
	catalogRecordFile   = "catalog.json"
	catalogRecordFormat = "wasmgate tool catalog v1"
	// maxRecordBytes bounds the record read: a package's schemas are
	// bounded when a tool is loaded (256 KiB each), and a record larger
	// than this is not one wasmgate wrote.
	maxRecordBytes = 64 << 20
)

// catalogRecord is the file's contents.
type catalogRecord struct {
	Format string `json:"format"`
	// Key names everything the record derives from (recordKey): a record
	// under another key is not used.
	Key string `json:"key"`
	// Complete: every export in Exports is in Tools. A record written
	// while loading went on is not, and the next start resumes from it.
	Complete bool `json:"complete"`
	// Exports are the names that may be tools (jstool.ToolExports).
	Exports []string       `json:"exports"`
	Tools   []recordedTool `json:"tools"`
}

// recordedTool is one export loaded: a tool's manifest, or why it is not a
// tool.
type recordedTool struct {
	Export   string            `json:"export"`
	Manifest *sandbox.Manifest `json:"manifest,omitempty"`
	NotATool string            `json:"not_a_tool,omitempty"`
}

// recordKey names what loading a package's exports derives from: its
// bundle and package.json (which holds its manifest), the build of
// wasmgate (the engine, its prelude and the rules of loading), and the
// limits tools get where their manifests set none.
func recordKey(inst *jstool.Installed, limits sandbox.Limits) string {
	l, _ := json.Marshal(limits)
	return audit.Digest(fmt.Appendf(nil, "%s\nbundle %s\npackage.json %s\nbuild %s\nlimits %s",
		catalogRecordFormat, audit.Digest(inst.Bundle.Source), audit.Digest(inst.PackageJSON), buildid.Identity(), l))
}

// readRecord reads the record in dir made under key: nil, and no error,
// when there is none, or one made under another key (a changed bundle,
// another build).
//
// # Errors
//
// A record that cannot be read or is not one.
func readRecord(dir, key string) (*catalogRecord, error) {
	f, err := os.Open(filepath.Join(dir, catalogRecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxRecordBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", f.Name(), maxRecordBytes)
	}
	var rec catalogRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if rec.Format != catalogRecordFormat || rec.Key != key {
		return nil, nil
	}
	for _, t := range rec.Tools {
		if (t.Manifest == nil) == (t.NotATool == "") {
			return nil, fmt.Errorf("%s: export %q has neither a manifest nor why it is not a tool, or both", f.Name(), t.Export)
		}
	}
	return &rec, nil
}

// writeRecord records what is known of p's exports. A store this process
// may not write costs only the record: the next start loads the exports
// again, and a warning says so.
func (c *StoreCatalog) writeRecord(log *slog.Logger, p *storePackage, inst *jstool.Installed, key string, complete bool) {
	rec := catalogRecord{Format: catalogRecordFormat, Key: key, Complete: complete, Tools: []recordedTool{}}
	c.mu.Lock()
	rec.Exports, _ = p.exports.value()
	for export, t := range p.tools {
		m := t.Manifest
		rec.Tools = append(rec.Tools, recordedTool{Export: export, Manifest: &m})
	}
	for export, why := range p.notTools {
		rec.Tools = append(rec.Tools, recordedTool{Export: export, NotATool: why})
	}
	c.mu.Unlock()
	slices.SortFunc(rec.Tools, func(a, b recordedTool) int { return strings.Compare(a.Export, b.Export) })
	if err := writeFileAtomic(filepath.Join(inst.Dir, catalogRecordFile), rec); err != nil {
		log.Warn("mcp: cannot record the package's tools in the tool store; the next start loads its exports again", "error", err)
	}
}

// writeFileAtomic writes v as JSON to path by renaming a complete file
// into place, so that a reader never sees half a record.
func writeFileAtomic(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
