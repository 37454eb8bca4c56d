package weir

import (
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/joberr"
)

// OperatorError is a failure of one operator's subtask: an error returned
// by a user function, a record it could not handle, or a panic (then Stack
// holds the goroutine's stack). Find it in the error a job returns with
// errors.As:
//
//	var oe *weir.OperatorError
//	if errors.As(err, &oe) {
//		log.Printf("%s (subtask %d) failed: %v", oe.Operator, oe.Subtask, oe.Err)
//	}
type OperatorError struct {
	// Operator is the operator's name as the job graph shows it.
	Operator string
	// Subtask is the index of the failed subtask.
	Subtask int
	// Err is the cause: the user function's error or the panic's value.
	Err error
	// Stack is the stack of the panic, "" if the failure was no panic.
	Stack string
}

// Error returns the message the job's log shows for the failure.
func (e *OperatorError) Error() string { return (*engine.OperatorError)(e).Error() }

// Unwrap returns the cause.
func (e *OperatorError) Unwrap() error { return e.Err }

// publicError returns err as the job's callers see it: unchanged unless an
// operator's failure is in its chain, which errors.As then finds as a
// public *OperatorError (internal/joberr).
func publicError(err error) error {
	return joberr.Public(err, func(oe *engine.OperatorError) *OperatorError {
		return &OperatorError{Operator: oe.Operator, Subtask: oe.Subtask, Err: oe.Err, Stack: oe.Stack}
	})
}
