// Package confine decides which host files untrusted JavaScript or
// TypeScript may read while wasmgate bundles or type-checks it: those of the
// code's own tree, and nothing else. Bundling (package jstool) and the type
// check (package tscheck) ask the same Tree, so the two cannot disagree about
// what an import may reach.
package confine

import (
	"fmt"
	"os"
	"path/filepath"
)

// Tree is the files one piece of code may read: everything under its root
// directory, the node_modules directories that Node's resolution reaches
// from there (those in the root's ancestors; the root's own are inside it),
// and its entry file. Every path is compared with links resolved on both
// sides, so a link inside the tree that points out of it is outside.
type Tree struct {
	root    string   // the root, links resolved; "" when it is the file system's root
	entry   string   // the entry file, links resolved; "" for a package tree
	modules []string // node_modules directories of the root's ancestors, links resolved
	text    bool     // code given as text (Text): no directory, no packages
}

// Entry is the tree of the code whose entry file is file: its root is the
// nearest directory, from the file's own up, that holds a package.json (the
// project the file belongs to), else the file's directory. The file itself
// may be anywhere: the user named it.
//
// The search starts from the file with links resolved, because that is the
// directory a bundler resolves the file's relative imports from.
//
// # Errors
//
// When file does not exist or its links cannot be resolved.
func Entry(file string) (Tree, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return Tree{}, fmt.Errorf("confine: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Tree{}, fmt.Errorf("confine: %w", err)
	}
	root := filepath.Dir(real)
	for dir := root; ; dir = filepath.Dir(dir) {
		if info, err := os.Stat(filepath.Join(dir, "package.json")); err == nil && info.Mode().IsRegular() {
			root = dir
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	t := newTree(root)
	t.entry = real
	return t, nil
}

// Dir is the tree rooted at dir: for an installed package, the tool store's
// entry directory whose node_modules holds it.
//
// # Errors
//
// When dir does not exist or its links cannot be resolved.
func Dir(dir string) (Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Tree{}, fmt.Errorf("confine: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Tree{}, fmt.Errorf("confine: %w", err)
	}
	return newTree(real), nil
}

// Text is the tree of code given as text, not as a file (Code Mode's
// run_script): it has no directory and no packages around it, so nothing is
// inside it but file, where the text was written for a compiler to read
// (links resolved; "" when the text is on no disk, as when it is bundled
// from memory). Its imports can be only the virtual modules and Node's
// built-ins, which name no host file.
func Text(file string) Tree { return Tree{entry: file, text: true} }

// newTree is the tree under root (links resolved) with the node_modules of
// its ancestors. The ancestors are the user's directories, not the code's,
// so a link there (a node_modules kept on another disk) is followed.
func newTree(root string) Tree {
	var t Tree
	if filepath.Dir(root) == root {
		// A tree rooted at / would hold /etc and /proc: the file system's
		// root holds nothing but its node_modules.
		if real, err := filepath.EvalSymlinks(filepath.Join(root, "node_modules")); err == nil {
			t.modules = append(t.modules, real)
		}
		return t
	}
	t.root = root
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(filepath.Join(dir, "node_modules")); err == nil {
			t.modules = append(t.modules, real)
		}
		if filepath.Dir(dir) == dir {
			return t
		}
	}
}

// Root is the tree's root directory, links resolved ("" when the code's
// directory is the file system's root, which the tree does not include).
func (t Tree) Root() string { return t.root }

// Contains reports whether the file at path (absolute) is inside the tree,
// and returns path with its links resolved. A path whose links cannot be
// resolved (it does not exist, a loop, no permission) is outside.
func (t Tree) Contains(path string) (string, bool) {
	if !filepath.IsAbs(path) {
		return path, false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path, false
	}
	if t.entry != "" && real == t.entry {
		return real, true
	}
	if t.root != "" && within(t.root, real) {
		return real, true
	}
	for _, m := range t.modules {
		if within(m, real) {
			return real, true
		}
	}
	return real, false
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// Rule says what the tree is, for a message: its root relative to base
// (the directory the message's file names are relative to), how the root
// was chosen, and that the node_modules packages found from it are in.
func (t Tree) Rule(base string) string {
	if t.text {
		return "none: it is text, with no files or packages around it (it may import \"toolscript\" and Node's built-ins only)"
	}
	if t.root == "" {
		return "the entry file and the node_modules packages found from it, links resolved (its directory is the file system's root, which holds the whole host)"
	}
	root := t.root
	if realBase, err := filepath.EvalSymlinks(base); err == nil {
		base = realBase
	}
	if rel, err := filepath.Rel(base, t.root); err == nil {
		root = rel
	}
	how := "the directory the packages are installed in"
	if t.entry != "" {
		how = "the nearest directory up from the entry holding package.json, else the entry's own"
	}
	return fmt.Sprintf("%q (%s) and the node_modules packages found from there, links resolved", root, how)
}

// Refusal is the message for an import of specifier that resolved to
// resolved, outside the tree: what the rule is and what broke it. noun
// names the code ("tool", "script", "program", "package"); base is the
// directory the message's file names are relative to. A relative specifier
// is followed by where it led when that is not plain from it (a link).
func (t Tree) Refusal(noun, specifier, resolved, base string) string {
	msg := fmt.Sprintf("imports must stay inside the %s's tree: %s; %q is outside it", noun, t.Rule(base), specifier)
	if resolved == "" || filepath.IsAbs(specifier) {
		return msg
	}
	shown := resolved
	if realBase, err := filepath.EvalSymlinks(base); err == nil {
		if rel, err := filepath.Rel(realBase, resolved); err == nil {
			shown = rel
		}
	}
	if shown == filepath.Clean(specifier) {
		return msg
	}
	return msg + " (it resolves to " + shown + ")"
}
