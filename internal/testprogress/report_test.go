package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a fake time that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestReport(pass string) (*report, *bytes.Buffer, *clock) {
	var out bytes.Buffer
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	return newReport(&out, pass, "example.com/m", c.now), &out, c
}

// TestReportLines: what a user sees for each way a test or package ends.
func TestReportLines(t *testing.T) {
	for _, c := range []struct {
		name   string
		events string
		want   string
		failed bool
	}{
		{
			name: "passes and skips, one line each, then the package",
			events: `{"Action":"start","Package":"example.com/m/a"}
{"Action":"run","Package":"example.com/m/a","Test":"TestOne"}
{"Action":"output","Package":"example.com/m/a","Test":"TestOne","Output":"=== RUN   TestOne\n"}
{"Action":"run","Package":"example.com/m/a","Test":"TestOne/sub"}
{"Action":"pass","Package":"example.com/m/a","Test":"TestOne/sub","Elapsed":0.5}
{"Action":"pass","Package":"example.com/m/a","Test":"TestOne","Elapsed":1.25}
{"Action":"run","Package":"example.com/m/a","Test":"TestTwo"}
{"Action":"skip","Package":"example.com/m/a","Test":"TestTwo","Elapsed":0}
{"Action":"output","Package":"example.com/m/a","Output":"ok  \texample.com/m/a\t1.3s\n"}
{"Action":"pass","Package":"example.com/m/a","Elapsed":1.3}
`,
			want: `race: pass a TestOne 1.25s
race: skip a TestTwo 0.00s
race: ok   a 1.30s (1 passed, 0 failed, 1 skipped)
race: ok: 1 packages (0 failed), 1 tests passed, 0 failed, 1 skipped in 0s
`,
		},
		{
			name: "a failed test prints all it and its subtests printed",
			events: `{"Action":"run","Package":"example.com/m","Test":"TestBad"}
{"Action":"output","Package":"example.com/m","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"example.com/m","Test":"TestBad/case","Output":"    bad_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"example.com/m","Test":"TestBad/case","Elapsed":0.1}
{"Action":"output","Package":"example.com/m","Test":"TestBad","Output":"--- FAIL: TestBad (0.10s)\n"}
{"Action":"fail","Package":"example.com/m","Test":"TestBad","Elapsed":0.1}
{"Action":"output","Package":"example.com/m","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/m","Elapsed":0.2}
`,
			want: `race: FAIL . TestBad 0.10s
=== RUN   TestBad
    bad_test.go:9: want 1, got 2
--- FAIL: TestBad (0.10s)
FAIL
race: FAIL . 0.20s (0 passed, 1 failed, 0 skipped)
race: FAIL: 1 packages (1 failed), 0 tests passed, 1 failed, 0 skipped in 0s
race: FAIL . TestBad
`,
			failed: true,
		},
		{
			name: "a test cut off by the binary's timeout panic",
			events: `{"Action":"run","Package":"example.com/m/b","Test":"TestSlow"}
{"Action":"output","Package":"example.com/m/b","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"example.com/m/b","Output":"panic: test timed out after 10m0s\n"}
{"Action":"fail","Package":"example.com/m/b","Elapsed":600}
`,
			want: `race: FAIL b TestSlow (did not finish)
=== RUN   TestSlow
panic: test timed out after 10m0s
race: FAIL b 600.00s (0 passed, 1 failed, 0 skipped)
race: FAIL: 1 packages (1 failed), 0 tests passed, 1 failed, 0 skipped in 0s
race: FAIL b TestSlow
`,
			failed: true,
		},
		{
			name: "a package that does not build prints the compiler's errors",
			events: `{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-output","Output":"# example.com/m/c\n"}
{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/m/c"}
{"Action":"output","Package":"example.com/m/c","Output":"FAIL\texample.com/m/c [build failed]\n"}
{"Action":"fail","Package":"example.com/m/c","Elapsed":0,"FailedBuild":"example.com/m/c [example.com/m/c.test]"}
`,
			want: `# example.com/m/c
c/c.go:3:1: syntax error
race: FAIL c (build failed)
race: FAIL: 1 packages (1 failed), 0 tests passed, 0 failed, 0 skipped in 0s
race: FAIL c
`,
			failed: true,
		},
		{
			name: "packages without tests and lines that are not events",
			events: `go: downloading example.com/dep v1.0.0
{"Action":"start","Package":"example.com/m/d"}
{"Action":"output","Package":"example.com/m/d","Output":"?   \texample.com/m/d\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m/d","Elapsed":0}
`,
			want: `go: downloading example.com/dep v1.0.0
race: ok: 0 packages (0 failed), 0 tests passed, 0 failed, 0 skipped in 0s
`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, out, _ := newTestReport("race")
			require.NoError(t, r.read(strings.NewReader(c.events)))
			assert.Equal(t, c.failed, r.finish())
			assert.Equal(t, c.want, out.String())
		})
	}
}

