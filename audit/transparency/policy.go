package transparency

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Signature type bytes of vkeys (c2sp.org/signed-note): a log signs its
// checkpoints with a plain Ed25519 key, a witness cosigns with a
// cosignature/v1 key (Ed25519 or ML-DSA-44).
const (
	vkeyEd25519            = 0x01
	vkeyCosignatureEd25519 = 0x04
	vkeyCosignatureMLDSA44 = 0x06
)

// Policy is a C2SP tlog-policy: the logs a verifier accepts, the witnesses
// it knows, and the quorum of them whose cosignatures make a checkpoint
// valid. Make one with ParsePolicy or KOfN; it is immutable and safe for
// concurrent use.
type Policy struct {
	logs      []policyLog
	witnesses []policyWitness
	quorum    *quorumNode // nil: "quorum none", no cosignature needed
}

// PolicyWitness is a witness a policy names.
type PolicyWitness struct {
	Name string // the policy's name for it, used in groups and the quorum
	VKey string // its cosignature verifier key (signed-note vkey, type 0x04 or 0x06)
	URL  string // its submission prefix, or "" when the policy gives none
}

type policyLog struct {
	vkey     string
	url      string
	verifier note.Verifier
}

type policyWitness struct {
	PolicyWitness
	verifier note.Verifier
}

// quorumNode is a witness (witness >= 0) or a group of k of its members.
type quorumNode struct {
	name    string
	witness int
	k       int
	members []*quorumNode
}

// satisfied says whether the witnesses marked in cosigned meet the node.
func (q *quorumNode) satisfied(cosigned []bool) bool {
	if q.witness >= 0 {
		return cosigned[q.witness]
	}
	n := 0
	for _, m := range q.members {
		if m.satisfied(cosigned) {
			n++
		}
	}
	return n >= q.k
}

// describe spells the rule out for an error message: "G = 2 of [A, B, C]".
func (q *quorumNode) describe() string {
	if q.witness >= 0 {
		return q.name
	}
	parts := make([]string, len(q.members))
	for i, m := range q.members {
		parts[i] = m.describe()
	}
	k := strconv.Itoa(q.k)
	switch {
	case q.k == len(q.members) && q.k > 1:
		k = "all"
	case q.k == 1 && len(q.members) > 1:
		k = "any"
	}
	return q.name + " = " + k + " of [" + strings.Join(parts, ", ") + "]"
}

