// Package report holds what the benchmark commands under bench/ print with:
// percentiles, number formatting as docs/BENCHMARKS.md writes numbers, and
// the machine line.
package report

import (
	"bufio"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Percentile is the nearest-rank p-th percentile of ds (0 for none).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Micros formats d in whole microseconds with thousands separators.
func Micros(d time.Duration) string { return Thousands(d.Microseconds()) }

// Thousands formats n with commas, as docs/BENCHMARKS.md does.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// CPUModel is the machine's CPU model name (Linux), or "unknown CPU".
func CPUModel() string {
	if v, ok := ProcField("/proc/cpuinfo", "model name"); ok {
		return strings.TrimSpace(strings.TrimPrefix(v, ":"))
	}
	return "unknown CPU"
}

// ProcField is the rest of the first line of a /proc file that starts with
// key, trimmed.
func ProcField(file, key string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), key); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Median is the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
