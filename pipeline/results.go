package pipeline

import (
	"fmt"
)

// Results says what an ActionResult carries back to its caller.
type Results int

const (
	// ResultsFull returns the output, and the executor's own text: the
	// message of its failure and its diagnostic log.
	ResultsFull Results = iota
	// ResultsDigestOnly returns the verdict with digests only: no output
	// (its digest stays), no log, and no message that quotes the executor.
	// It is for deployments under the executor contract's privacy rule
	// (raw inputs and outputs never leave the pipeline; only digests are
	// emitted).
	ResultsDigestOnly
)

// String is the mode as flags spell it.
func (r Results) String() string {
	if r == ResultsDigestOnly {
		return "digest-only"
	}
	return "full"
}

// ParseResults reads a mode as flags spell it: "full" or "digest-only".
func ParseResults(s string) (Results, error) {
	switch s {
	case "full":
		return ResultsFull, nil
	case "digest-only":
		return ResultsDigestOnly, nil
	}
	return 0, fmt.Errorf("results mode %q: want full or digest-only", s)
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// WithResults sets what results carry back (ResultsFull by default).
func WithResults(r Results) Option {
	return func(p *Pipeline) { p.results = r }
}

// withheld replaces a message that quotes the executor in digest-only
// results.
const withheld = "the executor's message is withheld: results are digest-only"

// Present returns res as the mode r lets it leave the pipeline.
func (r Results) Present(res ActionResult) ActionResult {
	if r != ResultsDigestOnly {
		return res
	}
	res.Output, res.Log = nil, ""
	if res.QuotesExecutor {
		// A tool that proved no tool keeps saying so (res.Failure says it
		// to fronts too), but not what it threw.
		if res.Failure == FailureToolInvalid {
			res.Message = "TOOL_INVALID: " + withheld
		} else {
			res.Message = withheld
		}
	}
	return res
}
