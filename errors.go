package weir

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/runtime"
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
func (e *OperatorError) Error() string {
	if e.Stack != "" {
		return fmt.Sprintf("operator %q (subtask %d) panicked: %v\n%s", e.Operator, e.Subtask, e.Err, e.Stack)
	}
	return fmt.Sprintf("operator %q (subtask %d): %v", e.Operator, e.Subtask, e.Err)
}

// Unwrap returns the cause.
func (e *OperatorError) Unwrap() error { return e.Err }

// jobError carries a job's failure out of the engine: it reads as the
// failure itself and lets errors.As find the engine's operator failure as
// a public *OperatorError.
type jobError struct{ err error }

func (e *jobError) Error() string { return e.err.Error() }

func (e *jobError) Unwrap() error { return e.err }

func (e *jobError) As(target any) bool {
	p, ok := target.(**OperatorError)
	if !ok {
		return false
	}
	var oe *runtime.OperatorError
	if !errors.As(e.err, &oe) {
		return false
	}
	*p = &OperatorError{Operator: oe.Operator, Subtask: oe.Subtask, Err: oe.Err, Stack: oe.Stack}
	return true
}

// publicError returns err as the job's callers see it: unchanged unless an
// operator's failure is in its chain.
func publicError(err error) error {
	var oe *runtime.OperatorError
	if err == nil || !errors.As(err, &oe) {
		return err
	}
	var je *jobError
	if errors.As(err, &je) {
		return err
	}
	return &jobError{err}
}
