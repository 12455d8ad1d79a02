package pipeline

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// decodeCanonical decodes canonical JSON (RFC 8785, as audit.Canonicalize
// writes it) into the values the schema library validates: maps, slices,
// strings, bools, nil, and json.Number for numbers, so that an integer
// beyond 2^53 is compared as itself. It does with far fewer allocations
// what encoding/json with UseNumber does, and refuses what canonical JSON
// cannot hold (whitespace, a trailing byte).
func decodeCanonical(b []byte) (any, error) {
	d := canonDecoder{b: b}
	v, err := d.value()
	if err == nil && d.i != len(d.b) {
		err = errors.New("trailing data after the JSON value")
	}
	return v, err
}

type canonDecoder struct {
	b []byte
	i int
}

var errNotCanonical = errors.New("not canonical JSON")

func (d *canonDecoder) value() (any, error) {
	if d.i >= len(d.b) {
		return nil, errNotCanonical
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := map[string]any{}
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, nil
		}
		for {
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				return nil, errNotCanonical
			}
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, errNotCanonical
			}
			d.i++
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			m[k] = v
			if d.i >= len(d.b) {
				return nil, errNotCanonical
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case '}':
				d.i++
				return m, nil
			default:
				return nil, errNotCanonical
			}
		}
	case c == '[':
		d.i++
		var a []any
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return []any{}, nil
		}
		for {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if d.i >= len(d.b) {
				return nil, errNotCanonical
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return a, nil
			default:
				return nil, errNotCanonical
			}
		}
	case c == '"':
		return d.str()
	case c == 't' && d.lit("true"):
		return true, nil
	case c == 'f' && d.lit("false"):
		return false, nil
	case c == 'n' && d.lit("null"):
		return nil, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.i
		for d.i < len(d.b) {
			c := d.b[d.i]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				d.i++
				continue
			}
			break
		}
		n := json.Number(d.b[start:d.i])
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			return nil, errNotCanonical
		}
		return n, nil
	}
	return nil, errNotCanonical
}

func (d *canonDecoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// str decodes a string at d.i (its opening quote).
func (d *canonDecoder) str() (string, error) {
	d.i++
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s, nil
		case c == '\\':
			// Escapes are rare in canonical JSON (quote, backslash and
			// control characters): decode this string the slow way.
			end := d.i
			for end < len(d.b) && d.b[end] != '"' {
				if d.b[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(d.b) {
				return "", errNotCanonical
			}
			var s string
			if err := json.Unmarshal(d.b[start-1:end+1], &s); err != nil {
				return "", err
			}
			d.i = end + 1
			return s, nil
		case c < 0x20:
			return "", errNotCanonical
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRune(d.b[d.i:])
			d.i += size
		default:
			d.i++
		}
	}
	return "", errNotCanonical
}
