package jstool

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
)

// List returns every package in the store, sorted by name, and for each
// name only its highest version (by semver precedence of its release
// numbers). Entries that are not packages (the spec records, an Add in
// progress) are skipped; a damaged entry is an error naming it.
//
// An empty or missing store lists nothing.
func (s Store) List() ([]*Installed, error) {
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
	names := make([]string, 0, len(latest))
	for n := range latest {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*Installed, 0, len(names))
	for _, n := range names {
		inst, err := s.load(n, latest[n])
		if errors.Is(err, fs.ErrNotExist) {
			continue // an entry without its bundle is not a package
		}
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

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
