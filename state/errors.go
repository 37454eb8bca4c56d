package state

import (
	"errors"
	"fmt"
	"strings"
)

// ErrIncompatible is wrapped by every IncompatibleError: errors.Is(err,
// state.ErrIncompatible) tells a refused restore from other failures.
var ErrIncompatible = errors.New("incompatible state schema")

// IncompatibleError reports a state (or a key) whose schema, recorded in
// the checkpoint or savepoint a job restores, the job's codec cannot read:
// a field whose type changed, a changed key type, or a user codec version
// the codec does not migrate from. It is returned when the job is built
// (ExecuteAsync), before any record is processed, for every state the
// operators register in Open; a state registered later fails the job the
// same way when it is registered. The job is not restarted for it.
type IncompatibleError struct {
	// State names the state ("" when not known yet; the backend fills it).
	State string
	// What is the part of the state: "key", "namespace", "value", "list
	// element", "map key", "map value", "accumulator" or "" for a
	// top-level check.
	What string
	// Field is the path of the field that changed ("" for the whole
	// type), e.g. "Count" or "Inner.Items[2]".
	Field string
	// Old and New describe the recorded and the job's types.
	Old, New string
	// Reason says what changed.
	Reason string
	// Hint says how to migrate.
	Hint string
}

// Error says what was refused: the state, the part and field, the reason,
// both types and the hint.
func (e *IncompatibleError) Error() string {
	var b strings.Builder
	if e.State != "" {
		fmt.Fprintf(&b, "state %q: ", e.State)
	}
	if e.What != "" {
		b.WriteString(e.What)
		if e.Field != "" {
			b.WriteString(" field ")
			b.WriteString(e.Field)
		}
		b.WriteString(": ")
	} else if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Reason)
	if e.Old != "" || e.New != "" {
		fmt.Fprintf(&b, " (saved as %s; the job has %s)", e.Old, e.New)
	}
	if e.Hint != "" {
		b.WriteString(". ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrIncompatible) true.
func (e *IncompatibleError) Is(target error) bool { return target == ErrIncompatible }
