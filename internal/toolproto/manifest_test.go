package toolproto

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// baseManifest is a valid manifest of tool "fake", whose entry is tool.js.
const baseManifest = `{"manifestVersion":1,"id":"fake","version":"1.0.0","name":"Fake","description":"A tool for tests.","runtime":"js","entry":"tool.js"}`

// manifestWith is baseManifest with fields set (null removes one).
func manifestWith(t *testing.T, fields string) []byte {
	t.Helper()
	var m, over map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(baseManifest), &m))
	require.NoError(t, json.Unmarshal([]byte(fields), &over))
	for k, v := range over {
		if string(v) == "null" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	return raw
}

// writeTool lays out dir/<sub>/manifest.json (baseManifest with fields)
// beside a tool.js, and returns the manifest's path.
func writeTool(t *testing.T, dir, sub, fields string) string {
	t.Helper()
	d := filepath.Join(dir, sub)
	require.NoError(t, os.MkdirAll(d, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, "tool.js"), []byte("export function execute() { return 1; }\n"), 0o644))
	path := filepath.Join(d, ManifestFile)
	require.NoError(t, os.WriteFile(path, manifestWith(t, fields), 0o644))
	return path
}

func TestParseManifest(t *testing.T) {
	dir := t.TempDir()
	path := writeTool(t, dir, "fake", `{"requiredConfig":["apiKey"],"optionalConfig":["region"],"timeoutMs":5000,"tags":["text"]}`)
	m, err := LoadManifest(path)
	require.NoError(t, err)
	assert.Equal(t, &Manifest{
		ManifestVersion: 1, ID: "fake", Version: "1.0.0", Name: "Fake", Description: "A tool for tests.",
		Runtime: RuntimeJS, Entry: "tool.js", RequiredConfig: []string{"apiKey"}, OptionalConfig: []string{"region"},
		TimeoutMs: 5000, Tags: []string{"text"}, File: path,
	}, m)
	assert.Equal(t, filepath.Join(dir, "fake", "tool.js"), m.EntryPath())
}

// TestParsePythonManifest: a Python tool names its entry .py, the
// directories of its dependencies (relative to the manifest, as its entry)
// and its executor class.
func TestParsePythonManifest(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fake", "site"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shared"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fake", "count.py"), []byte("def execute(x):\n    return x\n"), 0o644))
	path := writeTool(t, dir, "fake", `{"runtime":"python","entry":"count.py","pythonPath":["site","../shared"],"pythonClass":"WordCount"}`)
	m, err := LoadManifest(path)
	require.NoError(t, err)
	assert.Equal(t, RuntimePython, m.Runtime)
	assert.Equal(t, filepath.Join(dir, "fake", "count.py"), m.EntryPath())
	assert.Equal(t, []string{"site", "../shared"}, m.PythonPath)
	assert.Equal(t, []string{filepath.Join(dir, "fake", "site"), filepath.Join(dir, "shared")}, m.PythonPathDirs())
	assert.Equal(t, "WordCount", m.PythonClass)

	// Both are optional: a module with execute(input) needs neither.
	m, err = LoadManifest(writeTool(t, dir, "fake", `{"runtime":"python","entry":"count.py"}`))
	require.NoError(t, err)
	assert.Empty(t, m.PythonPathDirs())
	assert.Empty(t, m.PythonClass)
}

func TestManifestErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "module.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a-dir.js"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool.py"), []byte("def execute(x):\n    return x\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "site"), 0o755))
	const python = `"runtime":"python","entry":"../tool.py"`
	for _, tt := range []struct {
		name   string
		fields string
		field  string
		msg    string
	}{
		{"manifestVersion 2", `{"manifestVersion":2}`, "manifestVersion", "must be 1, not 2"},
		{"manifestVersion missing", `{"manifestVersion":null}`, "manifestVersion", "is required"},
		{"manifestVersion a string", `{"manifestVersion":"1"}`, "manifestVersion", `must be a whole number, not "1"`},
		{"id missing", `{"id":null}`, "id", "is required"},
		{"id not kebab-case", `{"id":"Fake_Tool"}`, "id", `"Fake_Tool" is not kebab-case (lowercase letters and digits in words joined by "-")`},
		{"id with a double dash", `{"id":"fake--tool"}`, "id", `"fake--tool" is not kebab-case (lowercase letters and digits in words joined by "-")`},
		{"id a number", `{"id":7}`, "id", "must be a string, not 7"},
		{"version not semver", `{"version":"1.0"}`, "version", `"1.0" is not a semantic version X.Y.Z`},
		{"name empty", `{"name":" "}`, "name", "must not be empty"},
		{"description missing", `{"description":null}`, "description", "is required"},
		{"runtime unknown", `{"runtime":"dotnet"}`, "runtime", `must be "wasm", "js", "node" or "python", not "dotnet"`},
		{"python entry not .py", `{"runtime":"python"}`, "entry", `"tool.js" does not end in .py, as a python tool's entry must`},
		{"pythonPath of a js tool", `{"pythonPath":["../site"]}`, "pythonPath", `applies to runtime "python" only, not "js"`},
		{"pythonClass of a wasm tool", `{"runtime":"wasm","entry":"../module.wasm","pythonClass":"Tool"}`, "pythonClass", `applies to runtime "python" only, not "wasm"`},
		{"pythonPath not a list", `{` + python + `,"pythonPath":"../site"}`, "pythonPath", `must be a list of strings, not "../site"`},
		{"pythonPath absolute", `{` + python + `,"pythonPath":["/usr/lib/python3/dist-packages"]}`, "pythonPath", `"/usr/lib/python3/dist-packages" must be a path relative to the manifest's directory`},
		{"pythonPath not there", `{` + python + `,"pythonPath":["../site","../gone"]}`, "pythonPath", filepath.Join(dir, "gone") + " does not exist"},
		{"pythonPath a file", `{` + python + `,"pythonPath":["../tool.py"]}`, "pythonPath", filepath.Join(dir, "tool.py") + " is not a directory"},
		{"pythonClass not a name", `{` + python + `,"pythonClass":"word-count"}`, "pythonClass", `"word-count" is not a Python class name (letters, digits and _, not starting with a digit)`},
		{"pythonClass dotted", `{` + python + `,"pythonClass":"tools.WordCount"}`, "pythonClass", `"tools.WordCount" is not a Python class name (letters, digits and _, not starting with a digit)`},
		{"pythonClass a number", `{` + python + `,"pythonClass":7}`, "pythonClass", "must be a string, not 7"},
		{"pythonClass empty", `{` + python + `,"pythonClass":""}`, "pythonClass", "must not be empty"},
		{"node entry not .js", `{"runtime":"node","entry":"tool.ts"}`, "entry", `"tool.ts" does not end in .js .mjs .cjs, as a node tool's entry must`},
		{"entry missing", `{"entry":null}`, "entry", "is required"},
		{"entry absolute", `{"entry":"/tool.js"}`, "entry", `"/tool.js" must be a path relative to the manifest's directory`},
		{"entry of another runtime", `{"entry":"../module.wasm"}`, "entry", `"../module.wasm" does not end in .js .mjs .cjs .ts .mts .cts, as a js tool's entry must`},
		{"wasm entry not .wasm", `{"runtime":"wasm"}`, "entry", `"tool.js" does not end in .wasm, as a wasm tool's entry must`},
		{"entry not there", `{"entry":"gone.ts"}`, "entry", filepath.Join(dir, "fake", "gone.ts") + " does not exist"},
		{"entry a directory", `{"entry":"../a-dir.js"}`, "entry", filepath.Join(dir, "a-dir.js") + " is not a file"},
		{"requiredConfig not a list", `{"requiredConfig":"apiKey"}`, "requiredConfig", `must be a list of strings, not "apiKey"`},
		{"requiredConfig twice", `{"requiredConfig":["a","a"]}`, "requiredConfig", `"a" is listed twice`},
		{"optionalConfig empty key", `{"optionalConfig":[""]}`, "optionalConfig", "item 0 is empty"},
		{"optionalConfig also required", `{"requiredConfig":["a"],"optionalConfig":["a"]}`, "optionalConfig", `"a" is in requiredConfig too`},
		{"timeoutMs zero", `{"timeoutMs":0}`, "timeoutMs", "must be a positive number of milliseconds, not 0"},
		{"timeoutMs fractional", `{"timeoutMs":1.5}`, "timeoutMs", "must be a whole number, not 1.5"},
		{"tags of numbers", `{"tags":[1]}`, "tags", "must be a list of strings, not [1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTool(t, dir, "fake", tt.fields)
			_, err := LoadManifest(path)
			var merr *ManifestError
			require.ErrorAs(t, err, &merr)
			assert.Equal(t, tt.field, merr.Field)
			assert.Equal(t, tt.msg, merr.Msg)
			assert.Equal(t, path, merr.File)
			assert.Equal(t, path+": "+tt.field+": "+tt.msg, err.Error())
		})
	}
	t.Run("not an object", func(t *testing.T) {
		_, err := ParseManifest("x/fake/manifest.json", []byte(`[1]`))
		assert.EqualError(t, err, "x/fake/manifest.json: not a JSON object")
	})
}

