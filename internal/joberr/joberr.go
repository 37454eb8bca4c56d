// Package joberr carries a job's failure out of the engine to the root
// package's callers: it reads as the failure itself and lets errors.As
// find the engine's operator failure as the public operator error P.
package joberr

import (
	"errors"

	"github.com/weirstream/weir/internal/engine"
)

// jobError is a job's failure err; conv makes the public form of an
// operator's failure in its chain.
type jobError[P any] struct {
	err  error
	conv func(*engine.OperatorError) P
}

func (e *jobError[P]) Error() string { return e.err.Error() }

func (e *jobError[P]) Unwrap() error { return e.err }

func (e *jobError[P]) As(target any) bool {
	p, ok := target.(*P)
	if !ok {
		return false
	}
	var oe *engine.OperatorError
	if !errors.As(e.err, &oe) {
		return false
	}
	*p = e.conv(oe)
	return true
}

// Public returns err as the job's callers see it: unchanged unless an
// operator's failure is in its chain, then wrapped so that errors.As finds
// it as conv makes it.
func Public[P any](err error, conv func(*engine.OperatorError) P) error {
	var oe *engine.OperatorError
	if err == nil || !errors.As(err, &oe) {
		return err
	}
	var je *jobError[P]
	if errors.As(err, &je) {
		return err
	}
	return &jobError[P]{err, conv}
}