// ParsePolicy parses a policy file in the C2SP tlog-policy format:
//
//	log <vkey> [<url>]
//	witness <name> <vkey> [<url>]
//	group <name> all|any|<k> <name>...
//	quorum <name>|none
//
// Items are separated by spaces and tabs only; empty lines and lines whose
// first non-blank character is "#" are ignored. A log vkey is an Ed25519
// signed-note key (type 0x01) whose name is the log's origin; a witness vkey
// is a cosignature key (type 0x04 Ed25519, or 0x06 ML-DSA-44).
//
// # Errors
//
// Every refusal names the line and what is wrong: an octet other than tab,
// newline, 0x20–0x7E or 0x80–0xFF; an unknown keyword or a wrong number of
// items; a vkey that does not parse or has the wrong type; two logs or two
// witnesses wrapping the same public key; a name defined twice or used
// before it is defined (or "none" as a name or member); a name listed as a
// group member more than once in the file; a threshold outside 1..n; no
// quorum line, or more than one.
func ParsePolicy(text []byte) (*Policy, error) {
	p := &Policy{}
	names := map[string]*quorumNode{}
	asMember := map[string]int{} // name → the line that made it a group member
	logKeys := map[string]int{}  // public key → line
	witnessKeys := map[string]int{}
	quorumLine := 0
	for i, line := range bytes.SplitAfter(text, []byte("\n")) {
		n := i + 1
		line = bytes.TrimSuffix(line, []byte("\n"))
		for _, b := range line {
			if b != '\t' && (b < 0x20 || b == 0x7f) {
				hint := ""
				if b == '\r' {
					hint = ": save the file with LF line ends, not CRLF"
				}
				return nil, fmt.Errorf("transparency: policy line %d: octet 0x%02x is not allowed (only tab, newline, 0x20-0x7e and 0x80-0xff)%s", n, b, hint)
			}
		}
		f := policyFields(string(line))
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return nil, fmt.Errorf("transparency: policy line %d: want \"log <vkey> [<url>]\", got %d items", n, len(f))
			}
			v, key, err := parseVKey(f[1], vkeyEd25519)
			if err != nil {
				return nil, fmt.Errorf("transparency: policy line %d: log key: %w", n, err)
			}
			if prev, dup := logKeys[key]; dup {
				return nil, fmt.Errorf("transparency: policy line %d: log key %s wraps the same public key as the log on line %d: list each log once", n, f[1], prev)
			}
			logKeys[key] = n
			l := policyLog{vkey: f[1], verifier: v}
			if len(f) == 3 {
				if l.url, err = policyURL(f[2]); err != nil {
					return nil, fmt.Errorf("transparency: policy line %d: log URL: %w", n, err)
				}
			}
			p.logs = append(p.logs, l)
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return nil, fmt.Errorf("transparency: policy line %d: want \"witness <name> <vkey> [<url>]\", got %d items", n, len(f))
			}
			if err := newName(names, f[1]); err != nil {
				return nil, fmt.Errorf("transparency: policy line %d: witness: %w", n, err)
			}
			v, key, err := parseVKey(f[2], vkeyCosignatureEd25519, vkeyCosignatureMLDSA44)
			if err != nil {
				return nil, fmt.Errorf("transparency: policy line %d: witness %s: %w", n, f[1], err)
			}
			if prev, dup := witnessKeys[key]; dup {
				return nil, fmt.Errorf("transparency: policy line %d: witness %s's key wraps the same public key as the witness on line %d: list each witness once", n, f[1], prev)
			}
			witnessKeys[key] = n
			w := policyWitness{PolicyWitness: PolicyWitness{Name: f[1], VKey: f[2]}, verifier: v}
			if len(f) == 4 {
				if w.URL, err = policyURL(f[3]); err != nil {
					return nil, fmt.Errorf("transparency: policy line %d: witness %s URL: %w", n, f[1], err)
				}
			}
			names[f[1]] = &quorumNode{name: f[1], witness: len(p.witnesses)}
			p.witnesses = append(p.witnesses, w)
		case "group":
			if len(f) < 4 {
				return nil, fmt.Errorf("transparency: policy line %d: want \"group <name> all|any|<k> <name>...\" with at least one member, got %d items", n, len(f))
			}
			if err := newName(names, f[1]); err != nil {
				return nil, fmt.Errorf("transparency: policy line %d: group: %w", n, err)
			}
			g := &quorumNode{name: f[1], witness: -1}
			for _, m := range f[3:] {
				if m == "none" {
					return nil, fmt.Errorf("transparency: policy line %d: group %s: \"none\" cannot be a group member", n, f[1])
				}
				node, ok := names[m]
				if !ok {
					return nil, fmt.Errorf("transparency: policy line %d: group %s: member %q is not defined on a line before: define witnesses and groups before the groups that list them", n, f[1], m)
				}
				if prev, ok := asMember[m]; ok {
					return nil, fmt.Errorf("transparency: policy line %d: group %s: %q is already a group member on line %d: a name may be listed as a member once in the whole policy", n, f[1], m, prev)
				}
				asMember[m] = n
				g.members = append(g.members, node)
			}
			k, err := threshold(f[2], len(g.members))
			if err != nil {
				return nil, fmt.Errorf("transparency: policy line %d: group %s: %w", n, f[1], err)
			}
			g.k = k
			names[f[1]] = g
		case "quorum":
			if len(f) != 2 {
				return nil, fmt.Errorf("transparency: policy line %d: want \"quorum <name>\" or \"quorum none\", got %d items", n, len(f))
			}
			if quorumLine != 0 {
				return nil, fmt.Errorf("transparency: policy line %d: a second quorum line (the first is line %d): a policy has exactly one", n, quorumLine)
			}
			quorumLine = n
			if f[1] == "none" {
				continue
			}
			q, ok := names[f[1]]
			if !ok {
				return nil, fmt.Errorf("transparency: policy line %d: quorum %q is not a witness or group defined on a line before", n, f[1])
			}
			p.quorum = q
		default:
			return nil, fmt.Errorf("transparency: policy line %d: unknown keyword %q (want log, witness, group or quorum)", n, f[0])
		}
	}
	if quorumLine == 0 {
		return nil, errors.New("transparency: policy has no quorum line: add \"quorum <witness or group>\", or \"quorum none\" to require no cosignature")
	}
	return p, nil
}

