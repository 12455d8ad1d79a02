package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// version is a strict semver X.Y.Z.
type version [3]uint64

func parseVersion(s string) (version, error) {
	if !sandbox.ValidVersion(s) {
		return version{}, fmt.Errorf("%q is not a strict semver X.Y.Z", s)
	}
	var v version
	for i, part := range strings.SplitN(s, ".", 3) {
		n, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return version{}, fmt.Errorf("%q: %w", s, err)
		}
		v[i] = n
	}
	return v, nil
}

func (v version) compare(w version) int {
	for i := range v {
		switch {
		case v[i] < w[i]:
			return -1
		case v[i] > w[i]:
			return 1
		}
	}
	return 0
}

// comparator is one "op version" term of a range.
type comparator struct {
	op string // "=", ">", ">=", "<", "<="
	v  version
}

func (c comparator) matches(v version) bool {
	d := v.compare(c.v)
	switch c.op {
	case ">":
		return d > 0
	case ">=":
		return d >= 0
	case "<":
		return d < 0
	case "<=":
		return d <= 0
	}
	return d == 0
}

// versionRange is a set of comparators that must all hold. Supported forms:
// "1.2.3" (exact), "=1.2.3", ">=1.0.0 <2.0.0", "^1.2.3", "~1.2.3", "*".
type versionRange []comparator

func parseRange(s string) (versionRange, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty version range")
	}
	var r versionRange
	for _, f := range fields {
		if f == "*" {
			continue
		}
		op := ""
		for _, candidate := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
			if strings.HasPrefix(f, candidate) {
				op = candidate
				break
			}
		}
		v, err := parseVersion(f[len(op):])
		if err != nil {
			return nil, fmt.Errorf("version range %q: %w", s, err)
		}
		switch op {
		case "^":
			// Compatible within the leftmost nonzero component.
			upper := version{v[0] + 1, 0, 0}
			if v[0] == 0 {
				upper = version{0, v[1] + 1, 0}
				if v[1] == 0 {
					upper = version{0, 0, v[2] + 1}
				}
			}
			r = append(r, comparator{">=", v}, comparator{"<", upper})
		case "~":
			r = append(r, comparator{">=", v}, comparator{"<", version{v[0], v[1] + 1, 0}})
		case "":
			r = append(r, comparator{"=", v})
		default:
			r = append(r, comparator{op, v})
		}
	}
	return r, nil
}

func (r versionRange) matches(v version) bool {
	for _, c := range r {
		if !c.matches(v) {
			return false
		}
	}
	return true
}
