package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/jstool"
)

// The tests in this file start serve and mcp on a tool store of real npm
// packages (from jstool/testdata, installed there by `make testdata-js`)
// whose catalog loads in the background. The store's first package, in
// the order the catalog loads them, has a named pipe for its bundle: the
// catalog's loading stops there until the test writes the bundle, so what
// the servers answer while their catalog is loading is seen every time,
// whatever the machine's speed.

// heldBundle is the bundle of the package that holds the catalog back.
const heldBundle = `export const hold = { execute: () => ({ held: false }) };`

// weatherTool is an AI SDK tool package: tool() from ai, a zod schema.
const weatherTool = `import { tool } from "ai";
import { z } from "zod";

export const weather = tool({
  description: "Get the weather in a location",
  inputSchema: z.object({ location: z.string().describe("The location") }),
  execute: async ({ location }) => ({ location, temperature: 60 + location.length }),
});
`

// heldStore is a tool store whose catalog stops at its first package,
// aaa-held, until release writes that package's bundle; the packages of
// more are laid out beside it. The bundle becomes a plain file once the
// test is done with the pipe, so that a later start reads it at once.
type heldStore struct {
	dir  string
	fifo string
}

func newHeldStore(t *testing.T) *heldStore {
	t.Helper()
	dir := storeWith(t, "aaa-held", "1.0.0", "", `{"name":"aaa-held","version":"1.0.0"}`)
	fifo := filepath.Join(dir, "aaa-held@1.0.0", "bundle.mjs")
	require.NoError(t, os.Remove(fifo))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	return &heldStore{dir: dir, fifo: fifo}
}

// release lets the catalog read the held package, and makes its bundle a
// plain file.
func (s *heldStore) release(t *testing.T) {
	t.Helper()
	// Opening the pipe waits for its reader, the catalog.
	require.NoError(t, os.WriteFile(s.fifo, []byte(heldBundle), 0o644))
	require.NoError(t, os.Remove(s.fifo))
	require.NoError(t, os.WriteFile(s.fifo, []byte(heldBundle), 0o644))
}

// addCompat installs the compatibility corpus's package name (one without
// dependencies) into the store, bundled as `tools add` bundles it.
func (s *heldStore) addCompat(t *testing.T, name string) {
	t.Helper()
	src := filepath.Join("..", "..", "jstool", "testdata", "compat", "node_modules", name)
	raw, err := os.ReadFile(filepath.Join(src, "package.json"))
	require.NoError(t, err, "the compatibility corpus is installed by make testdata-js")
	var pkg struct{ Version string }
	require.NoError(t, json.Unmarshal(raw, &pkg))
	entry := filepath.Join(s.dir, name+"@"+pkg.Version)
	copyTree(t, src, filepath.Join(entry, "node_modules", name))
	s.bundle(t, entry, name)
}

