package sandbox

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

// Manifest describes an executor: who it is, the limits it runs under, and
// what it takes and gives.
type Manifest struct {
	ExecutorID   string   `json:"executor_id"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
	Limits       Limits   `json:"limits"`
	// Title and Description say what the executor does, for people and
	// for agents choosing a tool (MCP's tools/list).
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema, when set, are JSON Schemas (2020-12
	// unless their $schema says otherwise) the payload and the output must
	// match: the pipeline blocks a payload that does not
	// (INPUT_SCHEMA_INVALID) and fails an output that does not
	// (OUTPUT_SCHEMA_INVALID).
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Limits bound one execution. A field left at zero is not set, and
// WithDefaults fills it in. A field set to zero on purpose (a manifest's
// "max_list_items": 0, the flag --max-list-items 0, SetZero) is zero: a
// list limit of 0 admits no list items. Only max_depth, max_list_items and
// max_output_bytes can be zero; at zero the others would admit nothing,
// and are refused by name.
type Limits struct {
	TimeoutMs       int64  `json:"timeout_ms,omitempty"`
	MaxPayloadBytes int64  `json:"max_payload_bytes,omitempty"`
	MaxDepth        int    `json:"max_depth,omitempty"`
	MaxListItems    int    `json:"max_list_items,omitempty"`
	Fuel            uint64 `json:"fuel,omitempty"`
	MemoryPages     uint32 `json:"memory_pages,omitempty"`
	MaxOutputBytes  int64  `json:"max_output_bytes,omitempty"`

	// zero marks the fields set to zero on purpose.
	zero zeroLimits
	// fuelPerMs, in a set of defaults (WithFuelPerMs), is the fuel they
	// give a limit whose fuel is unset for each millisecond of its
	// timeout_ms.
	fuelPerMs uint64
}

// zeroLimits is a set of the limits that can be zero.
type zeroLimits uint8

const (
	zeroMaxDepth zeroLimits = 1 << iota
	zeroMaxListItems
	zeroMaxOutputBytes
)

// limitNames are the limits' names, as manifests and messages spell them,
// with the bit of those that can be zero.
var limitNames = map[string]zeroLimits{
	"timeout_ms": 0, "max_payload_bytes": 0, "fuel": 0, "memory_pages": 0,
	"max_depth": zeroMaxDepth, "max_list_items": zeroMaxListItems, "max_output_bytes": zeroMaxOutputBytes,
}

// SetZero returns l with the limit name (as a manifest spells it:
// "max_list_items") set to zero on purpose.
//
// # Errors
//
// When name is no limit, or one that admits nothing at zero (timeout_ms,
// max_payload_bytes, fuel, memory_pages).
func (l Limits) SetZero(name string) (Limits, error) {
	bit, ok := limitNames[name]
	switch {
	case !ok:
		return l, fmt.Errorf("%q is not a limit", name)
	case bit == 0:
		return l, fmt.Errorf("limits.%s cannot be 0: it would admit nothing (leave it out for the default)", name)
	}
	l.zero |= bit
	switch bit {
	case zeroMaxDepth:
		l.MaxDepth = 0
	case zeroMaxListItems:
		l.MaxListItems = 0
	case zeroMaxOutputBytes:
		l.MaxOutputBytes = 0
	}
	return l, nil
}

// UnmarshalJSON reads limits as a manifest writes them, refusing unknown
// names (a misspelled limit must not silently fall back to a default) and
// telling a limit given as 0 from one left out.
func (l *Limits) UnmarshalJSON(b []byte) error {
	var v struct {
		TimeoutMs       *int64  `json:"timeout_ms"`
		MaxPayloadBytes *int64  `json:"max_payload_bytes"`
		MaxDepth        *int    `json:"max_depth"`
		MaxListItems    *int    `json:"max_list_items"`
		Fuel            *uint64 `json:"fuel"`
		MemoryPages     *uint32 `json:"memory_pages"`
		MaxOutputBytes  *int64  `json:"max_output_bytes"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	var out Limits
	var err error
	zero := func(name string) {
		if err == nil {
			out, err = out.SetZero(name)
		}
	}
	if v.TimeoutMs != nil {
		if out.TimeoutMs = *v.TimeoutMs; out.TimeoutMs == 0 {
			zero("timeout_ms")
		}
	}
	if v.MaxPayloadBytes != nil {
		if out.MaxPayloadBytes = *v.MaxPayloadBytes; out.MaxPayloadBytes == 0 {
			zero("max_payload_bytes")
		}
	}
	if v.MaxDepth != nil {
		if out.MaxDepth = *v.MaxDepth; out.MaxDepth == 0 {
			zero("max_depth")
		}
	}
	if v.MaxListItems != nil {
		if out.MaxListItems = *v.MaxListItems; out.MaxListItems == 0 {
			zero("max_list_items")
		}
	}
	if v.Fuel != nil {
		if out.Fuel = *v.Fuel; out.Fuel == 0 {
			zero("fuel")
		}
	}
	if v.MemoryPages != nil {
		if out.MemoryPages = *v.MemoryPages; out.MemoryPages == 0 {
			zero("memory_pages")
		}
	}
	if v.MaxOutputBytes != nil {
		if out.MaxOutputBytes = *v.MaxOutputBytes; out.MaxOutputBytes == 0 {
			zero("max_output_bytes")
		}
	}
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// MarshalJSON writes the limits that are set, those set to zero included.
func (l Limits) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	set := func(name string, v, zero bool, val any) {
		if v || zero {
			m[name] = val
		}
	}
	set("timeout_ms", l.TimeoutMs != 0, false, l.TimeoutMs)
	set("max_payload_bytes", l.MaxPayloadBytes != 0, false, l.MaxPayloadBytes)
	set("max_depth", l.MaxDepth != 0, l.zero&zeroMaxDepth != 0, l.MaxDepth)
	set("max_list_items", l.MaxListItems != 0, l.zero&zeroMaxListItems != 0, l.MaxListItems)
	set("fuel", l.Fuel != 0, false, l.Fuel)
	set("memory_pages", l.MemoryPages != 0, false, l.MemoryPages)
	set("max_output_bytes", l.MaxOutputBytes != 0, l.zero&zeroMaxOutputBytes != 0, l.MaxOutputBytes)
	return json.Marshal(m)
}

