// Command testprogress runs `go test -json …` and prints, as they finish,
// one line per top-level test (its pass, package, name and time) and one
// per package, with the whole output of every test that failed: what make
// test prints, so that a run of several minutes is never silent and a
// failure is readable without the rest of the log.
//
//	go run ./internal/testprogress [-pass NAME] go test -json [flags] [packages] [--- go test -json …]
//
// Several commands separated by "---" run at the same time as one run (one
// report, one total), so that the packages of one fill the cores while
// another's wait on processes, servers or the clock.
// It exits with the first failing command's status (1 if they succeeded
// though a test failed, which go test never does), so a make target keeps
// failing exactly when go test does.
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
	"sync"
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
		fmt.Fprintln(stderr, "usage: go run ./internal/testprogress [-pass NAME] go test -json [flags] [packages] [--- go test -json …]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Commands separated by "---" run at the same time as one run: one
	// report, one total.
	var commands [][]string
	for _, cmd := range splitCommands(fs.Args()) {
		if len(cmd) == 0 {
			fs.Usage()
			return 2
		}
		if !slices.Contains(cmd, "-json") {
			fmt.Fprintf(stderr, "testprogress: the command must print go test's JSON events: add -json to %q\n", strings.Join(cmd, " "))
			return 2
		}
		commands = append(commands, cmd)
	}
	if len(commands) == 0 {
		fs.Usage()
		return 2
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
	statuses := make([]int, len(commands))
	var wg sync.WaitGroup
	for i, c := range commands {
		wg.Go(func() { statuses[i] = runOne(c, r, stderr) })
	}
	wg.Wait()
	status := 0
	for _, s := range statuses {
		if status == 0 {
			status = s
		}
	}
	close(stop)
	<-done
	if r.finish() && status == 0 {
		return 1
	}
	return status
}

// splitCommands splits args at every "---".
func splitCommands(args []string) [][]string {
	commands := [][]string{nil}
	for _, a := range args {
		if a == "---" {
			commands = append(commands, nil)
			continue
		}
		commands[len(commands)-1] = append(commands[len(commands)-1], a)
	}
	return commands
}

// runOne runs one command, its events reported to r, and returns its exit
// status.
func runOne(args []string, r *report, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testprogress: starting %s: %v\n", args[0], err)
		return 1
	}
	readErr := r.read(events)
	waitErr := cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(stderr, "testprogress: reading the events of %s: %v\n", strings.Join(args, " "), readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(stderr, "testprogress: %v\n", waitErr)
		return 1
	case readErr != nil:
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
