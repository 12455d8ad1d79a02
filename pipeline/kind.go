package pipeline

import (
	"context"
	"fmt"

	"github.com/wasmgate/wasmgate/internal/sentinel"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Kind loads the executors of one kind of code that is not a Wasm module
// of its own: code an interpreter runs, the interpreter being a Wasm module
// (JavaScript and TypeScript tools in the QuickJS engine: package
// github.com/wasmgate/wasmgate/js). The pipeline loads Wasm itself; a kind
// is given to the registry that loads its code (NewRegistry, LoadRegistry,
// LoadExecutor, RegistryForSource; wasmgate.WithKind), so that a program
// that does not give it does not link it (the JavaScript kind links a
// bundler and the engine).
//
// A kind's executors are Executors like any other: the pipeline checks,
// runs, judges and audits them alike.
type Kind interface {
	// Name names the kind in messages ("JavaScript").
	Name() string
	// Loads reports whether src names code of this kind (for the
	// JavaScript kind: src.JS, src.Package or src.Bundle).
	Loads(src ExecutorSource) bool
	// Load loads the executor src names on engine. fallback is the
	// manifest of code that carries none. It is called only with a src
	// that Loads accepts and that names exactly one piece of code.
	//
	// Its error says what is wrong with the code: MissingCode's when the
	// code is not there (EXECUTOR_NOT_FOUND), one matching
	// sandbox.ErrNotAdmitted when it cannot be admitted (EXECUTOR_INVALID;
	// Refused makes one), and also ErrLoadMemoryExhausted when loading it
	// ran out of its memory limit (LIMIT_EXCEEDED, MEMORY_EXHAUSTED). Any
	// other error fails the registry's loading.
	Load(ctx context.Context, engine sandbox.Engine, src ExecutorSource, fallback sandbox.Manifest) (Executor, error)
}

// Errors of kinds.
const (
	// ErrNoKind is matched by the error for code that no kind given to
	// the registry loads: a JS tool where the JavaScript kind was not
	// given. The error names the package that has the kind.
	ErrNoKind = sentinel.Error("pipeline: no executor kind given loads this code")

	// ErrLoadMemoryExhausted is matched by a kind's load error when
	// loading the code (a JS tool's module and its top-level code) needed
	// more memory than its memory_pages: its requests are BLOCKED with
	// LIMIT_EXCEEDED and MEMORY_EXHAUSTED, as its calls would be.
	ErrLoadMemoryExhausted = sentinel.Error("pipeline: loading the code needed more memory than its limit (MEMORY_EXHAUSTED)")
)

// MissingCode wraps a kind's error that says the code it was given is not
// there (a file that does not exist, a package not installed): the requests
// routed to it are BLOCKED with EXECUTOR_NOT_FOUND. The message is err's.
func MissingCode(err error) error { return missingCode{err} }

// ToolNotFound wraps a kind's error that says the code has no tool of the
// name asked for (a package without that export): the requests routed to it
// are BLOCKED with EXECUTOR_INVALID, and their verdict's Failure is
// FailureNotFound, which fronts answer as a tool that is not there. The
// message is err's.
func ToolNotFound(err error) error { return toolNotFound{refused(err)} }

// toolNotFound is ToolNotFound's error: refused, and the tool not found.
type toolNotFound struct{ err error }

func (e toolNotFound) Error() string { return e.err.Error() }
func (e toolNotFound) Unwrap() error { return e.err }

// Refused wraps a kind's error that says the code it was given cannot be
// an executor (it does not bundle, its manifest is not valid): the requests
// routed to it are BLOCKED with EXECUTOR_INVALID. The message is err's; an
// err that matches sandbox.ErrNotAdmitted already comes back as it is.
func Refused(err error) error { return refused(err) }

// kindsByField names, for each field of ExecutorSource that is a kind's,
// the kind and where it is: what the error for code without its kind tells
// the embedder to import.
var kindsByField = []struct {
	has       func(ExecutorSource) bool
	name, pkg string
	value     string
}{
	{func(s ExecutorSource) bool { return s.JS != "" || s.Package != "" || s.Bundle != nil }, "JavaScript", "github.com/wasmgate/wasmgate/js", "js.Kind()"},
	{func(s ExecutorSource) bool { return s.Python != "" }, "Python", "github.com/wasmgate/wasmgate/py", "py.Kind()"},
}

// kindOf finds the kind in kinds that loads src.
func kindOf(src ExecutorSource, kinds []Kind) (Kind, error) {
	for _, k := range kinds {
		if k != nil && k.Loads(src) {
			return k, nil
		}
	}
	for _, f := range kindsByField {
		if f.has(src) {
			return nil, fmt.Errorf("%w: %s is %s code, which this registry was not given the kind for: import %s and give %s (wasmgate.WithKind(%s), or to pipeline.NewRegistry, LoadRegistry, LoadExecutor or RegistryForSource)",
				ErrNoKind, src.describe(), f.name, f.pkg, f.value, f.value)
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoKind, src.describe())
}
