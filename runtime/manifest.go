package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ManifestSection is the name of the custom section that carries a Wasm
// executor's manifest.
const ManifestSection = "wasmgate.manifest"

// Manifest describes an executor: who it is and the limits it runs under.
type Manifest struct {
	ExecutorID   string   `json:"executor_id"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
	Limits       Limits   `json:"limits"`
}

// Limits bound one execution. A zero field means "not set"; WithDefaults
// fills it in.
type Limits struct {
	TimeoutMs       int64  `json:"timeout_ms,omitempty"`
	MaxPayloadBytes int64  `json:"max_payload_bytes,omitempty"`
	MaxDepth        int    `json:"max_depth,omitempty"`
	MaxListItems    int    `json:"max_list_items,omitempty"`
	Fuel            uint64 `json:"fuel,omitempty"`
	MemoryPages     uint32 `json:"memory_pages,omitempty"`
	MaxOutputBytes  int64  `json:"max_output_bytes,omitempty"`
}

// DefaultLimits are the limits of an executor that sets none: the figures of
// the reference manifest in DESIGN.md.
var DefaultLimits = Limits{
	TimeoutMs:       1000,
	MaxPayloadBytes: 65536,
	MaxDepth:        16,
	MaxListItems:    1000,
	Fuel:            50_000_000,
	MemoryPages:     256,
	MaxOutputBytes:  65536,
}

// MaxMemoryPages is the most a 32-bit memory can hold (4 GiB).
const MaxMemoryPages = 65536

// WithDefaults returns l with every unset field taken from d.
func (l Limits) WithDefaults(d Limits) Limits {
	if l.TimeoutMs == 0 {
		l.TimeoutMs = d.TimeoutMs
	}
	if l.MaxPayloadBytes == 0 {
		l.MaxPayloadBytes = d.MaxPayloadBytes
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxListItems == 0 {
		l.MaxListItems = d.MaxListItems
	}
	if l.Fuel == 0 {
		l.Fuel = d.Fuel
	}
	if l.MemoryPages == 0 {
		l.MemoryPages = d.MemoryPages
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	return l
}

// Validate reports the first limit that is out of range.
func (l Limits) Validate() error {
	switch {
	case l.TimeoutMs < 0:
		return fmt.Errorf("limits.timeout_ms must be positive, got %d", l.TimeoutMs)
	case l.MaxPayloadBytes < 0:
		return fmt.Errorf("limits.max_payload_bytes must be positive, got %d", l.MaxPayloadBytes)
	case l.MaxDepth < 0:
		return fmt.Errorf("limits.max_depth must be positive, got %d", l.MaxDepth)
	case l.MaxListItems < 0:
		return fmt.Errorf("limits.max_list_items must be positive, got %d", l.MaxListItems)
	case l.MemoryPages > MaxMemoryPages:
		return fmt.Errorf("limits.memory_pages must be at most %d, got %d", MaxMemoryPages, l.MemoryPages)
	case l.MaxOutputBytes < 0:
		return fmt.Errorf("limits.max_output_bytes must be positive, got %d", l.MaxOutputBytes)
	}
	return nil
}

var (
	executorIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	semverPattern     = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
	capabilityPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// ValidExecutorID reports whether id has the form [a-z][a-z0-9_]*.
func ValidExecutorID(id string) bool { return executorIDPattern.MatchString(id) }

// ValidVersion reports whether v is strict semver X.Y.Z.
func ValidVersion(v string) bool { return semverPattern.MatchString(v) }

// ParseManifest decodes and validates a manifest. Capabilities come back
// upper-cased, sorted and without duplicates. Unknown fields are refused: a
// misspelled limit must not silently fall back to a default.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("manifest is not valid: %w", err)
	}
	if dec.More() {
		return Manifest{}, fmt.Errorf("manifest is not valid: trailing data after the JSON object")
	}
	if err := m.normalize(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

func (m *Manifest) normalize() error {
	if !ValidExecutorID(m.ExecutorID) {
		return fmt.Errorf("manifest executor_id %q must match [a-z][a-z0-9_]*", m.ExecutorID)
	}
	if m.Version == "" {
		return fmt.Errorf("manifest of %q has no version", m.ExecutorID)
	}
	if !ValidVersion(m.Version) {
		return fmt.Errorf("manifest version %q of %q is not strict semver X.Y.Z", m.Version, m.ExecutorID)
	}
	caps := make([]string, 0, len(m.Capabilities))
	for _, c := range m.Capabilities {
		u := strings.ToUpper(strings.TrimSpace(c))
		if !capabilityPattern.MatchString(u) {
			return fmt.Errorf("manifest capability %q of %q must match [A-Za-z][A-Za-z0-9_]*", c, m.ExecutorID)
		}
		caps = append(caps, u)
	}
	slices.Sort(caps)
	m.Capabilities = slices.Compact(caps)
	if err := m.Limits.Validate(); err != nil {
		return fmt.Errorf("manifest of %q: %w", m.ExecutorID, err)
	}
	return nil
}

// HasCapability reports whether the manifest declares capability c
// (compared case-insensitively).
func (m Manifest) HasCapability(c string) bool {
	_, found := slices.BinarySearch(m.Capabilities, strings.ToUpper(c))
	return found
}
