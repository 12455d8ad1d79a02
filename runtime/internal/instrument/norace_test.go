//go:build !race

package instrument

const raceEnabled = false
