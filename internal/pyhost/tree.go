package pyhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// The bounds of a code tree: what one executor carries into its snapshot.
const (
	// MaxTreeFiles bounds the files of a code's tree.
	MaxTreeFiles = 20_000
	// MaxTreeBytes bounds their bytes together.
	MaxTreeBytes = 64 << 20
)

// AppRoot is where the code's own directory is, inside the interpreter;
// LibRoot+"/N" is the Nth --py-path directory (from 1).
const (
	AppRoot = "/app"
	LibRoot = "/lib"
)

// ErrTree is matched by the errors of trees that cannot be code: too large,
// a link out of it, a file that is not Python.
var ErrTree = errors.New("pyhost: the code's tree cannot be loaded")

// Tree collects the code of file (a .py file) and of the directories paths
// (pure-Python dependencies, a site-packages), as the interpreter imports
// them: file's directory is AppRoot, the first import root, as a script's
// directory is sys.path[0]; paths follow as LibRoot/1, LibRoot/2...
//
// Only what Python can import is collected, so that pointing at a busy
// directory does not carry everything in it: from file's directory, its
// .py files and its packages (directories with __init__.py), whole; from
// each of paths, every directory but hidden ones and __pycache__. In a
// package or a path, files other than .py are kept too (a package reads
// its data with get_data or importlib.resources), but compiled extensions
// (.so, .pyd, .dylib) and bytecode (.pyc) are not: a native extension cannot
// run in the interpreter, and bytecode is made again from the sources.
//
// A symbolic link is followed only when it stays inside the root it is
// in: one that leaves it fails the load, as an import resolving outside the
// code's tree does for JS.
//
// # Errors
//
// Matching os.ErrNotExist when file or a path is not there; ErrTree when
// file is not a .py file, a path is not a directory, a link leaves its
// root, or the tree is beyond MaxTreeFiles or MaxTreeBytes.
func Tree(file string, paths []string) (files map[string][]byte, roots []string, err error) {
	if filepath.Ext(file) != ".py" {
		return nil, nil, fmt.Errorf("%w: %s is not a .py file", ErrTree, file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, nil, err
	}
	c := collector{files: map[string][]byte{}}
	roots = []string{AppRoot}
	if err := c.walk(filepath.Dir(abs), AppRoot, true); err != nil {
		return nil, nil, err
	}
	if _, ok := c.files[AppRoot+"/"+filepath.Base(abs)]; !ok {
		// file itself is always there, whatever its name says.
		if err := c.add(abs, AppRoot+"/"+filepath.Base(abs), filepath.Dir(abs)); err != nil {
			return nil, nil, err
		}
	}
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("%w: --py-path %s is not a directory", ErrTree, p)
		}
		dir, err := filepath.Abs(p)
		if err != nil {
			return nil, nil, err
		}
		root := LibRoot + "/" + strconv.Itoa(i+1)
		roots = append(roots, root)
		if err := c.walk(dir, root, false); err != nil {
			return nil, nil, err
		}
	}
	return c.files, roots, nil
}

type collector struct {
	files map[string][]byte
	bytes int64
}

// walk collects dir (the host directory of root) into root. top: dir is a
// script's directory, where only modules and packages are taken.
func (c *collector) walk(dir, root string, top bool) error {
	realRoot, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		name := d.Name()
		virtual := path.Join(root, filepath.ToSlash(rel))
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return err
			}
			if r, err := filepath.Rel(realRoot, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%w: %s links to %s, outside %s: code may import only from its own tree", ErrTree, p, target, dir)
			}
			st, err := os.Stat(target)
			if err != nil {
				return err
			}
			if st.IsDir() {
				// Walking into a link would leave WalkDir's tree: the
				// directory it names is inside the root and is walked
				// there.
				return nil
			}
		}
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" {
				return filepath.SkipDir
			}
			if top && filepath.Dir(p) == dir {
				if _, err := os.Stat(filepath.Join(p, "__init__.py")); err != nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if top && filepath.Dir(p) == dir && filepath.Ext(name) != ".py" {
			return nil
		}
		switch filepath.Ext(name) {
		case ".so", ".pyd", ".dylib", ".pyc", ".pyo":
			return nil
		}
		return c.add(p, virtual, dir)
	})
}

func (c *collector) add(p, virtual, dir string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	if len(c.files) >= MaxTreeFiles {
		return fmt.Errorf("%w: %s holds more than %d files; give --py-path the dependencies' own directory", ErrTree, dir, MaxTreeFiles)
	}
	if c.bytes+st.Size() > MaxTreeBytes {
		return fmt.Errorf("%w: the code's tree is larger than %d MiB (at %s); give --py-path the dependencies' own directory", ErrTree, MaxTreeBytes>>20, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	c.bytes += int64(len(b))
	c.files[virtual] = b
	return nil
}
