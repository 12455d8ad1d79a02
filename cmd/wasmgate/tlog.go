package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
)

const tlogHelp = `
The audit log is also a transparency log (docs/AUDIT.md): its records, in
log order, are the leaves of an RFC 6962 Merkle tree (leaf index = seq - 1),
whose hashes are kept in FILE.tlog beside it.

  wasmgate audit keygen --origin ORIGIN --out KEYFILE > VKEYFILE
  wasmgate audit checkpoint FILE --key KEYFILE
  wasmgate audit prove FILE --seq N --key KEYFILE [witnesses] > N.tlog-proof
  wasmgate audit consistency FILE --from SIZE [--to SIZE]
  wasmgate audit verify FILE --checkpoint CPFILE --vkey VKEYFILE [witnesses]
  wasmgate audit verify --proof P.tlog-proof --entry RECORDFILE --vkey VKEYFILE [witnesses]

keygen writes an Ed25519 signed-note signer key named ORIGIN (a
schema-less URL such as example.com/audit) to KEYFILE, mode 0600, and prints
its verifier key (vkey), which verifiers are given.

checkpoint prints a C2SP checkpoint (origin, size, base64 root), signed:
what the log holds now. A log never signs a checkpoint that does not extend
the last one it signed: once records are removed or changed, it refuses.

prove prints a c2sp.org/tlog-proof for record seq N: its index, the
inclusion path and a signed checkpoint. It is checkable offline by anyone
with the vkey and the record's line, without the log.

consistency prints the RFC 6962 consistency proof from the tree of size
SIZE to the current one (or --to), one base64 hash a line.

verify FILE --checkpoint also checks that the log's first SIZE records give
the checkpoint's root: a truncated, rewritten or forked log fails, saying
which. verify --proof checks a proof for a record's line (--entry FILE, or
the line of FILE at the proof's index).

Witnesses (C2SP tlog-witness; 'wasmgate witness' runs one): --witness VKEY
(repeated) names a witness whose cosignature counts, --witness-quorum K how
many must have cosigned (default all), --witness-policy FILE a C2SP
tlog-policy file instead. prove asks witnesses with a URL (--witness
VKEY=URL, or the policy's URLs) to cosign before printing.
Exit codes: 0 ok, 1 a check failed, 2 usage error, 4 another error.
`

// readKeyFile reads a key file (a note signer or verifier key), or takes
// the argument itself as the key when it is one and no such file exists.
func readKeyFile(flagName, value string) (string, error) {
	if value == "" {
		return "", usagef("--%s is required", flagName)
	}
	b, err := os.ReadFile(value)
	if errors.Is(err, os.ErrNotExist) && strings.Count(value, "+") >= 2 {
		return value, nil
	}
	if err != nil {
		return "", usagef("--%s: %v", flagName, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// signerKeyFile reads the note signer key in path (given as --flag) and
// derives its verifier key. A bad file is a usage error naming it.
func signerKeyFile(flag, path string) (note.Signer, string, error) {
	if path == "" {
		return nil, "", usagef("--%s is required: the log's signer key file ('wasmgate audit keygen --out')", flag)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", usagef("--%s: %v", flag, err)
	}
	skey := strings.TrimSpace(string(b))
	signer, err := note.NewSigner(skey)
	if err != nil {
		if _, verr := note.NewVerifier(skey); verr == nil {
			return nil, "", usagef("--%s %s: a verifier key, which checks checkpoints but cannot sign them: give the signer key 'wasmgate audit keygen' wrote to its --out file", flag, path)
		}
		return nil, "", usagef("--%s %s: not a signer key (PRIVATE+KEY+ORIGIN+HASH+KEY): %v; make one with 'wasmgate audit keygen --origin ORIGIN --out %s'", flag, path, err, path)
	}
	// NewSigner checked the encoding (PRIVATE+KEY+name+hash+base64, whose
	// base64 may hold '+' too) and that the key hash matches the public
	// key: the seed is the 32 bytes after the algorithm byte.
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(skey, "+", 5)[4])
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(signer.Name(), pub)
	if err != nil {
		return nil, "", usagef("--%s %s: %v", flag, path, err)
	}
	return signer, vkey, nil
}

func loadVerifier(file string) (note.Verifier, error) {
	vkey, err := readKeyFile("vkey", file)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, usagef("--vkey %s: not a verifier key (%v); 'wasmgate audit keygen' prints one", file, err)
	}
	return v, nil
}

func (e env) auditKeygenCmd(args []string) int {
	const name = "audit keygen"
	fs := e.auditFlagSet(name)
	origin := fs.String("origin", "", "the log's origin, which names the key: a schema-less URL such as example.com/audit (required)")
	out := fs.String("out", "", "write the signer key to this file, mode 0600; it must not exist (required)")
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return e.fail(name, &usageError{err.Error()})
	case len(pos) > 0:
		return e.fail(name, usagef("unexpected argument %q", pos[0]))
	case *origin == "" || *out == "":
		return e.fail(name, usagef("--origin and --out are required"))
	}
	skey, vkey, err := transparency.GenerateKey(*origin)
	if err != nil {
		return e.fail(name, &usageError{err.Error()})
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return e.fail(name, usagef("--out: %v (keygen never overwrites a key)", err))
	}
	_, err = f.WriteString(skey + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		return e.fail(name, err)
	}
	fmt.Fprintln(e.stdout, vkey)
	return exitSuccess
}

