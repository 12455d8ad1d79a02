// Package tscheck type-checks a TypeScript script with TypeScript's own
// compiler: TypeScript 7, the native port, whose compiler is one binary per
// platform in the npm packages @typescript/typescript-PLATFORM.
//
// The binary is fetched from the npm registry the first time it is needed,
// verified against a sha512 pinned here, and kept in a cache directory
// (Default). Each Check runs it in a fresh directory holding the
// declaration files the caller gives and a tsconfig.json with strict
// options and the ES2023 standard library only: no DOM and no Node types, so
// a script may use only what the language and those declarations provide.
//
// The script is untrusted: the compiler reads only the script's own tree
// (the rule bundling follows), the standard library and the declarations,
// and runs under a wall-time and a memory bound.
package tscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Version is the TypeScript version the checker runs.
const Version = "7.0.2"

// Checker runs TypeScript's compiler, fetched into Dir the first time it is
// needed, under a wall-time and a memory bound.
type Checker struct {
	Dir string
	// Timeout bounds the wall-clock time of one Check's compiler runs,
	// together; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxMemory bounds the compiler's resident memory, and what it prints,
	// in bytes; 0 means DefaultMaxMemory. Where resident memory cannot be
	// read (any platform but Linux) only its collector is told
	// (GOMEMLIMIT), and only the output is held to it.
	MaxMemory int64
}

// cacheDirEnv names the variable that moves wasmgate's cache; the compiler
// is kept in its typescript directory. "off" is ignored here: the compiler
// has to live somewhere.
const cacheDirEnv = "WASMGATE_CACHE_DIR"

// Default is the checker of the user cache: $WASMGATE_CACHE_DIR/typescript
// when set (and not "off"), else <os.UserCacheDir()>/wasmgate/typescript.
// Without a user cache directory (no $HOME) it falls back to the system
// temporary directory.
func Default() Checker {
	if dir := os.Getenv(cacheDirEnv); dir != "" && dir != "off" {
		return Checker{Dir: filepath.Join(dir, "typescript")}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return Checker{Dir: filepath.Join(cache, "wasmgate", "typescript")}
}

// Diagnostic is one error the compiler reported.
type Diagnostic struct {
	File         string // as the caller named it (the script's path as given), or the declaration file's name
	Line, Column int    // 1-based
	Code         int    // TS error number, e.g. 2345
	Message      string // the compiler's text, continuation lines joined with "\n  "
}

// String is "FILE:LINE:COL: error TSCODE: MESSAGE", or "error TSCODE:
// MESSAGE" for a diagnostic about no file (File is "").
func (d Diagnostic) String() string {
	if d.File == "" {
		return fmt.Sprintf("error TS%d: %s", d.Code, d.Message)
	}
	return fmt.Sprintf("%s:%d:%d: error TS%d: %s", d.File, d.Line, d.Column, d.Code, d.Message)
}

// TreeError refuses a script whose type check would read a file outside its
// tree (the nearest directory up from the script holding package.json, else
// the script's own, and the node_modules packages found from there, links
// resolved): through an import, an `import type`, a `/// <reference>`
// directive, a package's types. Nothing was type-checked.
type TreeError struct {
	Script string // as the caller named it
	// Problems are "FILE: MESSAGE", one for each file outside the tree, FILE
	// the one that imports it (named as in Diagnostic.File).
	Problems []string
}

func (e *TreeError) Error() string {
	return "tscheck: cannot type-check " + e.Script + ": " + strings.Join(e.Problems, "; ")
}
