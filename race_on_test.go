//go:build race

package weir_test

// raceEnabled is set when the tests run with the race detector: the
// browser test then skips (scripts/test.sh runs it in its first pass).
const raceEnabled = true
