package toolproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// ManifestFile is the name of a tool's manifest.
const ManifestFile = "manifest.json"

// Runtime says what kind of code a tool's entry is.
type Runtime string

// The runtimes a tool may have.
const (
	// RuntimeWasm: a Wasm executor, run in the sandbox.
	RuntimeWasm Runtime = "wasm"
	// RuntimeJS: a JavaScript or TypeScript tool, run in the sandbox's JS
	// engine.
	RuntimeJS Runtime = "js"
	// RuntimeNode: a tool written for Node, as the protocol's reference
	// tools are: a program that reads its request on stdin and writes its
	// own events, run in the JS engine's Node profile (jstool.Program).
	RuntimeNode Runtime = "node"
	// RuntimePython: a Python executor (a module with execute(input), or
	// an executor class), run by the sandbox's CPython.
	RuntimePython Runtime = "python"
)

// Manifest describes a tool of the protocol (DIR/<id>/manifest.json).
type Manifest struct {
	ManifestVersion int     `json:"manifestVersion"`
	ID              string  `json:"id"`
	Version         string  `json:"version"`
	Name            string  `json:"name"`
	Description     string  `json:"description"`
	Runtime         Runtime `json:"runtime"`
	// Entry is the tool's code, relative to the manifest's directory: a
	// .wasm module, a .js/.mjs/.cjs/.ts/.mts/.cts tool, a Node tool's
	// .js/.mjs/.cjs, or a Python tool's .py.
	Entry string `json:"entry"`
	// PythonPath, for a Python tool only, are directories of pure-Python
	// dependencies (a site-packages), relative to the manifest's
	// directory, that the entry imports from after its own directory.
	PythonPath []string `json:"pythonPath,omitempty"`
	// PythonClass, for a Python tool only, names its executor class; empty:
	// the module's execute function, else its one executor class.
	PythonClass    string   `json:"pythonClass,omitempty"`
	RequiredConfig []string `json:"requiredConfig,omitempty"`
	OptionalConfig []string `json:"optionalConfig,omitempty"`
	// TimeoutMs is the tool's default timeout; 0 means DefaultTimeoutMs.
	TimeoutMs int64    `json:"timeoutMs,omitempty"`
	Tags      []string `json:"tags,omitempty"`

	// File is the manifest's path.
	File string `json:"-"`
}

// EntryPath is the path of the tool's code.
func (m *Manifest) EntryPath() string {
	return filepath.Join(filepath.Dir(m.File), filepath.FromSlash(m.Entry))
}

// PythonPathDirs are the paths of a Python tool's PythonPath directories.
func (m *Manifest) PythonPathDirs() []string {
	var dirs []string
	for _, p := range m.PythonPath {
		dirs = append(dirs, filepath.Join(filepath.Dir(m.File), filepath.FromSlash(p)))
	}
	return dirs
}

// MissingConfig lists the requiredConfig keys that config (a JSON object, or
// empty) lacks or sets to null.
func (m *Manifest) MissingConfig(config json.RawMessage) []string {
	var set map[string]json.RawMessage
	if len(config) > 0 {
		_ = json.Unmarshal(config, &set)
	}
	var missing []string
	for _, k := range m.RequiredConfig {
		if v, ok := set[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, k)
		}
	}
	return missing
}

// ManifestError says what is wrong with a manifest, naming its file and,
// when one field is at fault, the field.
type ManifestError struct {
	File  string
	Field string
	Msg   string

	// id is the manifest's id when it is a string, for Lookup.
	id string
}

