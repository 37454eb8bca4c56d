package savepoint

import (
	"errors"
	"fmt"

	istate "github.com/weirstream/weir/internal/state"
)

// ErrIncompatible is wrapped by every error that refuses a type because a
// state's (or key's) recorded schema cannot be read as it: errors.Is(err,
// ErrIncompatible). It is the error a job's restore reports in the same
// case.
var ErrIncompatible = istate.ErrIncompatible

// IncompatibleError reports a state or key whose schema, recorded in the
// savepoint, cannot be read as the Go type asked for, by the rules of a
// job's restore (see the package documentation). It wraps the engine's
// error, and through it ErrIncompatible.
type IncompatibleError struct {
	// Operator is the UID of the operator.
	Operator string
	// State names the state ("" for the key).
	State string
	// What is the part of the state: "key", "namespace", "value", "list
	// element", "map key", "map value", or "" for the state as a whole
	// (another kind of state).
	What string
	// Field is the path of the field that changed ("" for the whole
	// type).
	Field string
	// Old and New describe the recorded type and the one asked for.
	Old, New string
	// Reason says what changed; Hint how to migrate.
	Reason, Hint string

	err error
}

// Error names the operator and says what the engine refused.
func (e *IncompatibleError) Error() string { return fmt.Sprintf("operator %q: %v", e.Operator, e.err) }

// Unwrap returns the engine's error.
func (e *IncompatibleError) Unwrap() error { return e.err }

// operatorError returns err of operator uid, as an *IncompatibleError if
// it is the engine's one.
func operatorError(uid string, err error) error {
	var ie *istate.IncompatibleError
	if errors.As(err, &ie) {
		return &IncompatibleError{Operator: uid, State: ie.State, What: ie.What, Field: ie.Field, Old: ie.Old, New: ie.New,
			Reason: ie.Reason, Hint: ie.Hint, err: ie}
	}
	return fmt.Errorf("operator %q: %w", uid, err)
}

// recoverTo turns a panic (of a user codec, say) into an error in *err.
func recoverTo(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: panic: %v", what, r)
	}
}

// register registers a state (decoding its restored entries) with get and
// returns its handle, with the errors and panics of operator uid.
func register[H any](uid string, get func() (H, error)) (h H, err error) {
	defer recoverTo(&err, fmt.Sprintf("operator %q: decoding the state", uid))
	if h, err = get(); err != nil {
		return h, operatorError(uid, err)
	}
	return h, nil
}
