package cluster

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/internal/pyhost"
	"github.com/wasmgate/wasmgate/pipeline"
)

// pyArtifact is a Python executor as published: its tree as the interpreter
// sees it (pyhost.Tree), which file of it is the executor, its class, and
// the sidecar manifest beside the file, so that workers need none of the
// publisher's files.
type pyArtifact struct {
	// Entry is the executor's file, under pyhost.AppRoot.
	Entry string `json:"entry"`
	Class string `json:"class,omitempty"`
	// Paths is how many --py-path roots the tree has (pyhost.LibRoot/1..).
	Paths int `json:"paths"`
	// Files are the tree's files by virtual path, base64.
	Files map[string]string `json:"files"`
	// Manifest is the sidecar NAME.manifest.json, when there is one.
	Manifest string `json:"manifest,omitempty"`
}

// pythonArtifactOf makes the artifact of a Python executor of a registry
// file.
func pythonArtifactOf(src pipeline.ExecutorSource) ([]byte, error) {
	files, roots, err := pyhost.Tree(src.Python, src.PythonPath)
	if err != nil {
		return nil, err
	}
	a := pyArtifact{Entry: filepath.Base(src.Python), Class: src.Class, Paths: len(roots) - 1, Files: map[string]string{}}
	for p, b := range files {
		a.Files[p] = base64.StdEncoding.EncodeToString(b)
	}
	sidecar := strings.TrimSuffix(src.Python, ".py") + ".manifest.json"
	switch b, err := os.ReadFile(sidecar); {
	case err == nil:
		a.Manifest = string(b)
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return canonicalArtifact(a)
}

// pythonSourceOf lays a Python artifact's tree out in a new directory, as
// the publisher's was, and returns the source that loads it there and what
// removes the directory: loading reads every file of the tree, so the
// executor does not need them after.
func pythonSourceOf(digest string, b []byte) (pipeline.ExecutorSource, func(), error) {
	var a pyArtifact
	if err := decodeStrict(b, &a); err != nil {
		return pipeline.ExecutorSource{}, nil, fmt.Errorf("Python artifact %s: %w", digest, err)
	}
	if a.Paths < 0 || a.Paths > 1000 || a.Entry == "" || strings.ContainsAny(a.Entry, `/\`) || !strings.HasSuffix(a.Entry, ".py") {
		return pipeline.ExecutorSource{}, nil, fmt.Errorf("Python artifact %s: entry %q, %d paths: not an executor's", digest, a.Entry, a.Paths)
	}
	dir, err := os.MkdirTemp("", "wasmgate-python-")
	if err != nil {
		return pipeline.ExecutorSource{}, nil, err
	}
	done := func() { _ = os.RemoveAll(dir) }
	fail := func(err error) (pipeline.ExecutorSource, func(), error) {
		done()
		return pipeline.ExecutorSource{}, nil, fmt.Errorf("Python artifact %s: %w", digest, err)
	}
	roots := map[string]string{pyhost.AppRoot: filepath.Join(dir, "app")}
	src := pipeline.ExecutorSource{Python: filepath.Join(dir, "app", a.Entry), Class: a.Class}
	for i := 1; i <= a.Paths; i++ {
		host := filepath.Join(dir, "lib", strconv.Itoa(i))
		roots[pyhost.LibRoot+"/"+strconv.Itoa(i)] = host
		src.PythonPath = append(src.PythonPath, host)
	}
	for _, host := range roots {
		if err := os.MkdirAll(host, 0o700); err != nil {
			return fail(err)
		}
	}
	for p, enc := range a.Files {
		clean := path.Clean(p)
		root, rel, ok := splitRoot(clean, a.Paths)
		if !ok || clean != p || rel == "" || strings.HasPrefix(rel, "..") {
			return fail(fmt.Errorf("file %q is outside the tree", p))
		}
		body, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return fail(fmt.Errorf("file %q: %w", p, err))
		}
		host := filepath.Join(roots[root], filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(host), 0o700); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(host, body, 0o600); err != nil {
			return fail(err)
		}
	}
	if a.Manifest != "" {
		if err := os.WriteFile(strings.TrimSuffix(src.Python, ".py")+".manifest.json", []byte(a.Manifest), 0o600); err != nil {
			return fail(err)
		}
	}
	return src, done, nil
}

// splitRoot splits a virtual path into its root (pyhost.AppRoot or
// pyhost.LibRoot/N, N at most paths) and the rest.
func splitRoot(p string, paths int) (root, rel string, ok bool) {
	if rel, ok := strings.CutPrefix(p, pyhost.AppRoot+"/"); ok {
		return pyhost.AppRoot, rel, true
	}
	rest, ok := strings.CutPrefix(p, pyhost.LibRoot+"/")
	if !ok {
		return "", "", false
	}
	n, rel, _ := strings.Cut(rest, "/")
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > paths || strconv.Itoa(i) != n {
		return "", "", false
	}
	return pyhost.LibRoot + "/" + n, rel, true
}

// decodeStrict decodes JSON b into v, refusing fields v does not have.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
