package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wg "github.com/wasmgate/wasmgate"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// storePkg is a package laid out in a tool store as `wasmgate tools add`
// leaves it: its bundle, and its package.json.
type storePkg struct{ name, version, bundle string }

// The packages of the tests' store, in the order the catalog loads them
// (by name: "@" sorts first).
var (
	gamma = storePkg{"@acme/gamma", "1.0.0", `export const add = { execute: ({ a, b }) => ({ sum: a + b }) };`}
	alpha = storePkg{"alpha-tools", "1.0.0", `export const shout = { description: "Shouts.", execute: ({ s }) => ({ s: s.toUpperCase() }) };
export const whisper = { execute: ({ s }) => ({ s: s.toLowerCase() }) };
export class Greeter { execute() { return "hi"; } }
`}
	beta = storePkg{"beta-tool", "2.0.0", `export default { execute: ({ n }) => ({ twice: 2 * n }) };`}
)

// storeOf lays out a tool store holding pkgs.
func storeOf(t *testing.T, pkgs ...storePkg) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pkgs {
		writePackage(t, dir, p)
	}
	return dir
}

func writePackage(t *testing.T, dir string, p storePkg) {
	t.Helper()
	entry := filepath.Join(dir, strings.Replace(p.name, "/", "+", 1)+"@"+p.version)
	pkgDir := filepath.Join(entry, "node_modules", filepath.FromSlash(p.name))
	require.NoError(t, os.MkdirAll(pkgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), []byte(p.bundle), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte(`{"name":"`+p.name+`","version":"`+p.version+`"}`), 0o644))
}

// syncLog is a log the catalog writes while the test reads it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// loads counts the exports a catalog loads, by PACKAGE@VERSION#EXPORT, and
// lets a test hold the loads of one package back.
type loads struct {
	mu    sync.Mutex
	seen  []string
	holdP string        // the package whose loads wait
	held  chan string   // receives each held load
	go_   chan struct{} // lets one held load go on; closed, lets them all
}

func countLoads(c *mcp.StoreCatalog, hold string) *loads {
	l := &loads{holdP: hold, held: make(chan string, 16), go_: make(chan struct{})}
	mcp.OnLoad(c, func(src pipeline.ExecutorSource) {
		key := src.Package + "#" + src.Tool
		l.mu.Lock()
		l.seen = append(l.seen, key)
		l.mu.Unlock()
		if src.Package == l.holdP || l.holdP == "*" {
			l.held <- key
			<-l.go_
		}
	})
	return l
}

func (l *loads) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.seen...)
}

func newCatalog(t *testing.T, store string, log *syncLog) *mcp.StoreCatalog {
	t.Helper()
	return newCatalogOn(t, sandbox.EngineWazero, store, log)
}

// newCatalogOn is the catalog of store on a Runtime of engine, with an
// empty registry, closed when the test ends.
func newCatalogOn(t *testing.T, engine sandbox.EngineName, store string, log *syncLog) *mcp.StoreCatalog {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, nil))
	}
	rt, err := wg.New(context.Background(), wg.WithEngine(engine), wg.WithCompilationCacheDir(testenv.CacheDir()),
		wg.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }),
		wg.WithAuditSink(audit.NewMemorySink()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return mcp.NewStoreCatalog(mcp.StoreConfig{
		Store:   jstool.Store{Dir: store},
		Runtime: rt,
		Limits:  sandbox.Limits{TimeoutMs: 60_000},
		Logger:  logger,
	})
}

// runCatalog runs c until the test ends.
func runCatalog(t *testing.T, c *mcp.StoreCatalog) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// untilReady waits until c has loaded every package (Changes is sent
// after each), and returns its status.
func untilReady(t *testing.T, c *mcp.StoreCatalog) mcp.StoreStatus {
	t.Helper()
	for {
		if s := c.Status(); s.State == "ready" {
			return s
		}
		select {
		case <-c.Changes():
		case <-time.After(2 * time.Minute):
			t.Fatalf("the catalog did not load: %+v", c.Status())
		}
	}
}

func toolNamesOf(tools []mcp.Tool) []string {
	names := []string{}
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// listed is what a client's tools/list gives.
func listed(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	names := []string{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// connectStore opens a client session with srv, in process; list_changed
// notifications go to changed.
func connectStore(t *testing.T, srv *mcp.Server, changed chan<- struct{}) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ss, err := srv.SDK().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func awaitChange(t *testing.T, changed <-chan struct{}) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("no notifications/tools/list_changed")
	}
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*sdk.TextContent).Text
}