// KOfN makes the policy "k of these witnesses" for the command line
// (--witness VKEY repeated): every witness is named after its key, and k = 0
// means all of them. With no witness and k = 0 the policy requires no
// cosignature. The policy lists no log: pass the log's verifier to Verify.
func KOfN(k int, witnessVKeys ...string) (*Policy, error) {
	n := len(witnessVKeys)
	if k == 0 {
		k = n
	}
	if k < 0 || k > n {
		return nil, fmt.Errorf("transparency: %d of %d witnesses: the threshold must be between 1 and the number of witnesses (0 for all)", k, n)
	}
	var text strings.Builder
	var members []string
	used := map[string]bool{"none": true}
	for i, vkey := range witnessVKeys {
		if _, _, err := parseVKey(vkey, vkeyCosignatureEd25519, vkeyCosignatureMLDSA44); err != nil {
			return nil, fmt.Errorf("transparency: witness key %d: %w", i+1, err)
		}
		name, rest, _ := strings.Cut(vkey, "+")
		if used[name] {
			// Two keys of one name (a rotation): the key ID tells them apart.
			hash, _, _ := strings.Cut(rest, "+")
			name += "+" + hash
		}
		if used[name] || name == "" || strings.ContainsAny(name, " \t\n") {
			name = "witness" + strconv.Itoa(i+1)
		}
		used[name] = true
		members = append(members, name)
		fmt.Fprintf(&text, "witness %s %s\n", name, vkey)
	}
	switch {
	case n == 0:
		text.WriteString("quorum none\n")
	case n == 1:
		fmt.Fprintf(&text, "quorum %s\n", members[0])
	default:
		fmt.Fprintf(&text, "group quorum %d %s\nquorum quorum\n", k, strings.Join(members, " "))
	}
	// The keys are valid: what ParsePolicy can still refuse is two of
	// them wrapping one public key.
	return ParsePolicy([]byte(text.String()))
}

// Witnesses lists the policy's witnesses in the order of the file.
func (p *Policy) Witnesses() []PolicyWitness {
	out := make([]PolicyWitness, len(p.witnesses))
	for i, w := range p.witnesses {
		out[i] = w.PolicyWitness
	}
	return out
}

// Verify opens a checkpoint (a signed note) and checks it against the
// policy: it must be signed by the log (logVerifier, or when that is nil
// any log the policy lists) under the log's name as its origin, and
// cosigned by a quorum of the policy's witnesses. Signatures of keys the
// policy does not know are ignored. It returns the note with its verified
// signatures (the log's and the witnesses').
//
// # Errors
//
// A note that does not parse, a signature of a known key that does not
// verify, no log signature, an origin that is not the log's name, or a
// quorum not met: the error names the witnesses that cosigned and the rule
// the quorum needs.
func (p *Policy) Verify(checkpoint []byte, logVerifier note.Verifier) (*note.Note, error) {
	var logs []note.Verifier
	if logVerifier != nil {
		logs = []note.Verifier{logVerifier}
	} else {
		for _, l := range p.logs {
			logs = append(logs, l.verifier)
		}
	}
	if len(logs) == 0 {
		return nil, errors.New("transparency: no log key to verify the checkpoint with: pass the log's verifier key, or list the log in the policy (log <vkey>)")
	}
	all := slices.Clone(logs)
	for _, w := range p.witnesses {
		all = append(all, w.verifier)
	}
	n, err := note.Open(checkpoint, note.VerifierList(all...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			return nil, fmt.Errorf("transparency: checkpoint has no signature of the log (%s) nor of any witness of the policy: %w", logNames(logs), err)
		}
		return nil, fmt.Errorf("transparency: checkpoint: %w", err)
	}
	var logName string
	for _, s := range n.Sigs {
		for _, l := range logs {
			if s.Name == l.Name() && s.Hash == l.KeyHash() {
				logName = s.Name
			}
		}
	}
	if logName == "" {
		return nil, fmt.Errorf("transparency: checkpoint is not signed by the log (%s): only by witnesses", logNames(logs))
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, fmt.Errorf("transparency: checkpoint text: %w", err)
	}
	if c.Origin != logName {
		return nil, fmt.Errorf("transparency: checkpoint origin %q is not the name of the log key that signed it (%q)", c.Origin, logName)
	}
	cosigned := make([]bool, len(p.witnesses))
	var who []string
	for i, w := range p.witnesses {
		for _, s := range n.Sigs {
			if s.Name == w.verifier.Name() && s.Hash == w.verifier.KeyHash() {
				cosigned[i] = true
				who = append(who, w.Name)
				break
			}
		}
	}
	if p.quorum != nil && !p.quorum.satisfied(cosigned) {
		got := "no witness of the policy"
		if len(who) > 0 {
			got = strings.Join(who, ", ")
		}
		return nil, fmt.Errorf("transparency: witness quorum not met: cosigned by %s; the quorum needs %s", got, p.quorum.describe())
	}
	return n, nil
}

