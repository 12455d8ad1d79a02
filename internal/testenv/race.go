//go:build race

package testenv

// Race is whether the tests were built with the race detector.
const Race = true
