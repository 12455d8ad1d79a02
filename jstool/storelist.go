package jstool

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Listed names a package in the store: its name and exact version.
type Listed struct{ Name, Version string }

// Latest names every package in the store, sorted by name, and for each
// name only its highest version (by semver precedence of its release
// numbers), without reading them (Load reads one). Entries that are not
// packages (the spec records, an Add in progress) are skipped. An empty or
// missing store names nothing.
func (s Store) Latest() ([]Listed, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	latest := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || n == specsDirName || strings.HasPrefix(n, ".") {
			continue
		}
		at := strings.LastIndex(n, "@")
		if at <= 0 {
			continue
		}
		name, version := strings.Replace(n[:at], "+", "/", 1), n[at+1:]
		if !exactVersion.MatchString(version) {
			continue
		}
		if old, ok := latest[name]; !ok || newerVersion(version, old) {
			latest[name] = version
		}
	}
	out := make([]Listed, 0, len(latest))
	for n, v := range latest {
		out = append(out, Listed{n, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Load reads the package l names (an error matching fs.ErrNotExist when it
// is not, or no longer, in the store).
func (s Store) Load(l Listed) (*Installed, error) { return s.load(l.Name, l.Version) }

// newerVersion reports whether exact version a is higher than b: higher
// release numbers, or the same ones without a prerelease where b has one.
func newerVersion(a, b string) bool {
	ra, pa, _ := strings.Cut(strings.SplitN(a, "+", 2)[0], "-")
	rb, pb, _ := strings.Cut(strings.SplitN(b, "+", 2)[0], "-")
	na, nb := strings.Split(ra, "."), strings.Split(rb, ".")
	for i := 0; i < len(na) && i < len(nb); i++ {
		x, _ := strconv.Atoi(na[i])
		y, _ := strconv.Atoi(nb[i])
		if x != y {
			return x > y
		}
	}
	if (pa == "") != (pb == "") {
		return pa == ""
	}
	return pa > pb
}