// A server offering a tool store answers at once: tools/list gives what
// has loaded so far, one export at a time in the background, and each
// tool that arrives is announced with tools/list_changed. The loads are
// held back one by one, so each step is seen.
func TestStoreCatalogLoadsInTheBackground(t *testing.T) {
	store := storeOf(t, alpha, beta, gamma)
	var log syncLog
	c := newCatalog(t, store, &log)
	l := countLoads(c, "*")
	srv, err := mcp.New(context.Background(), mcp.Config{Store: c})
	require.NoError(t, err)
	changed := make(chan struct{}, 16)
	cs := connectStore(t, srv, changed)

	assert.Equal(t, mcp.StoreStatus{State: "loading", Packages: 3}, c.Status())
	assert.Equal(t, []string{}, listed(t, cs), "nothing is loaded before Run")

	runCatalog(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A tick that never comes: only the catalog's changes refresh the list.
	go srv.Watch(ctx, time.Hour)

	steps := []struct {
		load string
		list []string // after the load, when it adds a tool
	}{
		{"@acme/gamma@1.0.0#add", []string{"acme_gamma_add"}},
		{"alpha-tools@1.0.0#Greeter", nil},
		{"alpha-tools@1.0.0#shout", []string{"acme_gamma_add", "alpha-tools_shout"}},
		{"alpha-tools@1.0.0#whisper", []string{"acme_gamma_add", "alpha-tools_shout", "alpha-tools_whisper"}},
		{"beta-tool@2.0.0#default", []string{"acme_gamma_add", "alpha-tools_shout", "alpha-tools_whisper", "beta-tool"}},
	}
	for i, step := range steps {
		select {
		case got := <-l.held:
			require.Equal(t, step.load, got)
		case <-time.After(time.Minute):
			t.Fatalf("no load after %v:\n%s", l.list(), log.String())
		}
		s := c.Status()
		assert.Equal(t, "loading", s.State)
		assert.Equal(t, 3, s.Packages)
		l.go_ <- struct{}{}
		if step.list != nil {
			awaitChange(t, changed)
			assert.Equal(t, step.list, listed(t, cs), "after load %d", i)
		}
	}
	assert.Equal(t, mcp.StoreStatus{State: "ready", Packages: 3, PackagesLoaded: 3, Tools: 4}, untilReady(t, c))
	close(l.go_) // the calls' loads
	assert.Equal(t, `{"s":"HI"}`, callText(t, cs, "alpha-tools_shout", map[string]any{"s": "hi"}))
	assert.Equal(t, `{"twice":42}`, callText(t, cs, "beta-tool", map[string]any{"n": 21}))

	// The progress, in the log: a line per package, the export that is
	// not a tool and why, and the end (written once the status is ready).
	for !strings.Contains(log.String(), "mcp: tool store loaded") {
		time.Sleep(time.Millisecond)
	}
	lines := logLines(log.String(), "mcp: ")
	assert.Equal(t, []string{
		`msg="mcp: loading the tool store in the background" dir=` + store + ` packages=3`,
		`msg="mcp: package loaded" package=@acme/gamma@1.0.0 tools=1 not_tools=0 from=sandbox`,
		`msg="mcp: export not offered as a tool" package=alpha-tools@1.0.0 export=Greeter error="TOOL_INVALID: alpha-tools@1.0.0: export \"Greeter\" is a class, not a tool: a tool is an object with an execute function, or a function that returns one"`,
		`msg="mcp: package loaded" package=alpha-tools@1.0.0 tools=2 not_tools=1 from=sandbox`,
		`msg="mcp: package loaded" package=beta-tool@2.0.0 tools=1 not_tools=0 from=sandbox`,
		`msg="mcp: tool store loaded" dir=` + store + ` packages=3 failed=0 tools=4`,
	}, lines)
}

// logLines are the lines of a text log whose message starts with prefix,
// without their time, level and duration.
func logLines(log, prefix string) []string {
	var lines []string
	for line := range strings.Lines(log) {
		_, rest, ok := strings.Cut(strings.TrimSpace(line), " msg=")
		if !ok || !strings.HasPrefix(strings.Trim(rest, `"`), prefix) {
			continue
		}
		if i := strings.Index(rest, " duration="); i >= 0 {
			rest = rest[:i]
		}
		lines = append(lines, "msg="+rest)
	}
	return lines
}

// What a package offers is recorded beside its bundle: the next start
// reads the record and loads nothing, an export that is not a tool is not
// tried again, and a tool is loaded only when it is called. A changed
// bundle is loaded again.
func TestStoreCatalogRecord(t *testing.T) {
	store := storeOf(t, alpha, beta, gamma)
	first := newCatalog(t, store, nil)
	l1 := countLoads(first, "")
	runCatalog(t, first)
	untilReady(t, first)
	assert.ElementsMatch(t, []string{"@acme/gamma@1.0.0#add", "alpha-tools@1.0.0#Greeter", "alpha-tools@1.0.0#shout",
		"alpha-tools@1.0.0#whisper", "beta-tool@2.0.0#default"}, l1.list())
	tools, err := first.Tools(context.Background())
	require.NoError(t, err)
	want := []string{"acme_gamma_add", "alpha-tools_shout", "alpha-tools_whisper", "beta-tool"}
	assert.Equal(t, want, toolNamesOf(tools))

	raw, err := os.ReadFile(filepath.Join(store, "alpha-tools@1.0.0", mcp.CatalogRecordFile))
	require.NoError(t, err)
	var rec struct {
		Format   string
		Complete bool
		Exports  []string
		Tools    []struct {
			Export   string
			Manifest *sandbox.Manifest
			NotATool string `json:"not_a_tool"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &rec))
	assert.Equal(t, "wasmgate tool catalog v1", rec.Format)
	assert.True(t, rec.Complete)
	assert.Equal(t, []string{"Greeter", "shout", "whisper"}, rec.Exports)
	require.Len(t, rec.Tools, 3)
	assert.Equal(t, "Greeter", rec.Tools[0].Export)
	assert.Nil(t, rec.Tools[0].Manifest)
	assert.Equal(t, `TOOL_INVALID: alpha-tools@1.0.0: export "Greeter" is a class, not a tool: a tool is an object with an execute function, or a function that returns one`, rec.Tools[0].NotATool)
	assert.Equal(t, "shout", rec.Tools[1].Export)
	require.NotNil(t, rec.Tools[1].Manifest)
	assert.Equal(t, "Shouts.", rec.Tools[1].Manifest.Description)
	assert.Equal(t, "alpha_tools__shout", rec.Tools[1].Manifest.ExecutorID)

	// The next start.
	var log syncLog
	second := newCatalog(t, store, &log)
	l2 := countLoads(second, "")
	runCatalog(t, second)
	assert.Equal(t, mcp.StoreStatus{State: "ready", Packages: 3, PackagesLoaded: 3, Tools: 4}, untilReady(t, second))
	assert.Empty(t, l2.list(), "every package is read from its record")
	assert.NotContains(t, log.String(), "Greeter", "the class is not loaded again")
	assert.Contains(t, log.String(), `msg="mcp: package loaded" package=alpha-tools@1.0.0 tools=2 not_tools=1 from=record`)
	tools, err = second.Tools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, want, toolNamesOf(tools))
	assert.Equal(t, "Shouts.", tools[1].Manifest.Description)
	res, err := tools[1].Runner.Execute(context.Background(), pipeline.ActionRequest{Action: tools[1].Action, Payload: json.RawMessage(`{"s":"hi"}`)})
	require.NoError(t, err)
	assert.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"s":"HI"}`, string(res.Output))
	_, err = tools[1].Runner.Execute(context.Background(), pipeline.ActionRequest{Action: tools[1].Action, Payload: json.RawMessage(`{"s":"again"}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{"alpha-tools@1.0.0#shout"}, l2.list(), "a tool is loaded when it is first called, and kept")

	// A package whose bundle changed is loaded again; the others are not.
	writePackage(t, store, storePkg{alpha.name, alpha.version, alpha.bundle + "export const hum = { execute: () => ({ hum: true }) };\n"})
	third := newCatalog(t, store, nil)
	l3 := countLoads(third, "")
	runCatalog(t, third)
	assert.Equal(t, 5, untilReady(t, third).Tools)
	assert.ElementsMatch(t, []string{"alpha-tools@1.0.0#Greeter", "alpha-tools@1.0.0#hum", "alpha-tools@1.0.0#shout", "alpha-tools@1.0.0#whisper"}, l3.list())
}

// A start cut short leaves a record of what it found: the next start
// loads only the rest.
func TestStoreCatalogResumes(t *testing.T) {
	store := storeOf(t, alpha, beta, gamma)
	first := newCatalog(t, store, nil)
	l1 := countLoads(first, "alpha-tools@1.0.0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		first.Run(ctx)
	}()
	require.Equal(t, "alpha-tools@1.0.0#Greeter", <-l1.held)
	l1.go_ <- struct{}{}
	require.Equal(t, "alpha-tools@1.0.0#shout", <-l1.held)
	cancel() // stopping, as serve does on SIGTERM
	close(l1.go_)
	<-done

	second := newCatalog(t, store, nil)
	l2 := countLoads(second, "")
	runCatalog(t, second)
	assert.Equal(t, 4, untilReady(t, second).Tools)
	loaded := l2.list()
	assert.NotContains(t, loaded, "@acme/gamma@1.0.0#add", "recorded in full")
	assert.NotContains(t, loaded, "alpha-tools@1.0.0#Greeter", "recorded before the stop")
	assert.Contains(t, loaded, "alpha-tools@1.0.0#whisper")
	assert.Contains(t, loaded, "beta-tool@2.0.0#default")
}

// A call does not wait for the catalog: a tool not listed yet is loaded
// out of turn for its call, alone, while the background is held at
// another package; a call to a tool the background is loading waits for
// that one load.
func TestStoreCatalogCallsOutOfTurn(t *testing.T) {
	store := storeOf(t, alpha, beta, gamma)
	c := newCatalog(t, store, nil)
	l := countLoads(c, "@acme/gamma@1.0.0")
	srv, err := mcp.New(context.Background(), mcp.Config{Store: c})
	require.NoError(t, err)
	changed := make(chan struct{}, 16)
	cs := connectStore(t, srv, changed)
	runCatalog(t, c)
	t.Cleanup(func() { close(l.go_) }) // before runCatalog's, which waits for Run
	require.Equal(t, "@acme/gamma@1.0.0#add", <-l.held, "the background is held at its first load")

	assert.Equal(t, `{"twice":42}`, callText(t, cs, "beta-tool", map[string]any{"n": 21}))
	assert.Equal(t, `{"s":"quiet"}`, callText(t, cs, "alpha-tools_whisper", map[string]any{"s": "QUIET"}))
	assert.Equal(t, []string{"@acme/gamma@1.0.0#add", "beta-tool@2.0.0#default", "alpha-tools@1.0.0#whisper"}, l.list(),
		"each call loaded its tool alone")
	assert.Equal(t, mcp.StoreStatus{State: "loading", Packages: 3, Tools: 2}, c.Status())
	assert.Equal(t, []string{"alpha-tools_whisper", "beta-tool"}, listed(t, cs))

	// No package of the store gives this name: the SDK's answer, at once.
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "zeta_nothing", Arguments: map[string]any{}})
	require.ErrorContains(t, err, `unknown tool "zeta_nothing"`)

	// Another front (serve's /execute-tool) asks for the tool the
	// background is loading: it waits for that load, and there is one.
	got := make(chan error, 1)
	go func() {
		e, err := c.LoadTool(context.Background(), pipeline.ExecutorSource{Package: "@acme/gamma@1.0.0", Tool: "add", ToolsDir: store, Defaults: sandbox.Limits{TimeoutMs: 60_000}})
		if err == nil && e.Manifest().ExecutorID != "acme_gamma__add" {
			err = assert.AnError
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("LoadTool returned (%v) before the load it shares", err)
	case <-time.After(100 * time.Millisecond):
	}
	l.go_ <- struct{}{}
	require.NoError(t, <-got)
	assert.Equal(t, 4, untilReady(t, c).Tools)
	assert.Equal(t, 1, strings.Count(strings.Join(l.list(), " "), "@acme/gamma@1.0.0#add"), "one load, shared")
}

// While a newer version of a package loads, the older one's tools stay
// listed; the newer one's replace them once it has loaded.
func TestStoreCatalogNewVersion(t *testing.T) {
	store := storeOf(t, beta)
	c := newCatalog(t, store, nil)
	l := countLoads(c, "beta-tool@2.1.0")
	runCatalog(t, c)
	untilReady(t, c)
	writePackage(t, store, storePkg{"beta-tool", "2.1.0", `export default { execute: ({ n }) => ({ thrice: 3 * n }) };`})
	tools, err := c.Tools(context.Background()) // finds the new version
	require.NoError(t, err)
	require.Equal(t, "beta-tool@2.1.0#default", <-l.held)
	tools, err = c.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "2.0.0", tools[0].Manifest.Version, "the loaded version, while the new one loads")
	close(l.go_)
	untilReady(t, c)
	tools, err = c.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "2.1.0", tools[0].Manifest.Version)
	res, err := tools[0].Runner.Execute(context.Background(), pipeline.ActionRequest{Action: tools[0].Action, Payload: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"thrice":6}`, string(res.Output))
}

// The record holds nothing that depends on the engine (it is not in its
// key): every engine of the build writes the same bytes.
func TestStoreCatalogRecordIsTheSameOnEveryEngine(t *testing.T) {
	records := map[sandbox.EngineName]string{}
	for _, name := range enginetest.JSEnginesCompared() {
		store := storeOf(t, alpha)
		c := newCatalogOn(t, name, store, nil)
		runCatalog(t, c)
		untilReady(t, c)
		raw, err := os.ReadFile(filepath.Join(store, "alpha-tools@1.0.0", mcp.CatalogRecordFile))
		require.NoError(t, err)
		records[name] = string(raw)
	}
	for name, rec := range records {
		assert.Equal(t, records[sandbox.EngineWazero], rec, "%s's records", name)
	}
}

// A directory of the store that holds no bundle (not a package `tools
// add` left) is not counted, and is loaded once it has one.
func TestStoreCatalogIncompletePackage(t *testing.T) {
	store := storeOf(t, beta, gamma)
	require.NoError(t, os.Remove(filepath.Join(store, "beta-tool@2.0.0", "bundle.mjs")))
	c := newCatalog(t, store, nil)
	runCatalog(t, c)
	assert.Equal(t, mcp.StoreStatus{State: "ready", Packages: 1, PackagesLoaded: 1, Tools: 1}, untilReady(t, c))
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"acme_gamma_add"}, toolNamesOf(tools))

	writePackage(t, store, beta)
	_, err = c.Tools(context.Background()) // the listing that finds it
	require.NoError(t, err)
	assert.Equal(t, mcp.StoreStatus{State: "ready", Packages: 2, PackagesLoaded: 2, Tools: 2}, untilReady(t, c))
	tools, err = c.Tools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"acme_gamma_add", "beta-tool"}, toolNamesOf(tools))
}