// TestManifestAsTheReferenceRunnerReadsIt: fields a manifest may have
// beyond ours are ignored, the id need not be its directory's name, an id
// may start with a digit, and Node tools are found.
func TestManifestAsTheReferenceRunnerReadsIt(t *testing.T) {
	dir := t.TempDir()
	path := writeTool(t, dir, "misc/hello", `{"id":"2fa-helper","kind":"task","requiredconfig":["a"]}`)
	m, err := LoadManifest(path)
	require.NoError(t, err)
	assert.Equal(t, "2fa-helper", m.ID)
	assert.Empty(t, m.RequiredConfig, "a misspelt field is not ours")

	node := writeTool(t, dir, "misc/hello-world", `{"id":"hello-world","runtime":"node","entry":"tool.js","requiredConfig":[]}`)
	m, err = LoadManifest(node)
	require.NoError(t, err)
	assert.Equal(t, RuntimeNode, m.Runtime)
	c, err := Discover(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"2fa-helper", "hello-world"}, c.IDs())
}

func TestMissingConfig(t *testing.T) {
	m := &Manifest{RequiredConfig: []string{"a", "b", "c"}}
	assert.Equal(t, []string{"a", "b", "c"}, m.MissingConfig(nil))
	assert.Equal(t, []string{"b"}, m.MissingConfig(json.RawMessage(`{"a":"","b":null,"c":0,"d":1}`)))
	assert.Empty(t, m.MissingConfig(json.RawMessage(`{"a":1,"b":2,"c":3}`)))
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	good := writeTool(t, dir, "fake", `{}`)
	writeTool(t, dir, "nested/deeper/slug", `{"id":"slug"}`)
	bad := writeTool(t, dir, "broken", `{"id":"broken","runtime":"dotnet"}`)
	dupA := writeTool(t, dir, "a/twin", `{"id":"twin"}`)
	dupB := writeTool(t, dir, "b/twin", `{"id":"twin"}`)
	// Never looked at: node_modules and hidden directories.
	writeTool(t, dir, "fake/node_modules/dep", `{"manifestVersion":9}`)
	writeTool(t, dir, ".cache/old", `{"manifestVersion":9}`)

	c, err := Discover(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"fake", "slug"}, c.IDs())
	require.Len(t, c.Problems(), 3)
	assert.Equal(t, dupA+`: id: "twin" is declared by `+dupB+" too", c.Problems()[0].Error())
	assert.Equal(t, dupB+`: id: "twin" is declared by `+dupA+" too", c.Problems()[1].Error())
	assert.Equal(t, bad+`: runtime: must be "wasm", "js", "node" or "python", not "dotnet"`, c.Problems()[2].Error())

	m, err := c.Lookup("fake")
	require.NoError(t, err)
	assert.Equal(t, good, m.File)

	_, err = c.Lookup("broken")
	assert.EqualError(t, err, bad+`: runtime: must be "wasm", "js", "node" or "python", not "dotnet"`)
	_, err = c.Lookup("twin")
	assert.EqualError(t, err, dupA+`: id: "twin" is declared by `+dupB+" too")

	_, err = c.Lookup("nope")
	require.ErrorIs(t, err, ErrToolNotFound)
	assert.EqualError(t, err, `no manifest in `+dir+` declares tool "nope" (tools there: fake, slug)`)
}

func TestDiscoverWithoutADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tools")
	_, err := Discover(dir)
	require.ErrorIs(t, err, ErrToolNotFound)
	assert.EqualError(t, err, "the tools directory "+dir+" does not exist")

	require.NoError(t, os.WriteFile(dir, nil, 0o644))
	_, err = Discover(dir)
	require.ErrorIs(t, err, ErrToolNotFound)
	assert.EqualError(t, err, "the tools directory "+dir+" is not a directory")
}