// addWeather adds weather-tools@1.0.0, an AI SDK tool package, with the ai
// and zod packages of jstool/testdata/tools/ai.
func (s *heldStore) addWeather(t *testing.T) {
	t.Helper()
	entry := filepath.Join(s.dir, "weather-tools@1.0.0")
	copyTree(t, filepath.Join("..", "..", "jstool", "testdata", "tools", "ai", "node_modules"), filepath.Join(entry, "node_modules"))
	pkg := filepath.Join(entry, "node_modules", "weather-tools")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "package.json"),
		[]byte(`{"name":"weather-tools","version":"1.0.0","type":"module","exports":"./index.js"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "index.js"), []byte(weatherTool), 0o644))
	s.bundle(t, entry, "weather-tools")
}

func (s *heldStore) bundle(t *testing.T, entry, name string) {
	t.Helper()
	b, err := jstool.BundlePackage(entry, name)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), b.Source, 0o644))
}

// catalogOf is the catalog's status in serve's /health.
func catalogOf(t *testing.T, c protocolClient) map[string]any {
	t.Helper()
	r := c.do(t, http.MethodGet, "/health", "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var body struct {
		Status   string
		Wasmgate struct{ Catalog map[string]any }
	}
	require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
	assert.Equal(t, "ok", body.Status)
	return body.Wasmgate.Catalog
}

// waitLog waits until the log holds line, as the process writes it.
func waitLog(t *testing.T, log func() string, line string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(log(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", line, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The tools the store of TestServeAnswersWhileItsCatalogLoads offers once
// loaded: he's four functions and marked's ten (its seven classes are not
// tools), as factories, and the AI SDK tool.
var heldStoreTools = []string{"aaa-held_hold",
	"he_decode", "he_encode", "he_escape", "he_unescape",
	"marked_getDefaults", "marked_lexer", "marked_marked", "marked_options", "marked_parse", "marked_parseInline",
	"marked_parser", "marked_setOptions", "marked_use", "marked_walkTokens",
	"weather-tools_weather"}

// serve answers at once whatever its tool store holds: /health says the
// catalog is loading, before it has loaded any package; a call over
// /execute-tool and one over /mcp to a tool not loaded yet are answered
// while the rest still loads; tools/list grows with list_changed once the
// catalog goes on. A second start reads what the first recorded: no
// export is loaded again, and the classes that are not tools are not
// tried again.
func TestServeAnswersWhileItsCatalogLoads(t *testing.T) {
	t.Parallel()
	store := newHeldStore(t)
	store.addCompat(t, "he")
	store.addCompat(t, "marked")
	store.addWeather(t)
	srv := startServe(t, nil, "--tools-dir", store.dir)
	c := newProtocolClient(srv.url, "")

	assert.Equal(t, map[string]any{"state": "loading", "packages": 4.0, "packagesLoaded": 0.0, "packagesFailed": 0.0, "tools": 0.0},
		catalogOf(t, c), "healthy before the catalog has loaded a package")

	r, tr := c.execute(t, "/execute-tool", call("weather-tools", "1.0.0", "weather", `{"location":"Paris"}`))
	requireSuccess(t, r, tr, `{"location":"Paris","temperature":65}`)

	changed, onChange := listChanged()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: onChange,
	}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.url + "/mcp"}, nil)
	require.NoError(t, err, srv.logText())
	t.Cleanup(func() { cs.Close() })
	assert.Empty(t, toolNames(t, cs), "nothing is listed before it has loaded")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather-tools_weather", Arguments: map[string]any{"location": "Oslo"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, callText(res))
	assert.Equal(t, `{"location":"Oslo","temperature":64}`, callText(res), "a tool not listed yet is loaded for its call")
	awaitListChanged(t, changed, srv.logText) // the tool the call loaded
	assert.Equal(t, []string{"weather-tools_weather"}, toolNames(t, cs))
	assert.Equal(t, map[string]any{"state": "loading", "packages": 4.0, "packagesLoaded": 0.0, "packagesFailed": 0.0, "tools": 1.0},
		catalogOf(t, c), "the rest is still loading")

	store.release(t)
	awaitListChanged(t, changed, srv.logText)
	waitTools(t, cs, changed, heldStoreTools, srv.logText)
	waitLog(t, srv.logText, "mcp: tool store loaded")
	assert.Equal(t, map[string]any{"state": "ready", "packages": 4.0, "packagesLoaded": 4.0, "packagesFailed": 0.0, "tools": 16.0}, catalogOf(t, c))
	log := srv.logText()
	for _, class := range []string{"Hooks", "Lexer", "Marked", "Parser", "Renderer", "TextRenderer", "Tokenizer"} {
		assert.Contains(t, log, `msg="mcp: export not offered as a tool" package=marked@18.2.1 export=`+class+` error="TOOL_INVALID: marked@18.2.1: export \"`+class+`\" is a class, not a tool`)
	}
	assert.Contains(t, log, `msg="mcp: package loaded" package=marked@18.2.1 tools=10 not_tools=7 from=sandbox`)
	require.NoError(t, cs.Close())
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	<-srv.exited

	// The next start reads every package's record.
	again := startServe(t, nil, "--tools-dir", store.dir)
	waitLog(t, again.logText, "mcp: tool store loaded")
	log = again.logText()
	assert.Equal(t, 4, strings.Count(log, `msg="mcp: package loaded"`))
	assert.Equal(t, 4, strings.Count(log, " from=record "), log)
	assert.NotContains(t, log, "export not offered", "an export that is not a tool is not tried again")
	assert.Equal(t, "ready", catalogOf(t, newProtocolClient(again.url, ""))["state"])
}

// wasmgate mcp answers initialize at once, while its catalog loads: the
// client connects, lists what has loaded (nothing), calls a tool not
// listed yet, and is told of the rest as it arrives.
func TestMCPStdioAnswersWhileItsCatalogLoads(t *testing.T) {
	t.Parallel()
	store := newHeldStore(t)
	other := storeWith(t, "acme-tools", "1.0.0", acmeTools, `{"name":"acme-tools","version":"1.0.0"}`)
	require.NoError(t, os.Rename(filepath.Join(other, "acme-tools@1.0.0"), filepath.Join(store.dir, "acme-tools@1.0.0")))

	changed, onChange := listChanged()
	var stderr syncBuffer
	cmd := exec.Command(binary, "mcp", "--tools-dir", store.dir)
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: onChange,
	}).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "initialize is answered while the catalog is held:\n%s", stderr.String())
	t.Cleanup(func() { cs.Close() })
	assert.Empty(t, toolNames(t, cs))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "acme-tools_shout", Arguments: map[string]any{"s": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, `{"s":"HI"}`, callText(res))

	awaitListChanged(t, changed, stderr.String) // the tool the call loaded

	store.release(t)
	awaitListChanged(t, changed, stderr.String)
	waitTools(t, cs, changed, []string{"aaa-held_hold", "acme-tools_boom", "acme-tools_broken", "acme-tools_needsenv", "acme-tools_shout", "acme-tools_withkey"},
		stderr.String)
}

// listChanged is a signal of notifications/tools/list_changed, and the
// client's handler that sends it: a notification that comes while an
// earlier one is not yet taken adds nothing to it.
func listChanged() (<-chan struct{}, func(context.Context, *sdk.ToolListChangedRequest)) {
	changed := make(chan struct{}, 1)
	return changed, func(context.Context, *sdk.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
}

// awaitListChanged waits for a list_changed the server must send.
func awaitListChanged(t *testing.T, changed <-chan struct{}, log func() string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no tools/list_changed:\n%s", log())
	}
}

// waitTools waits until tools/list gives want, listing again at each
// list_changed.
func waitTools(t *testing.T, cs *sdk.ClientSession, changed <-chan struct{}, want []string, log func() string) {
	t.Helper()
	for names := toolNames(t, cs); !assert.ObjectsAreEqual(want, names); names = toolNames(t, cs) {
		select {
		case <-changed:
		case <-time.After(5 * time.Minute):
			t.Fatalf("tools/list gives %v, and no list_changed came:\n%s", names, log())
		}
	}
}