// openTree opens the tree of the log and brings it up to date.
func openTree(path string) (*transparency.Tree, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, usagef("%v", err)
	}
	return transparency.Open(path)
}

func (e env) auditCheckpointCmd(args []string) int {
	const name = "audit checkpoint"
	fs := e.auditFlagSet(name)
	key := fs.String("key", "", "the log's signer key file (audit keygen --out)")
	path, err := oneFile(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	signer, _, err := signerKeyFile("key", *key)
	if err != nil {
		return e.fail(name, err)
	}
	tree, err := openTree(path)
	if err != nil {
		return e.tlogFail(name, err)
	}
	defer tree.Close()
	cp, err := tree.Sign(signer, tree.Size())
	if err != nil {
		return e.tlogFail(name, err)
	}
	e.stdout.Write(cp)
	return exitSuccess
}

// tlogFail reports err: a log that diverged from what was signed is a
// failed check (exit 1), not an internal error.
func (e env) tlogFail(name string, err error) int {
	if errors.Is(err, transparency.ErrDiverged) {
		fmt.Fprintf(e.stderr, "wasmgate %s: %v\n(it signs nothing more; 'wasmgate audit verify LOG --checkpoint CPFILE --vkey VKEYFILE' with the last checkpoint says what differs)\n", name, err)
		return exitFailed
	}
	return e.fail(name, err)
}

func (e env) auditProveCmd(args []string) int {
	const name = "audit prove"
	fs := e.auditFlagSet(name)
	key := fs.String("key", "", "the log's signer key file (audit keygen --out)")
	seq := fs.Int64("seq", 0, "the record to prove, by its seq (its leaf index is seq - 1)")
	var wf witnessFlags
	wf.register(fs)
	path, err := oneFile(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	if *seq < 1 {
		return e.fail(name, usagef("--seq N is required: the seq of the record to prove, 1 or more"))
	}
	signer, vkey, err := signerKeyFile("key", *key)
	if err != nil {
		return e.fail(name, err)
	}
	logKey, err := note.NewVerifier(vkey)
	if err != nil {
		return e.fail(name, err)
	}
	tree, err := openTree(path)
	if err != nil {
		return e.tlogFail(name, err)
	}
	defer tree.Close()
	if *seq > tree.Size() {
		return e.fail(name, usagef("--seq %d: %s holds %d records", *seq, path, tree.Size()))
	}
	p, err := tree.Prove(signer, *seq-1)
	if err != nil {
		return e.tlogFail(name, err)
	}
	if p.Checkpoint, err = wf.cosign(tree, p.Checkpoint, logKey); err != nil {
		return e.fail(name, err)
	}
	e.stdout.Write(p.Marshal())
	return exitSuccess
}

func (e env) auditConsistencyCmd(args []string) int {
	const name = "audit consistency"
	fs := e.auditFlagSet(name)
	from := fs.Int64("from", -1, "the size of the older tree (a checkpoint's size)")
	to := fs.Int64("to", -1, "the size of the newer tree (default: the log's current size)")
	path, err := oneFile(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	if *from < 0 {
		return e.fail(name, usagef("--from SIZE is required: the size of the older checkpoint"))
	}
	tree, err := openTree(path)
	if err != nil {
		return e.tlogFail(name, err)
	}
	defer tree.Close()
	n := tree.Size()
	if *to >= 0 {
		n = *to
	}
	if *from > n || n > tree.Size() {
		return e.fail(name, usagef("no proof from size %d to %d: %s holds %d records; want --from ≤ --to ≤ that", *from, n, path, tree.Size()))
	}
	proof, err := tree.ConsistencyProof(*from, n)
	if err != nil {
		return e.fail(name, err)
	}
	for _, h := range proof {
		fmt.Fprintln(e.stdout, base64.StdEncoding.EncodeToString(h[:]))
	}
	return exitSuccess
}

// auditVerifyTlog is audit verify with --checkpoint or --proof. log is the
// log's path ("" with --proof --entry).
func (e env) auditVerifyTlog(name, path, cpFile, proofFile, entryFile, vkeyFile string, wf witnessFlags) int {
	logKey, err := loadVerifier(vkeyFile)
	if err != nil {
		return e.fail(name, err)
	}
	policy, err := wf.policy()
	if err != nil {
		return e.fail(name, err)
	}
	if proofFile != "" {
		return e.verifyProofFile(name, path, proofFile, entryFile, logKey, policy)
	}
	text, err := os.ReadFile(cpFile)
	if err != nil {
		return e.fail(name, usagef("--checkpoint: %v", err))
	}
	cp, _, err := transparency.OpenCheckpoint(text, logKey)
	if err != nil {
		fmt.Fprintf(e.stderr, "wasmgate %s: %s: %v\n", name, cpFile, err)
		return exitFailed
	}
	cosigned, err := policy.check(text, logKey)
	if err != nil {
		fmt.Fprintf(e.stderr, "wasmgate %s: %s: %v\n", name, cpFile, err)
		return exitFailed
	}
	f, err := os.Open(path)
	if err != nil {
		return e.fail(name, usagef("%v", err))
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	var ce *audit.ChainError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "%s:%d: %s\n", path, ce.Line, ce.Reason)
		return exitFailed
	}
	if err != nil {
		return e.fail(name, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return e.fail(name, err)
	}
	// A tree made before the log changed names the first record that differs.
	var tree *transparency.Tree
	if _, err := os.Stat(path + transparency.DirSuffix); err == nil {
		if t, err := transparency.OpenFollowing(path); err == nil {
			tree = t
			defer t.Close()
		}
	}
	lr, err := transparency.VerifyLog(f, cp, tree)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", path, err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "%s: ok, %s, hash chain intact; its first %d records give the root of %s's checkpoint %s%s\n",
		path, count(rep.Records, "record"), cp.Size, cp.Origin, cpFile, cosigned)
	if lr.Records > cp.Size {
		fmt.Fprintf(e.stdout, "%s: %d records were added after the checkpoint\n", path, lr.Records-cp.Size)
	}
	return exitSuccess
}

func (e env) verifyProofFile(name, logPath, proofFile, entryFile string, logKey note.Verifier, policy witnessPolicy) int {
	text, err := os.ReadFile(proofFile)
	if err != nil {
		return e.fail(name, usagef("--proof: %v", err))
	}
	p, err := transparency.ParseProof(text)
	if err != nil {
		fmt.Fprintf(e.stderr, "wasmgate %s: %s: %v\n", name, proofFile, err)
		return exitFailed
	}
	var entry []byte
	switch {
	case entryFile != "":
		if entry, err = os.ReadFile(entryFile); err != nil {
			return e.fail(name, usagef("--entry: %v", err))
		}
	case logPath != "":
		if entry, err = lineOf(logPath, p.Index+1); err != nil {
			return e.fail(name, usagef("%v", err))
		}
	default:
		return e.fail(name, usagef("--proof needs the record it proves: --entry FILE (its line) or the log file"))
	}
	cp, err := transparency.VerifyProof(p, entry, logKey)
	if err != nil {
		fmt.Fprintf(e.stderr, "wasmgate %s: %s: %v\n", name, proofFile, err)
		return exitFailed
	}
	cosigned, err := policy.check(p.Checkpoint, logKey)
	if err != nil {
		fmt.Fprintf(e.stderr, "wasmgate %s: %s: %v\n", name, proofFile, err)
		return exitFailed
	}
	var r struct {
		EventType string `json:"event_type"`
		Action    string `json:"action"`
		Status    string `json:"status"`
		TraceID   string `json:"trace_id"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(entry), &r)
	what := r.EventType
	if r.Status != "" {
		what += " " + r.Status
	}
	fmt.Fprintf(e.stdout, "%s: ok, record seq %d (%s of %s, trace_id %s) is in %s's log of %d records (checkpoint root %s)%s\n",
		proofFile, p.Index+1, what, r.Action, r.TraceID, cp.Origin, cp.Size, base64.StdEncoding.EncodeToString(cp.Root[:]), cosigned)
	return exitSuccess
}

// lineOf reads line n (1-based) of a file, without its newline.
func lineOf(path string, n int64) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for i := int64(1); ; i++ {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("%s has no line %d", path, n)
		}
		if i == n {
			return line, nil
		}
		b = rest
	}
}

// witnessFlags are the witness options of prove and verify.
type witnessFlags struct {
	witnesses  stringList
	quorum     int
	policyFile string
}

func (w *witnessFlags) register(fs *flag.FlagSet) {
	fs.Var(&w.witnesses, "witness", "a witness's cosignature vkey (repeatable); VKEY=URL also asks it to cosign (prove)")
	fs.IntVar(&w.quorum, "witness-quorum", 0, "how many of the --witness keys must have cosigned (default: all)")
	fs.StringVar(&w.policyFile, "witness-policy", "", "a C2SP tlog-policy file: the witnesses and the quorum")
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
