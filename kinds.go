package wasmgate

import (
	"errors"

	"github.com/wasmgate/wasmgate/pipeline"
)

// Kind is an executor kind: code that an interpreter, itself a Wasm module,
// runs. Wasm modules need none; JavaScript and TypeScript tools and npm
// packages need js.Kind() (package github.com/wasmgate/wasmgate/js). See
// pipeline.Kind.
type Kind = pipeline.Kind

// WithKind lets the registry load the code of kind k, as WithExecutor
// names it or a registry file does: WithKind(js.Kind()) for JS tools and
// packages. A Runtime without the kind of some executor's code fails New
// with an error naming the package to import (matching
// pipeline.ErrNoKind); a program that never gives a kind does not link it.
// The kinds reach WithRegistryFile and WithExecutor; a WithRegistry
// function gives its registry the kinds it needs itself
// (pipeline.NewRegistry).
func WithKind(k Kind) Option {
	return func(o *options) {
		if k == nil {
			o.errs = append(o.errs, errors.New("WithKind: nil kind"))
			return
		}
		o.kinds = append(o.kinds, k)
	}
}
