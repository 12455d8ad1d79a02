package jshost

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/wasmgate/wasmgate/internal/host"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// The Intl half of the Node profile's host side: Intl.Collator (and so
// String.prototype.localeCompare) compares strings with Go's
// golang.org/x/text/collate, the Unicode Collation Algorithm with CLDR's
// tailorings, which no JavaScript library the tools could carry provides.
// Everything else of Intl runs in the engine (FormatJS's ponyfills). A
// comparison is a pure function of its arguments.
//
//	intl.collations                    → the tailored locales, a JSON array
//	intl.collate LOCALE SENSITIVITY NUMERIC CASEFIRST IGNOREPUNCT A B
//	                                   → "-1", "0" or "1"
//
// LOCALE is one of intl.collations (with -u-co-NAME for a named
// collation), SENSITIVITY base, accent, case or variant (ECMA-402's),
// NUMERIC and IGNOREPUNCT "1" or "0", CASEFIRST upper, lower or false.

// runIntlOp runs op when it is an intl operation (ok); other names are not
// its business.
func runIntlOp(ctx context.Context, op string, args []string) (out string, ok bool, err error) {
	switch op {
	case "intl.collations":
		if len(args) != 0 {
			return "", true, fmt.Errorf("%s: want no arguments, got %d", op, len(args))
		}
		return collationsJSON(), true, nil
	case "intl.collate":
		if len(args) != 7 {
			return "", true, fmt.Errorf("%s: want 7 arguments, got %d", op, len(args))
		}
		c, err := collatorFor(args[0], args[1], args[2], args[3], args[4])
		if err != nil {
			return "", true, fmt.Errorf("%s: %w", op, err)
		}
		if err := spend(ctx, c.cost(host.SessionFrom(ctx), strings.Join(args[:5], " "), len(args[5])+len(args[6]))); err != nil {
			return "", true, err
		}
		return strconv.Itoa(c.compare(args[5], args[6])), true, nil
	}
	return "", false, nil
}

var collationsJSON = sync.OnceValue(func() string {
	tags := collate.Supported()
	names := make([]string, 0, len(tags))
	for _, t := range tags {
		names = append(names, t.String())
	}
	b, _ := json.Marshal(names)
	return string(b)
})

// intlCollator is one Collator's comparison: x/text's collators for the
// strengths it needs, and what ECMA-402 asks on top of them.
type intlCollator struct {
	mu sync.Mutex // a collate.Collator keeps buffers: one comparison at a time
	// main decides; caseOnly, when set, breaks main's ties on case alone
	// (sensitivity "case": base letters, then case).
	main, caseOnly *collate.Collator
	// tertiary tells case apart for caseFirst "upper": two strings equal
	// ignoring case whose difference is their case compare the other way.
	loose, tertiary *collate.Collator
	upperFirst      bool
	// ignorePunct drops punctuation and spaces before comparing, as ICU's
	// alternate=shifted does at the levels ECMA-402 uses.
	ignorePunct bool
}

var (
	collatorsMu sync.Mutex
	collators   = map[string]*intlCollator{}
)

// maxCollators bounds the cache: a tool names few collators, and the key
// comes from its code.
const maxCollators = 256

func collatorFor(locale, sensitivity, numeric, caseFirst, ignorePunct string) (*intlCollator, error) {
	key := strings.Join([]string{locale, sensitivity, numeric, caseFirst, ignorePunct}, "\x00")
	collatorsMu.Lock()
	c, ok := collators[key]
	collatorsMu.Unlock()
	if ok {
		return c, nil
	}
	tag, err := language.Parse(locale)
	if err != nil {
		return nil, fmt.Errorf("locale %q: %w", locale, err)
	}
	var opts []collate.Option
	switch numeric {
	case "1":
		opts = append(opts, collate.Numeric)
	case "0":
	default:
		return nil, fmt.Errorf("numeric %q is not 1 or 0", numeric)
	}
	mk := func(extra ...collate.Option) *collate.Collator {
		return collate.New(tag, append(append([]collate.Option{}, opts...), extra...)...)
	}
	c = &intlCollator{ignorePunct: ignorePunct == "1"}
	switch sensitivity {
	case "base":
		c.main = mk(collate.Loose)
	case "accent":
		c.main = mk(collate.IgnoreCase, collate.IgnoreWidth)
	case "case":
		c.main = mk(collate.Loose)
		c.caseOnly = mk(collate.IgnoreDiacritics, collate.IgnoreWidth)
	case "variant":
		c.main = mk()
	default:
		return nil, fmt.Errorf("sensitivity %q is not base, accent, case or variant", sensitivity)
	}
	switch caseFirst {
	case "upper":
		c.upperFirst = true
		c.loose = mk(collate.IgnoreCase)
		c.tertiary = mk()
	case "lower", "false":
	default:
		return nil, fmt.Errorf("caseFirst %q is not upper, lower or false", caseFirst)
	}
	collatorsMu.Lock()
	if len(collators) >= maxCollators {
		clear(collators)
	}
	collators[key] = c
	collatorsMu.Unlock()
	return c, nil
}

// cost is what comparing n bytes costs: the collators that compare more
// than once cost more. Making the collator is charged at the first use of
// its options in the execution (s), whether or not the host's cache holds
// it already, so that the price does not depend on other executions.
func (c *intlCollator) cost(s *host.Session, options string, n int) uint64 {
	ns := collateCall + perKiB(collatePerKiB, n)
	if c.caseOnly != nil || c.upperFirst || c.ignorePunct {
		ns = collateExtraCall + perKiB(collateExtraPerKiB, n)
	}
	if s.FirstUse(collatorFirstUseKey + options) {
		ns += collatorFirstUse
	}
	return ns
}

func (c *intlCollator) compare(a, b string) int {
	if c.ignorePunct {
		a, b = withoutPunct(a), withoutPunct(b)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.main.CompareString(a, b)
	if r == 0 && c.caseOnly != nil {
		r = c.caseOnly.CompareString(a, b)
	}
	if c.upperFirst && r != 0 && c.loose.CompareString(a, b) == 0 && c.tertiary.CompareString(a, b) != 0 {
		// The strings differ by case alone: upper case first.
		r = -r
	}
	return r
}

func withoutPunct(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
