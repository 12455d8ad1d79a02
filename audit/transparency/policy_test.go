package transparency_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/formats/witness"
	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit/transparency"
)

// policyWitness is a witness of the policy tests: torchwood's cosignature
// signer, apart from the formats verifier the policy checks with.
type policyWitness struct {
	priv   ed25519.PrivateKey
	signer *torchwood.CosignatureSigner
	vkey   string
}

func newPolicyWitness(t *testing.T, name string) policyWitness {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return policyWitnessWithKey(t, name, priv)
}

func policyWitnessWithKey(t *testing.T, name string, priv ed25519.PrivateKey) policyWitness {
	t.Helper()
	s, err := torchwood.NewCosignatureSigner(name, priv)
	require.NoError(t, err)
	return policyWitness{priv: priv, signer: s, vkey: s.Verifier().String()}
}

// cosign adds the witnesses' cosignatures to a signed checkpoint.
func cosign(t *testing.T, checkpoint []byte, ws ...policyWitness) []byte {
	t.Helper()
	text := checkpoint[:bytes.LastIndex(checkpoint, []byte("\n\n"))+1]
	out := bytes.Clone(checkpoint)
	for _, w := range ws {
		signed, err := note.Sign(&note.Note{Text: string(text)}, w.signer)
		require.NoError(t, err)
		out = append(out, signed[len(text)+1:]...)
	}
	return out
}

