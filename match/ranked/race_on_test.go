//go:build race

package ranked

// raceEnabled is set when the tests run under the race detector (5-40 times
// slower): the single-goroutine property loops take a deterministic sample
// there, and scripts/test.sh runs them in full without -race.
const raceEnabled = true