func (e *ManifestError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

var (
	// kebabCase is the reference runner's: lowercase letters and digits in
	// words joined by "-".
	kebabCase = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	semver    = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
)

// pythonName is an ASCII Python identifier, as a class is named.
var pythonName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var entryExtensions = map[Runtime][]string{
	RuntimeWasm:   {".wasm"},
	RuntimeJS:     {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"},
	RuntimeNode:   {".js", ".mjs", ".cjs"},
	RuntimePython: {".py"},
}

// LoadManifest reads and checks the manifest at path. Its entry must exist.
//
// # Errors
//
// A *ManifestError for the first problem found; an error matching
// fs.ErrNotExist when there is no file.
func LoadManifest(path string) (*Manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(path, raw)
}

// ParseManifest checks raw as the manifest at path (which its entry is
// relative to). Fields it does not know are ignored, as the protocol's
// reference runner ignores them.
//
// # Errors
//
// A *ManifestError for the first problem found.
func ParseManifest(path string, raw []byte) (*Manifest, error) {
	r := fieldReader{file: path}
	if err := json.Unmarshal(raw, &r.fields); err != nil || r.fields == nil {
		return nil, &ManifestError{File: path, Msg: "not a JSON object"}
	}
	_ = json.Unmarshal(r.fields["id"], &r.id)
	m := &Manifest{File: path}

	if v, ok := r.integer("manifestVersion", true); ok && v != 1 {
		r.fail("manifestVersion", "must be 1, not %d", v)
	}
	m.ManifestVersion = 1
	if m.ID = r.str("id"); r.err == nil && !kebabCase.MatchString(m.ID) {
		r.fail("id", "%q is not kebab-case (lowercase letters and digits in words joined by \"-\")", m.ID)
	}
	if m.Version = r.str("version"); r.err == nil && !semver.MatchString(m.Version) {
		r.fail("version", "%q is not a semantic version X.Y.Z", m.Version)
	}
	m.Name = r.str("name")
	m.Description = r.str("description")
	if m.Runtime = Runtime(r.str("runtime")); r.err == nil && entryExtensions[m.Runtime] == nil {
		r.fail("runtime", "must be %q, %q, %q or %q, not %q", RuntimeWasm, RuntimeJS, RuntimeNode, RuntimePython, m.Runtime)
	}
	if m.Entry = r.str("entry"); r.err == nil {
		r.checkEntry(m)
	}
	r.python(m)
	m.RequiredConfig = r.keys("requiredConfig", nil)
	m.OptionalConfig = r.keys("optionalConfig", m.RequiredConfig)
	if v, ok := r.integer("timeoutMs", false); ok {
		if v <= 0 || v > maxTimeoutMs {
			r.fail("timeoutMs", "must be a positive number of milliseconds, not %d", v)
		}
		m.TimeoutMs = v
	}
	m.Tags = r.keys("tags", nil)
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

// fieldReader decodes a manifest's fields one by one, keeping the first
// problem.
type fieldReader struct {
	file   string
	id     string
	fields map[string]json.RawMessage
	err    *ManifestError
}

func (r *fieldReader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = &ManifestError{File: r.file, Field: field, Msg: fmt.Sprintf(format, args...), id: r.id}
	}
}

// value returns the raw value of field, or nil when it is absent or null.
func (r *fieldReader) value(field string) json.RawMessage {
	v := bytes.TrimSpace(r.fields[field])
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// str reads a required, non-empty string.
func (r *fieldReader) str(field string) string {
	if r.err != nil {
		return ""
	}
	v := r.value(field)
	var s string
	switch {
	case v == nil:
		r.fail(field, "is required")
	case json.Unmarshal(v, &s) != nil:
		r.fail(field, "must be a string, not %s", v)
	case strings.TrimSpace(s) == "":
		r.fail(field, "must not be empty")
	}
	return s
}

// integer reads a whole number; ok says it was there and is one.
func (r *fieldReader) integer(field string, required bool) (n int64, ok bool) {
	if r.err != nil {
		return 0, false
	}
	v := r.value(field)
	if v == nil {
		if required {
			r.fail(field, "is required")
		}
		return 0, false
	}
	if err := json.Unmarshal(v, &n); err != nil {
		r.fail(field, "must be a whole number, not %s", v)
		return 0, false
	}
	return n, true
}

// keys reads an optional list of distinct, non-empty strings, none of
// which may be in exclude.
func (r *fieldReader) keys(field string, exclude []string) []string {
	v := r.value(field)
	if r.err != nil || v == nil {
		return nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		r.fail(field, "must be a list of strings, not %s", v)
		return nil
	}
	for i, k := range list {
		switch {
		case strings.TrimSpace(k) == "":
			r.fail(field, "item %d is empty", i)
		case slices.Contains(list[:i], k):
			r.fail(field, "%q is listed twice", k)
		case slices.Contains(exclude, k):
			r.fail(field, "%q is in requiredConfig too", k)
		}
	}
	return list
}

func (r *fieldReader) checkEntry(m *Manifest) {
	exts := entryExtensions[m.Runtime]
	switch {
	case filepath.IsAbs(m.Entry) || strings.HasPrefix(m.Entry, "/"):
		r.fail("entry", "%q must be a path relative to the manifest's directory", m.Entry)
		return
	case !slices.Contains(exts, strings.ToLower(filepath.Ext(m.Entry))):
		r.fail("entry", "%q does not end in %s, as a %s tool's entry must", m.Entry, strings.Join(exts, " "), m.Runtime)
		return
	}
	fi, err := os.Stat(m.EntryPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.fail("entry", "%s does not exist", m.EntryPath())
	case err != nil:
		r.fail("entry", "%v", err)
	case !fi.Mode().IsRegular():
		r.fail("entry", "%s is not a file", m.EntryPath())
	}
}

// python reads the fields of a Python tool: pythonPath, directories
// relative to the manifest, and pythonClass, a class name. Other runtimes
// may not set them, so that a manifest that means to be a Python tool but
// names another runtime is not run as something it is not.
func (r *fieldReader) python(m *Manifest) {
	if r.err != nil {
		return
	}
	for _, field := range []string{"pythonPath", "pythonClass"} {
		if r.value(field) != nil && m.Runtime != RuntimePython {
			r.fail(field, "applies to runtime %q only, not %q", RuntimePython, m.Runtime)
			return
		}
	}
	m.PythonPath = r.keys("pythonPath", nil)
	for _, p := range m.PythonPath {
		if r.err != nil {
			return
		}
		if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
			r.fail("pythonPath", "%q must be a path relative to the manifest's directory", p)
			return
		}
		dir := filepath.Join(filepath.Dir(m.File), filepath.FromSlash(p))
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.fail("pythonPath", "%s does not exist", dir)
		case err != nil:
			r.fail("pythonPath", "%v", err)
		case !fi.IsDir():
			r.fail("pythonPath", "%s is not a directory", dir)
		}
	}
	if r.value("pythonClass") == nil {
		return
	}
	if m.PythonClass = r.str("pythonClass"); r.err == nil && !pythonName.MatchString(m.PythonClass) {
		r.fail("pythonClass", "%q is not a Python class name (letters, digits and _, not starting with a digit)", m.PythonClass)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrToolNotFound is matched by the error of a lookup for a tool no
// manifest declares.
const ErrToolNotFound = sentinel.Error("toolproto: tool not found")

// Catalog is the tools of a directory: every DIR/**/manifest.json, except
// under node_modules and hidden directories.
type Catalog struct {
	dir      string
	tools    map[string]*Manifest
	problems []*ManifestError
}

// Discover reads every manifest under dir. A manifest that is invalid does
// not make the catalog fail: it is one of its Problems, and looking its
// tool up gives its error.
//
// # Errors
//
// When dir is not a readable directory; the error matches ErrToolNotFound,
// since no tool can be found there.
func Discover(dir string) (*Catalog, error) {
	c := &Catalog{dir: dir, tools: map[string]*Manifest{}}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, notFound("the tools directory %s does not exist", dir)
	case err != nil:
		return nil, notFound("the tools directory %s cannot be read: %v", dir, err)
	case !fi.IsDir():
		return nil, notFound("the tools directory %s is not a directory", dir)
	}
	declared := map[string][]*Manifest{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != ManifestFile {
			return nil
		}
		m, err := LoadManifest(path)
		var merr *ManifestError
		switch {
		case errors.As(err, &merr):
			c.problems = append(c.problems, merr)
		case err != nil:
			c.problems = append(c.problems, &ManifestError{File: path, Msg: err.Error(), id: filepath.Base(filepath.Dir(path))})
		default:
			declared[m.ID] = append(declared[m.ID], m)
		}
		return nil
	})
	if err != nil {
		return nil, notFound("the tools directory %s cannot be read: %v", dir, err)
	}
	for id, ms := range declared {
		if len(ms) == 1 {
			c.tools[id] = ms[0]
			continue
		}
		for _, m := range ms {
			var others []string
			for _, o := range ms {
				if o != m {
					others = append(others, o.File)
				}
			}
			c.problems = append(c.problems, &ManifestError{File: m.File, Field: "id",
				Msg: fmt.Sprintf("%q is declared by %s too", id, strings.Join(others, ", ")), id: id})
		}
	}
	sort.Slice(c.problems, func(i, j int) bool { return c.problems[i].File < c.problems[j].File })
	return c, nil
}

// IDs lists the valid tools' ids, sorted.
func (c *Catalog) IDs() []string { return sortedKeys(c.tools) }

// Problems lists the invalid manifests, by file.
func (c *Catalog) Problems() []*ManifestError { return c.problems }

// Lookup returns the manifest of tool id.
//
// # Errors
//
// The *ManifestError of an invalid manifest that declares id (or, when its
// id cannot be read, is in a directory named id); else, when no valid
// manifest declares id, an error matching ErrToolNotFound.
func (c *Catalog) Lookup(id string) (*Manifest, error) {
	if m, ok := c.tools[id]; ok {
		return m, nil
	}
	for _, p := range c.problems {
		if p.id == id || p.id == "" && filepath.Base(filepath.Dir(p.File)) == id {
			return nil, p
		}
	}
	known := "none"
	if ids := c.IDs(); len(ids) > 0 {
		known = strings.Join(ids, ", ")
	}
	return nil, notFound("no manifest in %s declares tool %q (tools there: %s)", c.dir, id, known)
}

// notFoundError is a lookup that found no tool; its message is for users,
// without the sentinel's text.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrToolNotFound }

func notFound(format string, args ...any) error {
	return &notFoundError{fmt.Sprintf(format, args...)}
}