func TestParsePolicyFollowsTheSpec(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w1, w2, w3 := newPolicyWitness(t, "w.example/1"), newPolicyWitness(t, "w.example/2"), newPolicyWitness(t, "w.example/3")
	// The same public keys under other names (and so other key IDs).
	logPub, err := note.NewEd25519VerifierKey("example.com/renamed", ed25519.PublicKey(mustVKeyKey(t, log.vkey)))
	require.NoError(t, err)
	w1Again := policyWitnessWithKey(t, "w.example/renamed", w1.priv)
	_, mldsaVKey, err := fnote.GenerateMLDSAKey("w.example/pq")
	require.NoError(t, err)
	wrongID := w1.vkey[:strings.Index(w1.vkey, "+")+1] + "00000000" + w1.vkey[strings.Index(w1.vkey, "+")+9:]

	tests := []struct {
		name    string
		text    string
		err     string // "" for a valid policy
		members []string
	}{
		{name: "the spec's example, two levels of groups", text: fmt.Sprintf(`log %s

witness X1 %s
witness X2 %s
group X 2 X1 X2
witness Y1 %s
group Y any Y1
group X-and-Y all X Y
quorum X-and-Y
`, log.vkey, w1.vkey, w2.vkey, w3.vkey), members: []string{"X1", "X2", "Y1"}},
		{name: "quorum none alone", text: "quorum none\n"},
		{name: "comments, blank lines, spaces and tabs", text: fmt.Sprintf("# a policy\n   \t\n\t# indented comment\n  witness\tA \t %s  \n\tquorum  A\t\n", w1.vkey), members: []string{"A"}},
		{name: "URLs optional", text: fmt.Sprintf("log %s https://log.example/\nwitness A %s https://w1.example/sub\nwitness B %s\ngroup G all A B\nquorum G\n", log.vkey, w1.vkey, w2.vkey), members: []string{"A", "B"}},
		{name: "no newline at the end", text: fmt.Sprintf("witness A %s\nquorum A", w1.vkey), members: []string{"A"}},
		{name: "high-bit octets are opaque in names", text: fmt.Sprintf("witness K %s\nwitness \u212a %s\nwitness a\u00a0b %s\ngroup G 3 K \u212a a\u00a0b\nquorum G\n", w1.vkey, w2.vkey, w3.vkey), members: []string{"K", "\u212a", "a\u00a0b"}},
		{name: "an ML-DSA-44 witness key", text: fmt.Sprintf("witness PQ %s\nquorum PQ\n", mldsaVKey), members: []string{"PQ"}},
		{name: "definitions after the quorum", text: fmt.Sprintf("quorum none\nwitness A %s\n", w1.vkey), members: []string{"A"}},
		{name: "a witness both in a group and the quorum's own", text: fmt.Sprintf("witness A %s\ngroup G any A\nquorum A\n", w1.vkey), members: []string{"A"}},

		{name: "control octet", text: "quorum none\x01\n", err: "policy line 1: octet 0x01 is not allowed"},
		{name: "DEL", text: "# \x7f\nquorum none\n", err: "policy line 1: octet 0x7f is not allowed"},
		{name: "CRLF", text: "quorum none\r\n", err: "octet 0x0d is not allowed (only tab, newline, 0x20-0x7e and 0x80-0xff): save the file with LF line ends"},
		{name: "vertical tab is not whitespace", text: "quorum\vnone\n", err: "octet 0x0b"},
		{name: "unknown keyword", text: "quorom none\n", err: `policy line 1: unknown keyword "quorom"`},
		{name: "comment after items", text: "quorum none # why\n", err: `want "quorum <name>" or "quorum none", got 4 items`},
		{name: "log without key", text: "log\nquorum none\n", err: `want "log <vkey> [<url>]", got 1 items`},
		{name: "log with two URLs", text: fmt.Sprintf("log %s https://a.example https://b.example\nquorum none\n", log.vkey), err: "got 4 items"},
		{name: "log key of a witness", text: fmt.Sprintf("log %s\nquorum none\n", w1.vkey), err: "has signature type 0x04: want an Ed25519 log key (type 0x01"},
		{name: "witness key of a log", text: fmt.Sprintf("witness A %s\nquorum A\n", log.vkey), err: "witness A: \"" + log.vkey + "\" has signature type 0x01: want a witness cosignature key (type 0x04"},
		{name: "not a vkey", text: "witness A nokey\nquorum A\n", err: `"nokey" is not a vkey`},
		{name: "wrong key ID", text: fmt.Sprintf("witness A %s\nquorum A\n", wrongID), err: "key ID 00000000 does not match its name and key"},
		{name: "bad URL", text: fmt.Sprintf("witness A %s w1.example\nquorum A\n", w1.vkey), err: `witness A URL: "w1.example" is not an absolute URL`},
		{name: "duplicate log key", text: fmt.Sprintf("log %s\nlog %s\nquorum none\n", log.vkey, logPub), err: "policy line 2: log key " + logPub + " wraps the same public key as the log on line 1"},
		{name: "duplicate witness key", text: fmt.Sprintf("witness A %s\nwitness B %s\nquorum A\n", w1.vkey, w1Again.vkey), err: "policy line 2: witness B's key wraps the same public key as the witness on line 1"},
		{name: "duplicate name", text: fmt.Sprintf("witness A %s\nwitness A %s\nquorum A\n", w1.vkey, w2.vkey), err: `policy line 2: witness: name "A" is already defined`},
		{name: "group named like a witness", text: fmt.Sprintf("witness A %s\ngroup A any A\nquorum A\n", w1.vkey), err: `policy line 2: group: name "A" is already defined: witnesses and groups share one namespace`},
		{name: "witness named none", text: fmt.Sprintf("witness none %s\nquorum none\n", w1.vkey), err: `"none" is predefined`},
		{name: "none as member", text: fmt.Sprintf("witness A %s\ngroup G any A none\nquorum G\n", w1.vkey), err: `group G: "none" cannot be a group member`},
		{name: "member used before defined", text: fmt.Sprintf("group G any A\nwitness A %s\nquorum G\n", w1.vkey), err: `policy line 1: group G: member "A" is not defined on a line before`},
		{name: "member twice in a group", text: fmt.Sprintf("witness A %s\ngroup G 1 A A\nquorum G\n", w1.vkey), err: `policy line 2: group G: "A" is already a group member on line 2`},
		{name: "member of two groups", text: fmt.Sprintf("witness A %s\nwitness B %s\ngroup G any A\ngroup H any A B\nquorum H\n", w1.vkey, w2.vkey), err: `policy line 4: group H: "A" is already a group member on line 3: a name may be listed as a member once in the whole policy`},
		{name: "group without members", text: "group G any\nquorum none\n", err: "with at least one member, got 3 items"},
		{name: "threshold 0", text: fmt.Sprintf("witness A %s\ngroup G 0 A\nquorum G\n", w1.vkey), err: "threshold 0 is outside 1..1"},
		{name: "threshold beyond n", text: fmt.Sprintf("witness A %s\ngroup G 2 A\nquorum G\n", w1.vkey), err: "threshold 2 is outside 1..1"},
		{name: "signed threshold", text: fmt.Sprintf("witness A %s\ngroup G +1 A\nquorum G\n", w1.vkey), err: `threshold "+1" is not all, any or a decimal number`},
		{name: "word threshold", text: fmt.Sprintf("witness A %s\ngroup G most A\nquorum G\n", w1.vkey), err: `threshold "most"`},
		{name: "no quorum", text: fmt.Sprintf("witness A %s\n", w1.vkey), err: "policy has no quorum line"},
		{name: "empty file", text: "", err: "policy has no quorum line"},
		{name: "two quorums", text: "quorum none\nquorum none\n", err: "policy line 2: a second quorum line (the first is line 1)"},
		{name: "quorum undefined", text: "quorum G\n", err: `quorum "G" is not a witness or group defined on a line before`},
		{name: "quorum before its group", text: fmt.Sprintf("witness A %s\nquorum G\ngroup G any A\n", w1.vkey), err: `quorum "G" is not a witness or group`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := transparency.ParsePolicy([]byte(tc.text))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, w := range p.Witnesses() {
				names = append(names, w.Name)
			}
			assert.Equal(t, tc.members, names)
		})
	}
}

