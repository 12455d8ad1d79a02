package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
)

// What every engine shares: the bytes it compiles, the compile cache, and
// how an execution drives an instance. An engine adds only its own
// compilation, instantiation and the adapters between its types and
// package host's.

// instrumentOptions are the same for every module and engine: that is what
// makes fuel counts and stack limits identical everywhere.
var instrumentOptions = instrument.Options{MaxCallDepth: MaxCallDepth, CanonicalizeNaN: true}

// instrumentFor is instrumentOptions for a module glue drives (nil: any
// other module): the glue's own call-depth limit, when it sets one.
func instrumentFor(glue *host.Glue) instrument.Options {
	o := instrumentOptions
	if glue != nil && glue.MaxCallDepth > 0 {
		o.MaxCallDepth = glue.MaxCallDepth
	}
	return o
}

// admitAndInstrument runs admission (for glue, when set) and returns the
// bytes every engine compiles: the instrumented module (the admitted one
// when uninstrumented, for benchmarks only).
func admitAndInstrument(wasm []byte, glue *host.Glue, uninstrumented bool) (ModuleInfo, []byte, error) {
	info, code, err := admitFor(wasm, glue)
	if err != nil {
		return info, nil, err
	}
	if !uninstrumented {
		var facts instrument.Facts
		code, facts, err = instrument.InstrumentFacts(code, instrumentFor(glue))
		if err != nil {
			return info, nil, &AdmissionError{Problem: "cannot instrument the module", Err: err}
		}
		info.recyclable = facts.StateIsMemoryAndGlobals
	}
	info.maxDepth = instrumentFor(glue).MaxCallDepth
	return info, code, nil
}

// cacheKey names the compiled form of the module whose digest (digestHex)
// is given (driven by glue, when set): compiled code is the instrumented
// module, so the key names the instrumenter's version too.
func cacheKey(digest string, glue *host.Glue) string {
	key := digest
	if glue != nil {
		key += "/" + glue.Name
	}
	return key + "/instrument-v" + strconv.Itoa(instrument.Version)
}

// compileCache holds an engine's compiled modules by cacheKey. Concurrent
// loads of the same module wait for one compilation.
type compileCache[M any] struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry[M]
}

type cacheEntry[M any] struct {
	ready chan struct{}
	mod   M
	err   error
}

// get returns the module compiled under key, compiling it once.
func (c *compileCache[M]) get(ctx context.Context, key string, compile func() (M, error)) (M, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*cacheEntry[M]{}
	}
	entry, ok := c.entries[key]
	if !ok {
		entry = &cacheEntry[M]{ready: make(chan struct{})}
		c.entries[key] = entry
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-entry.ready:
			return entry.mod, entry.err
		case <-ctx.Done():
			var zero M
			return zero, ctx.Err()
		}
	}
	entry.mod, entry.err = compile()
	if entry.err != nil && ctx.Err() != nil {
		// A cancelled compile says nothing about the module: forget it.
		c.mu.Lock()
		delete(c.entries, key)
		c.mu.Unlock()
	}
	close(entry.ready)
	return entry.mod, entry.err
}

// each calls f on every module compiled so far.
func (c *compileCache[M]) each(f func(M)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		select {
		case <-e.ready:
			if e.err == nil {
				f(e.mod)
			}
		default:
		}
	}
}

// driver runs one execution on a fresh instance.
type driver func(ctx context.Context, inst host.Instance, sess *host.Session, maxOutput int) ([]byte, error)

// driveConvention calls a module by its calling convention: the start
// function (moved out of instantiation by the instrumenter so that it runs
// metered, when hasStart), then _start, or _initialize and ABI v1.
func driveConvention(info ModuleInfo, hasStart bool, in Input) driver {
	return func(ctx context.Context, inst host.Instance, sess *host.Session, maxOutput int) ([]byte, error) {
		if hasStart {
			if _, err := inst.Call(ctx, instrument.StartExport); err != nil {
				return nil, err
			}
		}
		if info.Convention == ConventionCommand {
			// proc_exit(0) ends a command successfully by unwinding with an
			// error, so stdout is the output whatever _start returned.
			_, err := inst.Call(ctx, host.ExportStart)
			return sess.Stdout(), err
		}
		if info.Reactor {
			if _, err := inst.Call(ctx, host.ExportInitialize); err != nil {
				return nil, err
			}
		}
		res, err := host.RunABIv1(ctx, inst, in.Bytes, maxOutput)
		if err != nil {
			return nil, err
		}
		if res.Status == host.StatusError {
			return nil, &host.GuestFailure{Msg: string(res.Output)}
		}
		return res.Output, nil
	}
}

func glueDriver(d Driver) driver {
	return func(ctx context.Context, inst host.Instance, _ *host.Session, _ int) ([]byte, error) {
		return d(ctx, inst)
	}
}

// tooLargeToStart is the Outcome of an execution whose memory and tables
// would start above memory_pages: the memory at the module's own minimum or
// the snapshot's size, the tables at their initial sizes, TableElementBytes
// an element.
func tooLargeToStart(info ModuleInfo, from *Snapshot, lim Limits) (Outcome, bool) {
	minPages := info.MemoryMinPages
	if from != nil {
		minPages = max(minPages, uint32(len(from.memory)/pageSize))
	}
	allowed := uint64(lim.MemoryPages) * pageSize
	tables := info.TableElements * TableElementBytes
	switch {
	case minPages > lim.MemoryPages:
		return Outcome{Kind: MemoryExhausted, Message: fmt.Sprintf(
			"the module's memory starts at %d pages; memory_pages allows %d", minPages, lim.MemoryPages)}, true
	case uint64(minPages)*pageSize+tables > allowed:
		return Outcome{Kind: MemoryExhausted, Message: fmt.Sprintf(
			"the module's memory starts at %d pages (%d bytes) and its tables at %d elements (%d bytes at %d each); memory_pages allows %d pages (%d bytes)",
			minPages, uint64(minPages)*pageSize, info.TableElements, tables, TableElementBytes, lim.MemoryPages, allowed)}, true
	}
	return Outcome{}, false
}

// setBudget gives an instance, once instantiated (and restored from a
// snapshot), what is left of memory_pages for its memory and tables to grow
// into: the limit less the memory's current size and the tables' initial
// ones (see instrument.BudgetGlobal). tooLargeToStart has made sure that
// is not negative.
func setBudget(g fuelGlobal, info ModuleInfo, lim Limits, memoryPages uint64) {
	used := memoryPages*pageSize + info.TableElements*TableElementBytes
	g.Set(int64(uint64(lim.MemoryPages)*pageSize - min(used, uint64(lim.MemoryPages)*pageSize)))
}

// verdict classifies how an execution ended and completes its Outcome: the
// output (and the snapshot, when one was captured) of a run that completed,
// the fuel used and the guest's stderr.
func verdict(parent context.Context, err error, st runState, fuelUsed uint64, out []byte, snap *Snapshot, sess *host.Session) (Outcome, *Snapshot, error) {
	o, cerr := classify(parent, err, st)
	if cerr != nil {
		return Outcome{}, nil, cerr
	}
	o.FuelUsed = fuelUsed
	if o.Kind == Completed {
		o.Output = out
	} else {
		snap = nil
	}
	o.Stderr, _ = sess.Stderr()
	return o, snap, nil
}
