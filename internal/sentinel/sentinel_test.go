package sentinel_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

func TestErrorIsMatchesThroughWrapping(t *testing.T) {
	const errBusy = sentinel.Error("pipeline: busy")
	err := fmt.Errorf("run 3: %w", errBusy)
	assert.ErrorIs(t, err, errBusy)
	assert.NotErrorIs(t, err, sentinel.Error("pipeline: internal error"))
	assert.Equal(t, "run 3: pipeline: busy", err.Error())
}

// TestTextsAreUnique: sentinels with equal texts would match each other in
// errors.Is, so every sentinel.Error in the module's non-test code has a
// text of its own.
func TestTextsAreUnique(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Directories the go tool ignores, and fetched npm trees.
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Error" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "sentinel" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a sentinel's text must be a string literal", fset.Position(call.Pos()))
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			where := fset.Position(call.Pos()).String()
			if prev, dup := seen[text]; dup {
				t.Errorf("%s: sentinel text %q is also declared at %s; give it a text of its own", where, text, prev)
			}
			seen[text] = where
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(seen), 20, "the walk found the module's sentinels")
}
