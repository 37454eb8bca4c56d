package windowing

import (
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Contents is the window-contents state of an operator: an appending state
// per window namespace that yields V (the reduced value, the aggregate's
// result, or the list of elements).
type Contents[IN, V any, W comparable] interface {
	// SetNamespace selects the window (state window, when merging).
	SetNamespace(ns W)
	// Add adds the element *v with its timestamp (copying it; the pointer
	// is not kept).
	Add(v *IN, ts int64)
	// Exists reports whether the window has contents (an entry, possibly
	// empty after a purge).
	Exists() bool
	// Get returns the contents, or false when the window has none.
	Get() (V, bool)
	// Clear removes the contents.
	Clear()
	// MergeNamespaces merges the sources' contents into target's.
	MergeNamespaces(target W, sources []W)
}

// Reducing is Contents over a reducing state.
type Reducing[K, W comparable, T any] struct{ h *istate.Reducing[K, W, T] }

// NewReducing registers the reducing contents state.
func NewReducing[K, W comparable, T any](b *istate.Backend[K], reduce func(a, b T) T) (*Reducing[K, W, T], error) {
	h, err := istate.GetReducing[K, W, T](b, state.Reducing("window-contents", reduce))
	return &Reducing[K, W, T]{h}, err
}

// Exists implements Contents.
func (r *Reducing[K, W, T]) Exists() bool { return r.h.Exists() }

// SetNamespace implements Contents.
func (r *Reducing[K, W, T]) SetNamespace(ns W) { r.h.SetNamespace(ns) }

// Add implements Contents.
func (r *Reducing[K, W, T]) Add(v *T, _ int64) { r.h.Add(*v) }

// Get implements Contents.
func (r *Reducing[K, W, T]) Get() (T, bool) { return r.h.Get() }

// Clear implements Contents.
func (r *Reducing[K, W, T]) Clear() { r.h.Clear() }

// MergeNamespaces implements Contents.
func (r *Reducing[K, W, T]) MergeNamespaces(t W, s []W) { r.h.MergeNamespaces(t, s) }

// Aggregating is Contents over an aggregating state.
type Aggregating[K, W comparable, IN, ACC, OUT any] struct {
	h *istate.Aggregating[K, W, IN, ACC, OUT]
}

// NewAggregating registers the aggregating contents state.
func NewAggregating[K, W comparable, IN, ACC, OUT any](b *istate.Backend[K], fn state.AggregateFunction[IN, ACC, OUT]) (*Aggregating[K, W, IN, ACC, OUT], error) {
	h, err := istate.GetAggregating[K, W, IN, ACC, OUT](b, state.Aggregating("window-contents", fn))
	return &Aggregating[K, W, IN, ACC, OUT]{h}, err
}

// Exists implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) Exists() bool { return a.h.Exists() }

// SetNamespace implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) SetNamespace(ns W) { a.h.SetNamespace(ns) }

// Add implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) Add(v *IN, _ int64) { a.h.Add(*v) }

// Get implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) Get() (OUT, bool) { return a.h.Get() }

// Clear implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) Clear() { a.h.Clear() }

// MergeNamespaces implements Contents.
func (a *Aggregating[K, W, IN, ACC, OUT]) MergeNamespaces(t W, s []W) { a.h.MergeNamespaces(t, s) }

// List is Contents keeping every element, in arrival order.
type List[K, W comparable, T any] struct{ h *istate.List[K, W, T] }

// NewList registers the list contents state.
func NewList[K, W comparable, T any](b *istate.Backend[K]) (*List[K, W, T], error) {
	h, err := istate.GetList[K, W, T](b, state.List[T]("window-contents"))
	return &List[K, W, T]{h}, err
}

// Exists implements Contents.
func (l *List[K, W, T]) Exists() bool { return l.h.Exists() }

// SetNamespace implements Contents.
func (l *List[K, W, T]) SetNamespace(ns W) { l.h.SetNamespace(ns) }

// Add implements Contents.
func (l *List[K, W, T]) Add(v *T, _ int64) { l.h.Add(*v) }

// Get implements Contents: a copy of the list, false when empty.
func (l *List[K, W, T]) Get() ([]T, bool) {
	v := l.h.Get()
	return v, len(v) > 0
}

// Clear implements Contents.
func (l *List[K, W, T]) Clear() { l.h.Clear() }

// MergeNamespaces implements Contents.
func (l *List[K, W, T]) MergeNamespaces(t W, s []W) { l.h.MergeNamespaces(t, s) }

// TimestampedList is Contents keeping every element with its timestamp,
// for evicting windows.
type TimestampedList[K, W comparable, T any] struct {
	h *istate.List[K, W, window.TimestampedValue[T]]
}

// NewTimestampedList registers the evicting contents state.
func NewTimestampedList[K, W comparable, T any](b *istate.Backend[K]) (*TimestampedList[K, W, T], error) {
	h, err := istate.GetList[K, W, window.TimestampedValue[T]](b, state.List[window.TimestampedValue[T]]("window-contents"))
	return &TimestampedList[K, W, T]{h}, err
}

// Exists implements Contents.
func (l *TimestampedList[K, W, T]) Exists() bool { return l.h.Exists() }

// SetNamespace implements Contents.
func (l *TimestampedList[K, W, T]) SetNamespace(ns W) { l.h.SetNamespace(ns) }

// Add implements Contents.
func (l *TimestampedList[K, W, T]) Add(v *T, ts int64) {
	l.h.Add(window.TimestampedValue[T]{Value: *v, Timestamp: ts})
}

// Get implements Contents.
func (l *TimestampedList[K, W, T]) Get() ([]window.TimestampedValue[T], bool) {
	v := l.h.Get()
	return v, len(v) > 0
}

// Update replaces the contents of the current namespace (empty: cleared).
func (l *TimestampedList[K, W, T]) Update(vs []window.TimestampedValue[T]) { l.h.Update(vs) }

// Clear implements Contents.
func (l *TimestampedList[K, W, T]) Clear() { l.h.Clear() }

// MergeNamespaces implements Contents.
func (l *TimestampedList[K, W, T]) MergeNamespaces(t W, s []W) { l.h.MergeNamespaces(t, s) }
