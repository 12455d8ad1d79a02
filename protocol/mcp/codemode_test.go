package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/mcpgateway/mcptest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// listedTools are tools as an MCP server lists them, as the gateway
// registers them: action SERVER__TOOL, the tool's description and schemas.
type listedTools struct {
	actions   []string
	manifests map[string]sandbox.Manifest
}

func (l listedTools) Actions() []string { return l.actions }
func (l listedTools) ActionManifest(a string) (sandbox.Manifest, bool) {
	m, ok := l.manifests[a]
	return m, ok
}

// noHost runs nothing: the test only lists.
type noHost struct{ listedTools }

func (noHost) Execute(context.Context, pipeline.ActionRequest) (pipeline.ActionResult, error) {
	return pipeline.ActionResult{}, errors.New("noHost runs nothing")
}
func (noHost) UseEngine(context.Context, func(context.Context, sandbox.Engine) error) error {
	return errors.New("noHost runs nothing")
}

// resultBytes is the size of a tools/list result, as sent.
func resultBytes(t *testing.T, cs *sdk.ClientSession) (*sdk.ListToolsResult, int) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	raw, err := json.Marshal(list)
	require.NoError(t, err)
	return list, len(raw)
}

// The size of tools/list for the MCP reference server's tools, listed one
// by one as the server lists them, against Code Mode's one run_script
// declaring the same tools: the figures in docs/MCP.md (go test -v prints
// them; tokens ≈ bytes/4). Code Mode's list is one tool and about the
// same size (109% when measured): TypeScript declarations say what the
// JSON Schemas say, in a JSON string that escapes every newline and quote,
// plus a paragraph on writing a script. Code Mode saves on the calls and
// their intermediate results, not on the list.
func TestCodeModeToolsListSizeOfTheReferenceServer(t *testing.T) {
	node, bin := mcptest.Everything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: exec.Command(node, bin, "stdio")}, nil)
	require.NoError(t, err)
	defer direct.Close()
	list, each := resultBytes(t, direct)
	for _, name := range []string{"echo", "get-sum", "get-structured-content"} {
		assert.True(t, slices.ContainsFunc(list.Tools, func(tl *sdk.Tool) bool { return tl.Name == name }), "the reference server has %s", name)
	}

	tools := listedTools{manifests: map[string]sandbox.Manifest{}}
	for _, tl := range list.Tools {
		action := "everything__" + tl.Name
		m := sandbox.Manifest{Description: tl.Description}
		m.InputSchema, err = json.Marshal(tl.InputSchema)
		require.NoError(t, err)
		if tl.OutputSchema != nil {
			m.OutputSchema, err = json.Marshal(tl.OutputSchema)
			require.NoError(t, err)
		}
		tools.actions = append(tools.actions, action)
		tools.manifests[action] = m
	}
	slices.Sort(tools.actions)
	srv, err := mcp.New(ctx, mcp.Config{CodeMode: &mcp.CodeMode{Runner: toolscript.Runner{Host: noHost{tools}}}})
	require.NoError(t, err)
	cs := connectStore(t, srv, make(chan struct{}, 16))
	codeMode, one := resultBytes(t, cs)
	require.Len(t, codeMode.Tools, 1)
	assert.Contains(t, codeMode.Tools[0].Description, "getStructuredContent(")

	t.Logf("tools/list of server-everything: %d tools, %d bytes (≈%d tokens at 4 bytes a token); Code Mode declaring them: 1 tool, %d bytes (≈%d tokens), %.0f%%",
		len(list.Tools), each, each/4, one, one/4, 100*float64(one)/float64(each))
	assert.InDelta(t, 1.0, float64(one)/float64(each), 0.25, "Code Mode's one tool is about the size of the reference server's tools listed one by one")
}
