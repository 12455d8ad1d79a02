package cluster

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
)

// DefaultPrefix names the subjects, streams and buckets of a deployment
// that chose no prefix.
const DefaultPrefix = "wasmgate"

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Names are the subjects, streams and buckets of one deployment. Tenants
// sharing a cluster each take a prefix of their own (and NATS permissions
// on it).
//
// Every name is a function of the prefix that no other prefix reaches:
// streams are the prefix upper-cased and a suffix of their own, buckets
// the prefix and a suffix of their own, and no suffix ends another
// (TestNamesInjective checks it over every prefix of a small alphabet,
// with the streams JetStream makes for buckets, and ignoring case, as a
// case-insensitive file system would).
type Names struct {
	// Prefix is what every name below starts with.
	Prefix string
}

// NewNames checks prefix (lowercase letters, digits, '_' and '-', starting
// with a letter, at most 32) and returns the names it makes; "" is
// DefaultPrefix.
func NewNames(prefix string) (Names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !prefixPattern.MatchString(prefix) {
		return Names{}, fmt.Errorf("nats prefix %q: want lowercase letters, digits, '_' or '-', starting with a letter, at most 32", prefix)
	}
	return Names{Prefix: prefix}, nil
}

// upper is the prefix as stream names carry it: upper-cased, nothing else.
// A prefix is lowercase, so upper-casing loses nothing: two prefixes make
// two names. (Before, '-' was also made '_', and "t-a" and "t_a" shared
// their streams.) Stream names may hold '-'; the default prefix has none,
// so its streams keep the names they always had.
func (n Names) upper() string { return strings.ToUpper(n.Prefix) }

// ActionsStream is the work-queue stream of action requests.
func (n Names) ActionsStream() string { return n.upper() + "_ACTIONS" }

// ActionsSubjects is the subject filter of ActionsStream.
func (n Names) ActionsSubjects() string { return n.Prefix + ".actions.>" }

// ActionSubject is the subject a request for action is published on: the
// action's name when it is a valid subject made of letters, digits, '_',
// '-' and dots between them, and otherwise "_." and a digest of the name
// (the request itself always names its action).
func (n Names) ActionSubject(action string) string {
	if subjectSafe.MatchString(action) {
		return n.Prefix + ".actions." + action
	}
	return n.Prefix + ".actions._." + audit.Digest([]byte(action))[:32]
}

var subjectSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// AuditStream is the stream that holds the audit chain, one record per
// message, the message's stream sequence equal to the record's seq.
func (n Names) AuditStream() string { return n.upper() + "_AUDIT" }

// AuditSubject is the subject audit records are published on.
func (n Names) AuditSubject() string { return n.Prefix + ".audit" }

// Workers is the durable pull consumer every worker shares.
func (n Names) Workers() string { return n.Prefix + "_workers" }

// ModulesBucket is the Object Store bucket of modules and JS tool bundles,
// each object named by the BLAKE3 digest of its bytes.
func (n Names) ModulesBucket() string { return n.Prefix + "_modules" }

// RegistryBucket is the KV bucket holding the published registry.
func (n Names) RegistryBucket() string { return n.Prefix + "_registry" }

// RequestsBucket is the KV bucket indexing request ids: for each, the
// worker's claim while it executes the request, then the verdict's seq in
// the chain and the answer given (see Worker).
func (n Names) RequestsBucket() string { return n.Prefix + "_requests" }

// RegistryKey is the key of the registry in RegistryBucket.
const RegistryKey = "registry"
