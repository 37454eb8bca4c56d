//go:build !race

package weir_test

// raceEnabled is set when the tests run with the race detector.
const raceEnabled = false
