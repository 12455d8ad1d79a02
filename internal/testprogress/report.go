package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is one of go test -json's events (go doc test2json); build-output
// and build-fail name the package being built in ImportPath.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// report turns the events of one go test run into the lines it prints.
// Its methods may be called from two goroutines (the reader and the quiet
// reminder).
type report struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string // "race: " or ""
	module string
	now    func() time.Time

	start, last                  time.Time
	packages                     map[string]*packageRun
	builds                       map[string]*strings.Builder // build output by ImportPath
	passed, failedTests, skipped int
	failed                       []string // "pkg TestName", or "pkg" for a package that failed outside any test
	packagesRun, packagesFailed  int
}

// packageRun is a package whose tests are running.
type packageRun struct {
	output                  strings.Builder // what no test printed: panics, TestMain, go test's own lines
	tests                   map[string]*testRun
	passed, failed, skipped int
}

// testRun is a top-level test that is running, with all it and its
// subtests printed, kept until it ends: printed if it failed.
type testRun struct {
	output  strings.Builder
	started time.Time
}

func newReport(w io.Writer, pass, module string, now func() time.Time) *report {
	r := &report{w: w, module: module, now: now, packages: map[string]*packageRun{}, builds: map[string]*strings.Builder{}}
	if pass != "" {
		r.prefix = pass + ": "
	}
	r.start = now()
	r.last = r.start
	return r
}

// read handles every line of in until its end. A line that is not an
// event (go test -json prints some of its own) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			r.mu.Lock()
			r.printf("%s\n", line)
			r.mu.Unlock()
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Action {
	case "build-output":
		b := r.builds[e.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			r.builds[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		// Printed with the package that needed it (FailedBuild).
		return
	}
	p := r.packages[e.Package]
	if p == nil {
		p = &packageRun{tests: map[string]*testRun{}}
		r.packages[e.Package] = p
	}
	if e.Test == "" {
		r.packageEvent(e, p)
		return
	}
	name, _, _ := strings.Cut(e.Test, "/")
	t := p.tests[name]
	if t == nil {
		t = &testRun{started: r.now()}
		p.tests[name] = t
	}
	switch e.Action {
	case "output":
		t.output.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test != name {
			return // a subtest: its top-level test says how it went
		}
		delete(p.tests, name)
		r.testEnded(e, p, t)
	}
}

func (r *report) testEnded(e event, p *packageRun, t *testRun) {
	switch e.Action {
	case "pass":
		p.passed++
		r.passed++
		r.printf("%spass %s %s %s\n", r.prefix, r.short(e.Package), e.Test, seconds(e.Elapsed))
	case "skip":
		p.skipped++
		r.skipped++
		r.printf("%sskip %s %s %s\n", r.prefix, r.short(e.Package), e.Test, seconds(e.Elapsed))
	case "fail":
		p.failed++
		r.failedTests++
		r.failed = append(r.failed, r.short(e.Package)+" "+e.Test)
		r.printf("%sFAIL %s %s %s\n%s", r.prefix, r.short(e.Package), e.Test, seconds(e.Elapsed), t.output.String())
	}
}

func (r *report) packageEvent(e event, p *packageRun) {
	switch e.Action {
	case "output":
		p.output.WriteString(e.Output)
		return
	case "pass", "fail", "skip":
	default:
		return
	}
	delete(r.packages, e.Package)
	pkg := r.short(e.Package)
	if e.Action == "skip" && p.passed+p.failed+p.skipped == 0 {
		return // no test files: nothing to say
	}
	r.packagesRun++
	// Tests still running when their package ended were cut off (a panic,
	// go test's -timeout): what they printed says where they were.
	names := make([]string, 0, len(p.tests))
	for name := range p.tests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p.failed++
		r.failedTests++
		r.failed = append(r.failed, pkg+" "+name)
		r.printf("%sFAIL %s %s (did not finish)\n%s", r.prefix, pkg, name, p.tests[name].output.String())
	}
	counts := fmt.Sprintf("%d passed, %d failed, %d skipped", p.passed, p.failed, p.skipped)
	if e.Action == "fail" {
		r.packagesFailed++
		if p.failed == 0 {
			r.failed = append(r.failed, pkg)
		}
		if e.FailedBuild != "" {
			if b := r.builds[e.FailedBuild]; b != nil {
				r.printf("%s", b.String())
			}
			r.printf("%sFAIL %s (build failed)\n", r.prefix, pkg)
			return
		}
		r.printf("%s%sFAIL %s %s (%s)\n", p.output.String(), r.prefix, pkg, seconds(e.Elapsed), counts)
		return
	}
	r.printf("%sok   %s %s (%s)\n", r.prefix, pkg, seconds(e.Elapsed), counts)
}

// remindIfQuiet names the tests running, and for how long, when nothing
// was printed for quiet.
func (r *report) remindIfQuiet(quiet time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.last) < quiet {
		return
	}
	var running []string
	for pkg, p := range r.packages {
		for name, t := range p.tests {
			running = append(running, fmt.Sprintf("%s %s (%s)", r.short(pkg), name, now.Sub(t.started).Round(time.Second)))
		}
	}
	if len(running) == 0 {
		running = []string{"building or starting a test binary"}
	}
	slices.Sort(running)
	r.printf("%sstill running after %s: %s\n", r.prefix, now.Sub(r.start).Round(time.Second), strings.Join(running, ", "))
}

// finish prints the totals, and every failure again (the lines of two
// runs side by side interleave), and says whether anything failed.
func (r *report) finish() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	status := "ok"
	if len(r.failed) > 0 {
		status = "FAIL"
	}
	r.printf("%s%s: %d packages (%d failed), %d tests passed, %d failed, %d skipped in %s\n", r.prefix, status,
		r.packagesRun, r.packagesFailed, r.passed, r.failedTests, r.skipped, r.now().Sub(r.start).Round(time.Second))
	for _, f := range r.failed {
		r.printf("%sFAIL %s\n", r.prefix, f)
	}
	return len(r.failed) > 0
}

func (r *report) printf(format string, args ...any) {
	fmt.Fprintf(r.w, format, args...)
	r.last = r.now()
}

// short is a package's path within the module ("." for its root).
func (r *report) short(pkg string) string {
	if r.module == "" {
		return pkg
	}
	if pkg == r.module {
		return "."
	}
	if rest, ok := strings.CutPrefix(pkg, r.module+"/"); ok {
		return rest
	}
	return pkg
}

func seconds(s float64) string { return fmt.Sprintf("%.2fs", s) }
