// Package sentinel is the one type of wasmgate's sentinel errors: a string
// that is an error, so that a package can declare its sentinels as
// constants, which no caller can reassign (a var made with errors.New can
// be).
//
// Two sentinels are the same error when their texts are equal, whatever
// package declares them, so no two may share a text: start it with the
// package's name ("audit: …"); TestTextsAreUnique holds the module to that.
package sentinel

// Error is a sentinel error: declare one as
//
//	const ErrBusy = sentinel.Error("pipeline: busy")
//
// and match it with errors.Is, or wrap it with %w.
type Error string

func (e Error) Error() string { return string(e) }
