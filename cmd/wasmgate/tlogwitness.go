package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

// witnessPolicy is what the witness flags require of a checkpoint: nil
// policy, nothing.
type witnessPolicy struct {
	p    *transparency.Policy
	urls map[string]string // witness vkey → submission URL (--witness VKEY=URL)
}

// splitWitness splits --witness VKEY[=URL].
func splitWitness(v string) (vkey, url string) {
	if k, rest, ok := strings.Cut(v, "=http"); ok {
		return k, "http" + rest
	}
	return v, ""
}

func (w witnessFlags) policy() (witnessPolicy, error) {
	switch {
	case w.policyFile != "" && len(w.witnesses) > 0:
		return witnessPolicy{}, usagef("give --witness keys or a --witness-policy file, not both")
	case w.policyFile != "":
		if w.quorum != 0 {
			return witnessPolicy{}, usagef("--witness-quorum goes with --witness; a --witness-policy file has its own quorum line")
		}
		text, err := os.ReadFile(w.policyFile)
		if err != nil {
			return witnessPolicy{}, usagef("--witness-policy: %v", err)
		}
		p, err := transparency.ParsePolicy(text)
		if err != nil {
			return witnessPolicy{}, usagef("--witness-policy %s: %v", w.policyFile, err)
		}
		return witnessPolicy{p: p}, nil
	case len(w.witnesses) > 0:
		wp := witnessPolicy{urls: map[string]string{}}
		var keys []string
		for _, v := range w.witnesses {
			vkey, url := splitWitness(v)
			keys = append(keys, vkey)
			if url != "" {
				wp.urls[vkey] = url
			}
		}
		p, err := transparency.KOfN(w.quorum, keys...)
		if err != nil {
			return witnessPolicy{}, &usageError{"--witness: " + err.Error()}
		}
		wp.p = p
		return wp, nil
	case w.quorum != 0:
		return witnessPolicy{}, usagef("--witness-quorum needs --witness keys")
	}
	return witnessPolicy{}, nil
}

// check verifies the cosignatures the policy requires of a signed
// checkpoint, and says who cosigned ("" without a policy).
func (p witnessPolicy) check(checkpoint []byte, logKey note.Verifier) (string, error) {
	if p.p == nil {
		return "", nil
	}
	n, err := p.p.Verify(checkpoint, logKey)
	if err != nil {
		return "", err
	}
	var names []string
	for _, s := range n.Sigs {
		if s.Name != logKey.Name() || s.Hash != logKey.KeyHash() {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return "; the policy needs no cosignature", nil
	}
	return fmt.Sprintf("; cosigned by %s (the witness policy is met)", strings.Join(names, ", ")), nil
}

// cosign asks the witnesses that have a URL (--witness VKEY=URL, or the
// policy's) to cosign checkpoint, giving each the consistency proof from
// the size it last cosigned, and returns the checkpoint with their
// cosignatures; it fails unless the policy is then met.
func (w witnessFlags) cosign(tree *transparency.Tree, checkpoint []byte, logKey note.Verifier) ([]byte, error) {
	pol, err := w.policy()
	if err != nil || pol.p == nil {
		return checkpoint, err
	}
	body, _, _ := bytes.Cut(checkpoint, []byte("\n\n"))
	cp, err := transparency.ParseCheckpoint(string(body) + "\n")
	if err != nil {
		return nil, err
	}
	proofFrom := func(old int64) (tlog.TreeProof, error) { return tree.ConsistencyProof(old, cp.Size) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	out := checkpoint
	var errs []error
	asked := 0
	for _, wit := range pol.p.Witnesses() {
		url := wit.URL
		if u, ok := pol.urls[wit.VKey]; ok {
			url = u
		}
		if url == "" {
			continue
		}
		asked++
		sigs, err := transparency.Cosign(ctx, client, url, checkpoint, proofFrom)
		if err != nil {
			errs = append(errs, fmt.Errorf("witness %s (%s): %w", wit.Name, url, err))
			continue
		}
		// Cosignatures are signature lines: they follow the log's own.
		out = append(out[:len(out):len(out)], sigs...)
	}
	if asked == 0 {
		return nil, usagef("no witness to ask: give --witness VKEY=URL, or a policy whose witness lines have URLs")
	}
	if _, err := pol.p.Verify(out, logKey); err != nil {
		return nil, errors.Join(append([]error{err}, errs...)...)
	}
	return out, nil
}