func logNames(logs []note.Verifier) string {
	names := make([]string, len(logs))
	for i, l := range logs {
		names[i] = l.Name()
	}
	return strings.Join(names, ", ")
}

// policyFields splits a line at runs of spaces and tabs only: octets with
// the high bit set are opaque (a no-break space is part of a name).
func policyFields(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
}

// newName checks that name may be defined.
func newName(names map[string]*quorumNode, name string) error {
	if name == "none" {
		return errors.New(`"none" is predefined (quorum none): choose another name`)
	}
	if _, dup := names[name]; dup {
		return fmt.Errorf("name %q is already defined: witnesses and groups share one namespace", name)
	}
	return nil
}

// threshold reads all, any or a decimal k for a group of n members.
func threshold(s string, n int) (int, error) {
	switch s {
	case "all":
		return n, nil
	case "any":
		return 1, nil
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("threshold %q is not all, any or a decimal number", s)
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 || k > n {
		return 0, fmt.Errorf("threshold %s is outside 1..%d (the number of members)", s, n)
	}
	return k, nil
}

// policyURL checks that a URL parses.
func policyURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute URL (scheme://host/...)", s)
	}
	return s, nil
}

// parseVKey makes a verifier of a vkey whose signature type is one of
// types, and returns the public key it wraps (for duplicate detection,
// which ignores the key's name and ID).
func parseVKey(vkey string, types ...byte) (note.Verifier, string, error) {
	parts := strings.SplitN(vkey, "+", 3) // base64 has pluses too
	if len(parts) != 3 {
		return nil, "", fmt.Errorf("%q is not a vkey (<name>+<key id>+<base64 key>)", vkey)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < 2 {
		return nil, "", fmt.Errorf("%q: the key is not base64 of a signature type and a public key", vkey)
	}
	if !slices.Contains(types, raw[0]) {
		want := "an Ed25519 log key (type 0x01, as 'wasmgate audit keygen' prints)"
		if types[0] != vkeyEd25519 {
			want = "a witness cosignature key (type 0x04, as 'wasmgate witness keygen' prints; or 0x06, ML-DSA-44)"
		}
		return nil, "", fmt.Errorf("%q has signature type 0x%02x: want %s", vkey, raw[0], want)
	}
	var v note.Verifier
	if raw[0] == vkeyEd25519 {
		v, err = note.NewVerifier(vkey)
	} else {
		v, err = fnote.NewVerifierForCosignatureV1(vkey)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%q: %w", vkey, err)
	}
	// formats' cosignature verifier computes the key ID itself: a vkey
	// whose ID is wrong would match signatures it does not name.
	if id := fmt.Sprintf("%08x", v.KeyHash()); id != parts[1] {
		return nil, "", fmt.Errorf("%q: key ID %s does not match its name and key (want %s)", vkey, parts[1], id)
	}
	return v, string(raw[1:]), nil
}