func mustVKeyKey(t *testing.T, vkey string) []byte {
	t.Helper()
	parts := strings.SplitN(vkey, "+", 3)
	require.Len(t, parts, 3)
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	return raw[1:]
}

func TestPolicyWitnessesListsNamesKeysAndURLs(t *testing.T) {
	w1, w2 := newPolicyWitness(t, "w.example/1"), newPolicyWitness(t, "w.example/2")
	p, err := transparency.ParsePolicy(fmt.Appendf(nil, "witness A %s https://w1.example/sub\nwitness B %s\ngroup G any A B\nquorum G\n", w1.vkey, w2.vkey))
	require.NoError(t, err)
	assert.Equal(t, []transparency.PolicyWitness{
		{Name: "A", VKey: w1.vkey, URL: "https://w1.example/sub"},
		{Name: "B", VKey: w2.vkey},
	}, p.Witnesses())
}

// TestPolicyVerdictsAgreeWithFormats: on a policy that formats'
// witness.ParsePolicy also reads (it needs the URLs), our Verify and its
// Group.Satisfied agree on every subset of cosigners (formats ignores the
// log: Verify is given its key).
func TestPolicyVerdictsAgreeWithFormats(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	log.grow(t, 3, "a")
	cp := log.checkpoint(t, 3)
	var ws []policyWitness
	for i := range 6 {
		ws = append(ws, newPolicyWitness(t, fmt.Sprintf("w.example/%d", i)))
	}
	policies := map[string]string{
		"two levels": fmt.Sprintf(`log %s https://log.example/
witness X1 %s https://x1.example/
witness X2 %s https://x2.example/
witness X3 %s https://x3.example/
group X-witnesses 2 X1 X2 X3
witness Y1 %s https://y1.example/
witness Y2 %s https://y2.example/
witness Y3 %s https://y3.example/
group Y-witnesses any Y1 Y2 Y3
group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
`, log.vkey, ws[0].vkey, ws[1].vkey, ws[2].vkey, ws[3].vkey, ws[4].vkey, ws[5].vkey),
		"one witness": fmt.Sprintf("witness A %s https://a.example/\nquorum A\n", ws[2].vkey),
		"none":        fmt.Sprintf("witness A %s https://a.example/\nquorum none\n", ws[2].vkey),
		"4 of 6": fmt.Sprintf("witness A %s https://a.example/\nwitness B %s https://b.example/\nwitness C %s https://c.example/\nwitness D %s https://d.example/\nwitness E %s https://e.example/\nwitness F %s https://f.example/\ngroup G 4 A B C D E F\nquorum G\n",
			ws[0].vkey, ws[1].vkey, ws[2].vkey, ws[3].vkey, ws[4].vkey, ws[5].vkey),
	}
	for name, text := range policies {
		t.Run(name, func(t *testing.T) {
			ours, err := transparency.ParsePolicy([]byte(text))
			require.NoError(t, err)
			theirs, err := witness.ParsePolicy([]byte(text))
			require.NoError(t, err)
			satisfied := 0
			for set := range 1 << len(ws) {
				var signers []policyWitness
				for i, w := range ws {
					if set&(1<<i) != 0 {
						signers = append(signers, w)
					}
				}
				cosigned := cosign(t, cp, signers...)
				_, err := ours.Verify(cosigned, log.verifier)
				want := theirs.Satisfied(cosigned)
				assert.Equal(t, want, err == nil, "cosigners %06b: formats says %v, ours %v", set, want, err)
				if want {
					satisfied++
				}
			}
			assert.Positive(t, satisfied, "some subsets meet the quorum")
		})
	}
}

