package windowing

import (
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/window"
)

// Parts are the parts of a windowed stream as the job author set them.
type Parts[W window.Window] struct {
	Assigner window.Assigner[W]
	// AssignerNil tells that Assigner is nil or holds a nil pointer.
	AssignerNil bool
	// Trigger and Evictor are nil unless set.
	Trigger window.Trigger
	Evictor window.Evictor
	// Errs are the errors of the stream's settings, reported first; they
	// keep the assigner's default trigger out. NilFn tells that the
	// window function is nil.
	Errs  []error
	NilFn bool
}

// Check validates the parts of a windowed stream of T as the builder
// does, calling fail with each error and warn with each truncated setting.
// It returns the trigger in effect (the assigner's default if none was
// set), whether the assigner merges windows and whether it is in event
// time.
func Check[T any, W window.Window](p Parts[W], fail func(error), warn func(string)) (trigger window.Trigger, merging, eventTime bool) {
	for _, err := range p.Errs {
		fail(err)
	}
	if p.NilFn {
		fail(fmt.Errorf("window function is nil"))
	}
	trigger = p.Trigger
	_, merging = p.Assigner.(window.MergingAssigner[W])
	if p.AssignerNil {
		fail(fmt.Errorf("window assigner is nil"))
	} else {
		eventTime = p.Assigner.IsEventTime()
		if err := p.Assigner.Validate(); err != nil {
			fail(err)
		}
		if trigger == nil && len(p.Errs) == 0 {
			trigger = p.Assigner.DefaultTrigger()
		}
		if e, ok := p.Assigner.(interface{ ElementType() reflect.Type }); ok {
			if _, ok := p.Assigner.(window.ElementAssigner[T, W]); !ok {
				fail(fmt.Errorf("the assigner reads elements of type %s, the stream carries %s", e.ElementType(), reflect.TypeFor[T]()))
			}
		}
	}
	for _, x := range []any{p.Assigner, p.Trigger, p.Evictor} {
		for _, s := range window.Truncated(x) {
			warn(s)
		}
	}
	if trigger != nil {
		if err := validatePart(trigger); err != nil {
			fail(err)
		} else if merging && !trigger.CanMerge() {
			fail(fmt.Errorf("a merging window assigner cannot be used with a trigger that does not support merging (%v)", trigger))
		}
	}
	if p.Evictor != nil {
		if err := validatePart(p.Evictor); err != nil {
			fail(err)
		}
	}
	return trigger, merging, eventTime
}

// validatePart returns a trigger's or evictor's own validation error.
func validatePart(v any) error {
	if v, ok := v.(window.Validator); ok {
		return v.Validate()
	}
	return nil
}

// LateOutput returns what receives the late elements of a window operator
// whose late side output is port (nil: nobody reads it); a failure to
// emit is kept in *sideErr unless it already holds one.
func LateOutput[T any](port engine.OutputPort, sideErr *error) func(v T, ts int64) {
	if side, ok := port.(*engine.Output[T]); ok {
		return func(v T, ts int64) { side.Collect(v, ts) }
	} else if port != nil {
		return func(v T, ts int64) {
			if err := port.EmitAny(v, ts); err != nil && *sideErr == nil {
				*sideErr = err
			}
		}
	}
	return func(T, int64) {}
}

// CountErrs are the errors of a count window of size and slides (the
// root's CountWindow).
func CountErrs(size int64, slide []int64) []error {
	var errs []error
	if size <= 0 {
		errs = append(errs, fmt.Errorf("count window size must be positive, got %d", size))
	}
	if len(slide) == 1 && slide[0] <= 0 {
		errs = append(errs, fmt.Errorf("count window slide must be positive, got %d", slide[0]))
	} else if len(slide) > 1 {
		errs = append(errs, fmt.Errorf("CountWindow takes a size and at most one slide, got %d slides", len(slide)))
	}
	return errs
}

// Cross calls fn for every (left, right) pair, the left elements outside,
// the right ones inside (a window join's firing), until fn fails.
func Cross[A, B, C any](ls []A, rs []B, out C, fn func(a A, b B, out C) error) error {
	for _, a := range ls {
		for _, b := range rs {
			if err := fn(a, b, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// Split splits the elements of a window join or coGroup (the root's
// Tagged) into the left and the right ones, in arrival order; parts tells
// an element's side and values.
func Split[E, A, B any](elems []E, parts func(E) (isLeft bool, a A, b B)) ([]A, []B) {
	var ls []A
	var rs []B
	for _, e := range elems {
		if isLeft, a, b := parts(e); isLeft {
			ls = append(ls, a)
		} else {
			rs = append(rs, b)
		}
	}
	return ls, rs
}
