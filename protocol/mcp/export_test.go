package mcp

import (
	"context"

	"github.com/wasmgate/wasmgate/pipeline"
)

// OnLoad makes c call hook before it loads each export, for a call or for
// the catalog: tests count the loads, and hold them back by blocking.
func OnLoad(c *StoreCatalog, hook func(src pipeline.ExecutorSource)) {
	load := c.loadExecutor
	c.loadExecutor = func(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error) {
		hook(src)
		return load(ctx, src)
	}
}

// CatalogRecordFile is the name of a package's catalog record.
const CatalogRecordFile = catalogRecordFile

// Waiting is how many callers wait for the load of src in progress.
func Waiting(c *StoreCatalog, src pipeline.ExecutorSource) int {
	c.mu.Lock()
	f := c.execs[sourceKey(src)]
	c.mu.Unlock()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}