func TestPolicyVerifyErrors(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	log.grow(t, 3, "a")
	cp := log.checkpoint(t, 3)
	x1, x2, x3, y1 := newPolicyWitness(t, "x.example/1"), newPolicyWitness(t, "x.example/2"), newPolicyWitness(t, "x.example/3"), newPolicyWitness(t, "y.example/1")
	stranger := newPolicyWitness(t, "stranger.example/1")
	p, err := transparency.ParsePolicy(fmt.Appendf(nil, "log %s\nwitness X1 %s\nwitness X2 %s\nwitness X3 %s\ngroup X 2 X1 X2 X3\nwitness Y1 %s\ngroup Y any Y1\ngroup XY all X Y\nquorum XY\n",
		log.vkey, x1.vkey, x2.vkey, x3.vkey, y1.vkey))
	require.NoError(t, err)

	n, err := p.Verify(cosign(t, cp, x1, stranger, x3, y1), nil)
	require.NoError(t, err, "two X and one Y; an unknown cosignature is ignored")
	assert.Len(t, n.Sigs, 4, "the log's and three witnesses'")
	assert.Len(t, n.UnverifiedSigs, 1)

	_, err = p.Verify(cosign(t, cp, x1, stranger, y1), nil)
	assert.EqualError(t, err, "transparency: witness quorum not met: cosigned by X1, Y1; the quorum needs XY = all of [X = 2 of [X1, X2, X3], Y = 1 of [Y1]]")
	_, err = p.Verify(cp, nil)
	assert.EqualError(t, err, "transparency: witness quorum not met: cosigned by no witness of the policy; the quorum needs XY = all of [X = 2 of [X1, X2, X3], Y = 1 of [Y1]]")

	// The log's signature is required, and must be the origin's key.
	text := cp[:bytes.LastIndex(cp, []byte("\n\n"))+2]
	onlyWitnesses := cosign(t, text, x1, x2, y1)
	_, err = p.Verify(onlyWitnesses, nil)
	assert.EqualError(t, err, "transparency: checkpoint is not signed by the log (example.com/log): only by witnesses")
	otherLog := newMemLog(t, "example.com/other")
	otherLog.grow(t, 3, "a")
	_, err = p.Verify(cosign(t, otherLog.checkpoint(t, 3), x1, x2, y1), nil)
	assert.EqualError(t, err, "transparency: checkpoint is not signed by the log (example.com/log): only by witnesses")
	_, err = p.Verify(otherLog.checkpoint(t, 3), nil)
	assert.EqualError(t, err, "transparency: checkpoint has no signature of the log (example.com/log) nor of any witness of the policy: note has no verifiable signatures")
	_, err = p.Verify(cosign(t, otherLog.checkpoint(t, 3), x1, x2, y1), otherLog.verifier)
	require.NoError(t, err, "the log named by the caller replaces the policy's logs")
	misnamed := newMemLog(t, "example.com/log")
	misnamed.origin = "example.com/elsewhere"
	misnamed.grow(t, 1, "a")
	_, err = p.Verify(cosign(t, misnamed.checkpoint(t, 1), x1, x2, y1), misnamed.verifier)
	assert.EqualError(t, err, `transparency: checkpoint origin "example.com/elsewhere" is not the name of the log key that signed it ("example.com/log")`)

	// A known key's signature that does not verify rejects the note.
	good := cosign(t, cp, x1, x2, y1)
	bad := bytes.Replace(good, []byte("\n3\n"), []byte("\n4\n"), 1)
	_, err = p.Verify(bad, nil)
	assert.ErrorContains(t, err, "transparency: checkpoint: invalid signature for key example.com/log+")

	none, err := transparency.ParsePolicy([]byte("quorum none\n"))
	require.NoError(t, err)
	_, err = none.Verify(cp, nil)
	assert.EqualError(t, err, "transparency: no log key to verify the checkpoint with: pass the log's verifier key, or list the log in the policy (log <vkey>)")
	_, err = none.Verify(cp, log.verifier)
	assert.NoError(t, err, "quorum none needs the log's signature only")
}

