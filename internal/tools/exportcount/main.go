// Command exportcount counts the public surface of the wasmgate module: the
// exported top-level names of every package an embedder can import.
//
//	go run ./internal/tools/exportcount [module root]
//
// It prints one line per package, largest first, and the total. What it
// counts (CONTRIBUTING.md, "The public surface", says why):
//
//   - every exported const, var, type and func declared at the top level of
//     a package's non-test .go files: each name once, also when a const or
//     var block declares several, and once per package when files for
//     different build tags each declare it;
//   - not methods, struct fields or interface methods: they are reached
//     through a counted type;
//   - in every package of the module except those under an internal/
//     directory (no other module can import them), cmd/ (a command, not a
//     library) and bench/ (benchmarks); directories the go tool ignores
//     (testdata, names starting with . or _) and nested modules are not
//     packages of this module.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/tools/exportcount [module root]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	counts, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportcount:", err)
		os.Exit(1)
	}
	report(os.Stdout, counts)
}

// packageCount is one package's exported names.
type packageCount struct {
	Dir   string // slash-separated, relative to the module root
	Names []string
}

// count returns the exported top-level names of every public package under
// root, the directory of the module's go.mod.
func count(root string) ([]packageCount, error) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("%s is not a module root (no go.mod there; run from the repository's top directory or name it): %w", root, err)
	}
	names := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel, path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if !public(dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		if names[dir] == nil {
			names[dir] = map[string]bool{}
		}
		for _, n := range exported(f) {
			names[dir][n] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]packageCount, 0, len(names))
	for dir, set := range names {
		pc := packageCount{Dir: dir}
		for n := range set {
			pc.Names = append(pc.Names, n)
		}
		slices.Sort(pc.Names)
		out = append(out, pc)
	}
	slices.SortFunc(out, func(a, b packageCount) int {
		return cmp.Or(cmp.Compare(len(b.Names), len(a.Names)), cmp.Compare(a.Dir, b.Dir))
	})
	return out, nil
}

// skipDir reports whether a directory holds no package of this module: the
// go tool ignores testdata and names starting with . or _, npm's trees are
// not Go, and a go.mod starts another module.
func skipDir(rel, path string) bool {
	base := filepath.Base(rel)
	if base == "testdata" || base == "node_modules" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return !errors.Is(err, fs.ErrNotExist)
}

// public reports whether another module can import the package in dir.
func public(dir string) bool {
	first, _, _ := strings.Cut(dir, "/")
	if first == "cmd" || first == "bench" {
		return false
	}
	return !slices.Contains(strings.Split(dir, "/"), "internal")
}

// exported lists the exported top-level names a file declares.
func exported(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

func report(w io.Writer, counts []packageCount) {
	total := 0
	for _, pc := range counts {
		name := pc.Dir
		if name == "." {
			name = "(module root)"
		}
		fmt.Fprintf(w, "%5d  %s\n", len(pc.Names), name)
		total += len(pc.Names)
	}
	fmt.Fprintf(w, "%5d  total in %d packages\n", total, len(counts))
}
