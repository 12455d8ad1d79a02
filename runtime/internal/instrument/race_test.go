//go:build race

package instrument

// raceEnabled: under the race detector wazero's compiler is slow enough
// that the long tests run their -short variants.
const raceEnabled = true