func TestKOfN(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	log.grow(t, 2, "a")
	cp := log.checkpoint(t, 2)
	a, b, c := newPolicyWitness(t, "w.example/a"), newPolicyWitness(t, "w.example/b"), newPolicyWitness(t, "w.example/c")
	tests := []struct {
		name      string
		k         int
		keys      []string
		cosigners []policyWitness
		err       string
	}{
		{name: "2 of 3 met", k: 2, keys: []string{a.vkey, b.vkey, c.vkey}, cosigners: []policyWitness{a, c}},
		{name: "2 of 3 not met", k: 2, keys: []string{a.vkey, b.vkey, c.vkey}, cosigners: []policyWitness{b},
			err: "transparency: witness quorum not met: cosigned by w.example/b; the quorum needs quorum = 2 of [w.example/a, w.example/b, w.example/c]"},
		{name: "0 means all", k: 0, keys: []string{a.vkey, b.vkey}, cosigners: []policyWitness{a},
			err: "the quorum needs quorum = all of [w.example/a, w.example/b]"},
		{name: "all met", k: 0, keys: []string{a.vkey, b.vkey}, cosigners: []policyWitness{b, a}},
		{name: "one witness", k: 1, keys: []string{c.vkey}, cosigners: []policyWitness{a},
			err: "cosigned by no witness of the policy; the quorum needs w.example/c"},
		{name: "no witness", k: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := transparency.KOfN(tc.k, tc.keys...)
			require.NoError(t, err)
			_, err = p.Verify(cosign(t, cp, tc.cosigners...), log.verifier)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.err)
			}
		})
	}

	for _, k := range []int{-1, 4} {
		_, err := transparency.KOfN(k, a.vkey, b.vkey, c.vkey)
		assert.EqualError(t, err, fmt.Sprintf("transparency: %d of 3 witnesses: the threshold must be between 1 and the number of witnesses (0 for all)", k))
	}
	_, err := transparency.KOfN(1, log.vkey)
	assert.ErrorContains(t, err, "transparency: witness key 1: \""+log.vkey+"\" has signature type 0x01: want a witness cosignature key")
	// Two keys of one name are told apart by their key IDs.
	a2 := newPolicyWitness(t, "w.example/a")
	p, err := transparency.KOfN(0, a.vkey, a2.vkey)
	require.NoError(t, err)
	assert.Equal(t, "w.example/a", p.Witnesses()[0].Name)
	assert.Equal(t, a2.vkey[:strings.Index(a2.vkey, "+")+9], p.Witnesses()[1].Name)
}
