package pyhost

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTreeTakesWhatPythonImports: from the file's directory, its modules and
// packages whole (data files too, bytecode and native extensions not);
// nothing of directories that are not packages, hidden ones or caches; from
// a --py-path, every package and namespace package.
func TestTreeTakesWhatPythonImports(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"app/tool.py":                     "x",
		"app/helper.py":                   "x",
		"app/notes.txt":                   "not a module",
		"app/pkg/__init__.py":             "x",
		"app/pkg/data.json":               "{}",
		"app/pkg/sub/mod.py":              "x",
		"app/pkg/native.so":               "ELF",
		"app/pkg/__pycache__/x.pyc":       "x",
		"app/docs/conf.py":                "not a package",
		"app/.venv/lib/site.py":           "hidden",
		"site/dep/__init__.py":            "x",
		"site/dep/table.csv":              "a,b",
		"site/nspkg/part/__init__.py":     "x",
		"site/dep-1.0.dist-info/METADATA": "Name: dep",
	})
	files, roots, err := Tree(filepath.Join(dir, "app/tool.py"), []string{filepath.Join(dir, "site")})
	require.NoError(t, err)
	assert.Equal(t, []string{"/app", "/lib/1"}, roots)
	assert.Equal(t, []string{
		"/app/helper.py", "/app/pkg/__init__.py", "/app/pkg/data.json", "/app/pkg/sub/mod.py", "/app/tool.py",
		"/lib/1/dep-1.0.dist-info/METADATA", "/lib/1/dep/__init__.py", "/lib/1/dep/table.csv", "/lib/1/nspkg/part/__init__.py",
	}, keys(files))
	assert.Equal(t, "a,b", string(files["/lib/1/dep/table.csv"]))
}

// TestTreeRefuses: a link out of the tree, a path that is not a directory,
// a file that is not Python, a tree beyond its bounds: each an error that
// says so.
func TestTreeRefuses(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"app/tool.py": "x", "outside/secret.py": "TOKEN = 1", "app/pkg/__init__.py": "x"})
	require.NoError(t, os.Symlink(filepath.Join(dir, "outside/secret.py"), filepath.Join(dir, "app/pkg/secret.py")))
	_, _, err := Tree(filepath.Join(dir, "app/tool.py"), nil)
	require.ErrorIs(t, err, ErrTree)
	assert.Contains(t, err.Error(), "secret.py links to "+filepath.Join(dir, "outside/secret.py")+", outside "+filepath.Join(dir, "app")+": code may import only from its own tree")

	// A link that stays inside is followed.
	require.NoError(t, os.Remove(filepath.Join(dir, "app/pkg/secret.py")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "app/tool.py"), filepath.Join(dir, "app/pkg/alias.py")))
	files, _, err := Tree(filepath.Join(dir, "app/tool.py"), nil)
	require.NoError(t, err)
	assert.Equal(t, "x", string(files["/app/pkg/alias.py"]))

	_, _, err = Tree(filepath.Join(dir, "app/tool.py"), []string{filepath.Join(dir, "app/tool.py")})
	require.ErrorIs(t, err, ErrTree)
	assert.Contains(t, err.Error(), "is not a directory")
	_, _, err = Tree(filepath.Join(dir, "app/pkg"), nil)
	require.ErrorIs(t, err, ErrTree)
	assert.Contains(t, err.Error(), "is not a .py file")
	_, _, err = Tree(filepath.Join(dir, "app/gone.py"), nil)
	require.ErrorIs(t, err, os.ErrNotExist)

	big := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(big, "lots"), 0o755))
	for i := range MaxTreeFiles + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(big, "lots", fmt.Sprintf("m%05d.py", i)), nil, 0o644))
	}
	write(t, big, map[string]string{"app/tool.py": "x"})
	_, _, err = Tree(filepath.Join(big, "app/tool.py"), []string{filepath.Join(big, "lots")})
	require.ErrorIs(t, err, ErrTree)
	assert.Contains(t, err.Error(), "holds more than 20000 files")
}
