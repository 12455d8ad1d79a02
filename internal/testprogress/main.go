// Command testprogress runs `go test -json …` and prints, as they finish,
// one line per top-level test (its pass, package, name and time) and one
// per package, with the whole output of every test that failed: what make
// test prints, so that a run of several minutes is never silent and a
// failure is readable without the rest of the log.
//
//	go run ./internal/testprogress [-pass NAME] go test -json [flags] [packages]
//
// It exits with the command's status (1 if the command succeeded though a
// test failed, which go test never does), so a make target keeps failing
// exactly when go test does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// quietAfter is how long the tool may print nothing before it names the
// tests still running (and for how long), so that one slow test does not
// look like a hung run.
const quietAfter = time.Minute

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testprogress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pass := fs.String("pass", "", "a name for this run, printed at the start of every line (e.g. race), to tell two runs printing side by side apart")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./internal/testprogress [-pass NAME] go test -json [flags] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if !slices.Contains(fs.Args(), "-json") {
		fmt.Fprintf(stderr, "testprogress: the command must print go test's JSON events: add -json to %q\n", strings.Join(fs.Args(), " "))
		return 2
	}

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testprogress: starting %s: %v\n", fs.Arg(0), err)
		return 1
	}
	// An interrupt (^C) reaches go test too, as part of the same process
	// group: wait for it to print its failures and exit rather than dying
	// first and losing them.
	signal.Ignore(syscall.SIGINT)

	r := newReport(stdout, *pass, modulePath(), time.Now)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(quietAfter / 4)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				r.remindIfQuiet(quietAfter)
			}
		}
	}()
	readErr := r.read(events)
	waitErr := cmd.Wait()
	close(stop)
	<-done
	failed := r.finish()

	if readErr != nil {
		fmt.Fprintf(stderr, "testprogress: reading the events: %v\n", readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(stderr, "testprogress: %v\n", waitErr)
		return 1
	case failed || readErr != nil:
		return 1
	}
	return 0
}

// modulePath is the module's path from go.mod in the working directory
// (where go test runs), trimmed from package names to keep lines short; ""
// when there is none.
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
