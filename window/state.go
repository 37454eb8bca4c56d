package window

import (
	"iter"
	"reflect"
	"strconv"

	"github.com/weirstream/weir/internal/winstate"
	"github.com/weirstream/weir/state"
)

// StateStore is keyed state scoped to the current key and, for trigger
// state and a process-window function's window state, the current window
// (TriggerContext.PartitionedState, ProcessWindowContext.WindowState and
// GlobalState). The window operator implements it; read it with
// GetValueState, GetListState and GetReducingState.
type StateStore interface {
	winstate.Store
}

// GetReducingState returns the reducing state d of store, for the store's
// current key (and window).
func GetReducingState[V any](store StateStore, d state.ReducingDescriptor[V]) (state.ReducingState[V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if d64, ok := any(d).(state.ReducingDescriptor[int64]); ok {
		s, err := store.Int64Reducing(d64)
		if err != nil {
			return nil, err
		}
		return any(s).(state.ReducingState[V]), nil
	}
	reduce := d.Reduce
	raw, err := store.Erased(winstate.Descriptor{Kind: winstate.Reducing, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V](),
		Reduce: func(a, b any) any { return reduce(a.(V), b.(V)) }})
	if err != nil {
		return nil, err
	}
	return erasedReducing[V]{raw.(state.ReducingState[any])}, nil
}

// GetValueState returns the value state d of store.
func GetValueState[V any](store StateStore, d state.ValueDescriptor[V]) (state.ValueState[V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	raw, err := store.Erased(winstate.Descriptor{Kind: winstate.Value, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V]()})
	if err != nil {
		return nil, err
	}
	return erasedValue[V]{raw.(state.ValueState[any])}, nil
}

// GetListState returns the list state d of store.
func GetListState[V any](store StateStore, d state.ListDescriptor[V]) (state.ListState[V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	raw, err := store.Erased(winstate.Descriptor{Kind: winstate.List, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V]()})
	if err != nil {
		return nil, err
	}
	return erasedList[V]{raw.(state.ListState[any])}, nil
}

type erasedReducing[V any] struct{ s state.ReducingState[any] }

func (e erasedReducing[V]) Get() (V, bool) {
	v, ok := e.s.Get()
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}
func (e erasedReducing[V]) Add(v V) { e.s.Add(v) }
func (e erasedReducing[V]) Clear()  { e.s.Clear() }

type erasedValue[V any] struct{ s state.ValueState[any] }

func (e erasedValue[V]) Value() (V, bool) {
	v, ok := e.s.Value()
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}
func (e erasedValue[V]) Update(v V) { e.s.Update(v) }
func (e erasedValue[V]) Clear()     { e.s.Clear() }

type erasedList[V any] struct{ s state.ListState[any] }

func (e erasedList[V]) Get() []V {
	raw := e.s.Get()
	out := make([]V, len(raw))
	for i, v := range raw {
		out[i] = v.(V)
	}
	return out
}
func (e erasedList[V]) All() iter.Seq[V] {
	return func(yield func(V) bool) {
		for v := range e.s.All() {
			if !yield(v.(V)) {
				return
			}
		}
	}
}
func (e erasedList[V]) Add(v V) { e.s.Add(v) }
func (e erasedList[V]) AddAll(vs []V) {
	for _, v := range vs {
		e.s.Add(v)
	}
}
func (e erasedList[V]) Update(vs []V) {
	raw := make([]any, len(vs))
	for i, v := range vs {
		raw[i] = v
	}
	e.s.Update(raw)
}
func (e erasedList[V]) Clear() { e.s.Clear() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
