// Package invariants switches on the engine's costly self-checks, as
// Pebble's build tag of the same name does. Built with -tags invariants,
// Enabled is true and the checks guarded by it run, panicking with a
// message that names the broken invariant; without the tag Enabled is a
// false constant and the guarded code compiles away.
//
// The test suite runs once with the tag (scripts/test.sh). The checks:
//   - internal/timer: the queue's heap, buckets, index and counts agree
//     after every change (in full while the queue is small, else every
//     1024th change);
//   - internal/engine: an output's watermarks never go backwards;
//   - internal/windowing: after a merge, a key's in-flight window set holds
//     the result, and its windows and its state windows are each distinct;
//   - internal/state: a table's entry count and cleanup slots match its
//     maps when it is snapshotted.
package invariants

import "fmt"

// Violated panics with a message naming a broken invariant. Call it
// inside an `if Enabled` block.
func Violated(format string, args ...any) {
	panic(violation{msg: fmt.Sprintf(format, args...)})
}

// violation is the panic value of Violated.
type violation struct{ msg string }

func (v violation) String() string { return "invariant violated: " + v.msg }

func (v violation) Error() string { return v.String() }