// A load is shared: neither the catalog stopping (serve's SIGTERM) nor a
// caller leaving fails the callers still waiting for it.
func TestStoreCatalogSharedLoadOutlivesWhoStartedIt(t *testing.T) {
	store := storeOf(t, gamma)
	c := newCatalog(t, store, nil)
	l := countLoads(c, "@acme/gamma@1.0.0")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	require.Equal(t, "@acme/gamma@1.0.0#add", <-l.held, "the catalog started the load")

	src := pipeline.ExecutorSource{Package: "@acme/gamma@1.0.0", Tool: "add", ToolsDir: store, Defaults: sandbox.Limits{TimeoutMs: 60_000}}
	leaving, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := c.LoadTool(leaving, src)
		left <- err
	}()
	staying := make(chan error, 1)
	go func() {
		e, err := c.LoadTool(context.Background(), src)
		if err == nil && e.Manifest().ExecutorID != "acme_gamma__add" {
			err = assert.AnError
		}
		staying <- err
	}()
	// The two callers wait for the load the catalog is making.
	for mcp.Waiting(c, src) < 2 {
		time.Sleep(time.Millisecond)
	}
	leave()
	require.ErrorIs(t, <-left, context.Canceled, "a caller that leaves stops waiting")
	stop()
	close(l.go_)
	require.NoError(t, <-staying, "the caller still waiting gets the tool")
	<-done
	assert.Equal(t, []string{"@acme/gamma@1.0.0#add"}, l.list(), "one load")
}
