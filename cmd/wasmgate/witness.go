package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

const witnessUsage = "usage: wasmgate witness --key FILE --log VKEY [--log VKEY]... --state DIR [--addr 127.0.0.1:7380] | wasmgate witness keygen --name NAME --out FILE"

const witnessHelp = `Usage:
  wasmgate witness --key FILE --log VKEY [--log VKEY]... --state DIR [--addr 127.0.0.1:7380]
  wasmgate witness keygen --name NAME --out FILE

witness is a transparency log witness (C2SP tlog-witness): it cosigns a
log's checkpoint only if it is consistent with the last checkpoint of that
log it cosigned, so a log that shows two histories is caught by whoever
requires its cosignature. It serves POST /add-checkpoint (the old size,
a consistency proof, the checkpoint; answers 200 with the cosignature, 409
with the size it knows, 422 for a proof that does not verify or a fork,
403 without a valid signature of the log, 404 for a log it does not
witness) and GET /<hex SHA-256 of the origin>/checkpoint, the latest
checkpoint it cosigned with the log's signature and its own, for monitors.

--key is the witness's signer key (from 'wasmgate witness keygen'); --log
is the verifier key of a log to witness (as 'wasmgate audit keygen'
prints; its name is the log's origin), repeated for each log; --state is
the directory of the latest cosigned checkpoint of each log, written and
synced before each cosignature is returned. One witness process per state
directory. On start it prints its cosignature verifier key on stdout (put
it in a policy: witness NAME VKEY [URL]) and logs its address on stderr.
SIGTERM or SIGINT stops it.

keygen writes a new Ed25519 signer key for a witness named NAME (a
schema-less URL, e.g. witness.example.com/w1) to FILE, mode 0600, refusing
to overwrite one, and prints its cosignature verifier key (type 0x04).

Exit codes: 0 stopped by a signal, or key written; 2 usage error; 4 the
witness could not start or serve.

Flags:
`

func (e env) witnessCmd(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "keygen" {
		return e.witnessKeygenCmd(args[1:])
	}
	fs := newFlagSet("witness", e.stderr)
	keyFile := fs.String("key", "", "the witness's signer key file (wasmgate witness keygen)")
	var logs witnessLogsFlag
	fs.Var(&logs, "log", "verifier key of a log to witness (its name is the log's origin); repeat for each log")
	stateDir := fs.String("state", "", "directory of the witness's state: the latest cosigned checkpoint of each log")
	addr := fs.String("addr", "127.0.0.1:7380", "address to listen on")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), witnessHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("witness", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("witness", usagef("unexpected argument %q\n%s", pos[0], witnessUsage))
	case *keyFile == "":
		return e.fail("witness", usagef("--key is required\n%s", witnessUsage))
	case len(logs) == 0:
		return e.fail("witness", usagef("--log is required: the verifier key of each log to witness\n%s", witnessUsage))
	case *stateDir == "":
		return e.fail("witness", usagef("--state is required\n%s", witnessUsage))
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil {
		return e.fail("witness", usagef("--key: %v", err))
	}
	if err := os.MkdirAll(*stateDir, 0o700); err != nil {
		return e.fail("witness", fmt.Errorf("--state: %w", err))
	}
	w, err := transparency.NewWitness(strings.TrimSpace(string(key)), *stateDir, logs...)
	if err != nil {
		return e.fail("witness", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return e.fail("witness", usagef("--addr: %v", err))
	}
	handler := slog.NewTextHandler(e.stderr, nil)
	logger := slog.New(handler)
	hs := &http.Server{
		Handler:           logRefusals(logger, w),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	fmt.Fprintln(e.stdout, w.VKey())
	logger.Info("listening", "url", "http://"+ln.Addr().String(), "vkey", w.VKey(), "logs", len(logs), "state", *stateDir)
	if err := serveUntilDone(ctx, hs, ln, 30*time.Second); err != nil {
		return e.fail("witness", err)
	}
	logger.Info("stopped")
	return exitSuccess
}

// logRefusals logs every request the witness does not answer with 200: a
// 422 with a valid log signature may be evidence of a fork.
func logRefusals(logger *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.status != http.StatusOK {
			logger.Warn("refused", "method", r.Method, "path", r.URL.Path, "status", rec.status, "remote", r.RemoteAddr)
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (e env) witnessKeygenCmd(args []string) int {
	fs := newFlagSet("witness keygen", e.stderr)
	name := fs.String("name", "", "the witness's name, a schema-less URL (witness.example.com/w1)")
	out := fs.String("out", "", "file to write the signer key to (mode 0600; must not exist)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), witnessHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("witness keygen", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("witness keygen", usagef("unexpected argument %q\n%s", pos[0], witnessUsage))
	case *name == "" || *out == "":
		return e.fail("witness keygen", usagef("--name and --out are required\n%s", witnessUsage))
	case strings.ContainsFunc(*name, unicode.IsSpace) || strings.Contains(*name, "+"):
		// note.GenerateKey does not check: such a key could sign nothing.
		return e.fail("witness keygen", usagef("--name %q: a key name has no spaces and no '+' (use a schema-less URL such as witness.example.com/w1)", *name))
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, *name)
	if err != nil {
		return e.fail("witness keygen", err)
	}
	cosig, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		return e.fail("witness keygen", err)
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return e.fail("witness keygen", usagef("--out %s exists: refusing to overwrite a key (choose another file, or remove it first)", *out))
	}
	if err != nil {
		return e.fail("witness keygen", fmt.Errorf("--out: %w", err))
	}
	if _, err := fmt.Fprintln(f, skey); err != nil {
		f.Close()
		return e.fail("witness keygen", fmt.Errorf("--out: %w", err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return e.fail("witness keygen", fmt.Errorf("--out: %w", err))
	}
	if err := f.Close(); err != nil {
		return e.fail("witness keygen", fmt.Errorf("--out: %w", err))
	}
	fmt.Fprintln(e.stdout, cosig)
	return exitSuccess
}

// witnessLogsFlag is the repeatable --log of verifier keys.
type witnessLogsFlag []string

func (l *witnessLogsFlag) String() string { return strings.Join(*l, ",") }

func (l *witnessLogsFlag) Set(s string) error {
	if _, err := note.NewVerifier(s); err != nil {
		return fmt.Errorf("%q is not an Ed25519 verifier key (<origin>+<key id>+<base64 key>, as 'wasmgate audit keygen' prints): %w", s, err)
	}
	*l = append(*l, s)
	return nil
}
