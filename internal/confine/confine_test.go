package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write makes the files (slash-separated names) under dir; a name ending
// in "@" makes a link, named without the "@", to content.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if link, ok := strings.CutSuffix(name, "@"); ok {
			file := filepath.Join(dir, filepath.FromSlash(link))
			require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
			require.NoError(t, os.Symlink(content, file))
			continue
		}
		file := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
	}
}

func TestEntryTree(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	write(t, dir, map[string]string{
		"secret.txt":                       "s",
		"loose/tool.js":                    "",
		"loose/sibling.js":                 "",
		"node_modules/up/index.js":         "",
		"proj/package.json":                "{}",
		"proj/src/deep/main.ts":            "",
		"proj/lib/util.ts":                 "",
		"proj/node_modules/dep/index.js":   "",
		"proj/out@":                        filepath.Join(dir, "secret.txt"),
		"proj/in@":                         filepath.Join(dir, "proj", "lib", "util.ts"),
		"elsewhere/named-by-the-user.ts":   "",
		"proj/src/linked-entry.ts@":        filepath.Join(dir, "elsewhere", "named-by-the-user.ts"),
		"proj/node_modules/escape/x.json@": filepath.Join(dir, "secret.txt"),
	})
	at := func(name string) string { return filepath.Join(dir, filepath.FromSlash(name)) }

	t.Run("the nearest package.json makes the root", func(t *testing.T) {
		tree, err := Entry(at("proj/src/deep/main.ts"))
		require.NoError(t, err)
		assert.Equal(t, at("proj"), tree.Root())
		for name, in := range map[string]bool{
			"proj/src/deep/main.ts":           true,
			"proj/lib/util.ts":                true,
			"proj/node_modules/dep/index.js":  true,
			"node_modules/up/index.js":        true, // an ancestor's node_modules
			"proj/in":                         true, // a link inside, to inside
			"proj/out":                        false,
			"proj/node_modules/escape/x.json": false,
			"secret.txt":                      false,
			"loose/tool.js":                   false,
			"proj/missing.ts":                 false,
		} {
			_, ok := tree.Contains(at(name))
			assert.Equal(t, in, ok, name)
		}
		real, ok := tree.Contains(at("proj/out"))
		assert.False(t, ok)
		assert.Equal(t, at("secret.txt"), real)
		_, ok = tree.Contains("relative/path.js")
		assert.False(t, ok, "a relative path is never inside")
	})

	t.Run("without package.json the entry's directory is the root", func(t *testing.T) {
		tree, err := Entry(at("loose/tool.js"))
		require.NoError(t, err)
		assert.Equal(t, at("loose"), tree.Root())
		_, ok := tree.Contains(at("loose/sibling.js"))
		assert.True(t, ok)
		_, ok = tree.Contains(at("secret.txt"))
		assert.False(t, ok)
	})

	t.Run("a linked entry's tree is where it lives", func(t *testing.T) {
		tree, err := Entry(at("proj/src/linked-entry.ts"))
		require.NoError(t, err)
		assert.Equal(t, at("elsewhere"), tree.Root())
		_, ok := tree.Contains(at("proj/src/linked-entry.ts"))
		assert.True(t, ok, "the entry itself")
		_, ok = tree.Contains(at("proj/lib/util.ts"))
		assert.False(t, ok)
	})

	t.Run("a missing entry", func(t *testing.T) {
		_, err := Entry(at("proj/nope.ts"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestDirTree(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	write(t, dir, map[string]string{
		"secret.txt":                            "s",
		"store/a@1.0.0/node_modules/a/index.js": "",
	})
	tree, err := Dir(filepath.Join(dir, "store", "a@1.0.0"))
	require.NoError(t, err)
	_, ok := tree.Contains(filepath.Join(dir, "store", "a@1.0.0", "node_modules", "a", "index.js"))
	assert.True(t, ok)
	_, ok = tree.Contains(filepath.Join(dir, "secret.txt"))
	assert.False(t, ok)
}

func TestTheFileSystemRootIsNoTree(t *testing.T) {
	tree := newTree(string(filepath.Separator))
	assert.Equal(t, "", tree.Root())
	for _, p := range []string{"/etc/passwd", "/proc/self/environ", "/tmp"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		_, ok := tree.Contains(p)
		assert.False(t, ok, p)
	}
}

func TestRefusal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	write(t, dir, map[string]string{"proj/package.json": "{}", "proj/src/main.js": ""})
	tree, err := Entry(filepath.Join(dir, "proj", "src", "main.js"))
	require.NoError(t, err)
	base := filepath.Join(dir, "proj", "src")
	rule := `imports must stay inside the tool's tree: ".." (the nearest directory up from the entry holding package.json, else the entry's own) and the node_modules packages found from there, links resolved; `
	assert.Equal(t, rule+`"/etc/passwd" is outside it`, tree.Refusal("tool", "/etc/passwd", "/etc/passwd", base))
	assert.Equal(t, rule+`"../../x.json" is outside it`, tree.Refusal("tool", "../../x.json", filepath.Join(dir, "x.json"), base))
	assert.Equal(t, rule+`"./link" is outside it (it resolves to ../../x.json)`, tree.Refusal("tool", "./link", filepath.Join(dir, "x.json"), base))
}