// TestReportNamesWhatRunsWhenQuiet: after a quiet minute, the tests
// running and for how long; nothing before it.
func TestReportNamesWhatRunsWhenQuiet(t *testing.T) {
	r, out, c := newTestReport("")
	require.NoError(t, r.read(strings.NewReader(`{"Action":"run","Package":"example.com/m/a","Test":"TestLong"}
{"Action":"run","Package":"other.org/x","Test":"TestAlso"}
`)))
	c.t = c.t.Add(59 * time.Second)
	r.remindIfQuiet(time.Minute)
	assert.Empty(t, out.String())
	c.t = c.t.Add(31 * time.Second)
	r.remindIfQuiet(time.Minute)
	assert.Equal(t, "still running after 1m30s: a TestLong (1m30s), other.org/x TestAlso (1m30s)\n", out.String())
	out.Reset()
	r.remindIfQuiet(time.Minute)
	assert.Empty(t, out.String(), "not again until another quiet minute")
}

// TestExitStatus: the tool's status is go test's, failures or not.
func TestExitStatus(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m_test.go"), []byte(`package m

import "testing"

func TestGood(t *testing.T) {}

func TestBad(t *testing.T) {
	if os := "linux"; os != "" {
		t.Fatal("wanted")
	}
}
`), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { _ = os.Chdir(wd) })

	var stdout, stderr bytes.Buffer
	code := run([]string{"-pass", "p", goTool, "test", "-count=1", "-json", "-run", "TestGood", "."}, &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "p: pass . TestGood ")
	assert.Contains(t, stdout.String(), "p: ok: 1 packages (0 failed), 1 tests passed, 0 failed, 0 skipped in ")

	stdout.Reset()
	code = run([]string{"-pass", "p", goTool, "test", "-count=1", "-json", "."}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout.String(), "p: FAIL . TestBad ")
	assert.Contains(t, stdout.String(), "m_test.go:9: wanted\n")
	assert.Contains(t, stdout.String(), "\np: FAIL . TestBad\n")

	code = run([]string{goTool, "test", "."}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "testprogress: the command must print go test's JSON events: add -json to ")
}

// TestCommandsInOneRun: commands separated by "---" run at the same time
// as one run, one total, and the status is that of the first command, in
// their order, that failed.
func TestCommandsInOneRun(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	event := func(test, action string) string {
		return `echo '{"Action":"` + action + `","Package":"example.com/m","Test":"` + test + `","Elapsed":0}'`
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{
		sh, "-c", event("TestA", "pass") + "; exit 0", "-json", "---",
		sh, "-c", event("TestB", "fail") + "; exit 3", "-json", "---",
		sh, "-c", event("TestC", "pass") + "; exit 1", "-json",
	}, &stdout, &stderr)
	assert.Equal(t, 3, code, stderr.String())
	lines := strings.Split(stdout.String(), "\n")
	require.Len(t, lines, 6)
	// Their lines come as the commands print them, in any order.
	assert.ElementsMatch(t, []string{"pass example.com/m TestA 0.00s", "FAIL example.com/m TestB 0.00s", "pass example.com/m TestC 0.00s"}, lines[:3])
	assert.Regexp(t, `^FAIL: 0 packages \(0 failed\), 2 tests passed, 1 failed, 0 skipped in \d+s$`, lines[3])
	assert.Equal(t, []string{"FAIL example.com/m TestB", ""}, lines[4:])

	code = run([]string{"---"}, &stdout, &stderr)
	assert.Equal(t, 2, code, "no command")
}
