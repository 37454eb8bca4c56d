// Package runsrc lets this module's connectors hand weir.FromSource a
// source written against the runtime's own types (internal/textio): weir
// finds it through RuntimeSource and runs it as it is, with no adapter in
// between.
package runsrc

import (
	"context"
	"errors"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/runtime"
)

// Source is a weir.Source that carries a runtime source and the error its
// settings were found to have when it was made (nil: none); the job
// refuses it when built (weir.Validator).
type Source[T any] struct {
	src runtime.Source[T]
	err error
}

// New wraps src; err, if not nil, fails the job when it is built.
func New[T any](src runtime.Source[T], err error) Source[T] { return Source[T]{src, err} }

// RuntimeSource returns the runtime source weir runs.
func (s Source[T]) RuntimeSource() runtime.Source[T] { return s.src }

// Validate implements weir.Validator.
func (s Source[T]) Validate(context.Context) error { return s.err }

var errUnwrapped = errors.New("runsrc: a runtime source runs only through weir.FromSource")

// Splits implements weir.Source; weir runs RuntimeSource instead.
func (s Source[T]) Splits(int) ([]weir.Split, error) { return nil, errUnwrapped }

// Reader implements weir.Source; weir runs RuntimeSource instead.
func (s Source[T]) Reader(weir.Split) (weir.SplitReader[T], error) { return nil, errUnwrapped }