// defaultLimits is DefaultLimits's value, of which callers get copies.
var defaultLimits = Limits{
	TimeoutMs:       1000,
	MaxPayloadBytes: 65536,
	MaxDepth:        16,
	MaxListItems:    1000,
	Fuel:            1000 * defaultFuelPerMs,
	MemoryPages:     256,
	MaxOutputBytes:  65536,
}.WithFuelPerMs(defaultFuelPerMs)

// DefaultLimits returns the limits of an executor that sets none: the figures of
// the reference manifest in docs/DESIGN.md, but for fuel. An unset fuel covers
// whatever timeout_ms applies, with margin, so that fuel never stops
// ordinary work before the wall clock would: defaultFuelPerMs for each of its
// milliseconds (60 billion at the default 1 s).
// The caller gets a copy.
func DefaultLimits() Limits { return defaultLimits }

// defaultFuelPerMs is a compiled guest's default fuel per millisecond of its
// timeout: twice what the fastest-burning compiled guest measured (a tight
// loop, about 29 billion units a second on wazero's compiler) spends in one;
// most code burns 2 to 14 billion a second, so the clock stops it first
// (docs/BENCHMARKS.md, Issue 14). A JS tool has a lower rate of its own
// (jstool), as QuickJS burns fuel more slowly.
const defaultFuelPerMs = 60_000_000

// WithFuelPerMs returns l, as a set of defaults, giving a limit whose fuel
// is unset perMs units of fuel for each millisecond of the timeout_ms it
// resolves to (WithDefaults), instead of l's own Fuel: a caller that raises
// only the time limit gets the fuel that time covers.
func (l Limits) WithFuelPerMs(perMs uint64) Limits {
	l.fuelPerMs = perMs
	return l
}

// MaxMemoryPages is the most a 32-bit memory can hold (4 GiB).
const MaxMemoryPages = 65536

// WithDefaults returns l with every unset field taken from d (a field set
// to zero on purpose is set). An unset fuel is d's fuel per millisecond of
// the resulting timeout_ms where d has one (WithFuelPerMs), else d's Fuel.
func (l Limits) WithDefaults(d Limits) Limits {
	if l.TimeoutMs == 0 {
		l.TimeoutMs = d.TimeoutMs
	}
	if l.MaxPayloadBytes == 0 {
		l.MaxPayloadBytes = d.MaxPayloadBytes
	}
	if l.MaxDepth == 0 && l.zero&zeroMaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
		l.zero |= d.zero & zeroMaxDepth
	}
	if l.MaxListItems == 0 && l.zero&zeroMaxListItems == 0 {
		l.MaxListItems = d.MaxListItems
		l.zero |= d.zero & zeroMaxListItems
	}
	if l.Fuel == 0 {
		l.Fuel = d.Fuel
		if d.fuelPerMs != 0 && l.TimeoutMs > 0 {
			l.Fuel = uint64(l.TimeoutMs) * d.fuelPerMs
		}
	}
	if l.fuelPerMs == 0 {
		l.fuelPerMs = d.fuelPerMs
	}
	if l.MemoryPages == 0 {
		l.MemoryPages = d.MemoryPages
	}
	if l.MaxOutputBytes == 0 && l.zero&zeroMaxOutputBytes == 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
		l.zero |= d.zero & zeroMaxOutputBytes
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
	for _, s := range []struct {
		name string
		v    *json.RawMessage
	}{{"input_schema", &m.InputSchema}, {"output_schema", &m.OutputSchema}} {
		b := bytes.TrimSpace(*s.v)
		switch {
		case len(b) == 0 || string(b) == "null":
			*s.v = nil
		case b[0] != '{' && string(b) != "true" && string(b) != "false":
			return fmt.Errorf("manifest of %q: %s must be a JSON Schema (an object or a boolean)", m.ExecutorID, s.name)
		default:
			*s.v = b
		}
	}
	return nil
}

// HasCapability reports whether the manifest declares capability c
// (compared case-insensitively).
func (m Manifest) HasCapability(c string) bool {
	_, found := slices.BinarySearch(m.Capabilities, strings.ToUpper(c))
	return found
}
