package window

import (
	"iter"
	"reflect"
	"strconv"

	"github.com/weirstream/weir/state"
)

// StateStore is keyed state scoped to the current key and, for trigger
// state and a process-window function's window state, the current window
// (TriggerContext.PartitionedState, ProcessWindowContext.WindowState and
// GlobalState). The window operator implements it; read it with
// GetValueState, GetListState and GetReducingState.
//
// A StateStore holds each state's values as any, described by an
// ErasedState; the typed getters wrap what it returns. Implement it only
// to drive a trigger or window function outside the window operator (in
// a test, say).
type StateStore interface {
	// Int64Reducing returns an int64 reducing state without boxing (the
	// built-in triggers' counters and fire times).
	Int64Reducing(d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error)
	// Erased returns a state.ValueState[any], state.ListState[any] or
	// state.ReducingState[any] for d, by d.Kind.
	Erased(d ErasedState) (any, error)
}

// StateKind is the primitive of an ErasedState.
type StateKind uint8

const (
	// ValueKind is a ValueState.
	ValueKind StateKind = iota + 1
	// ListKind is a ListState.
	ListKind
	// ReducingKind is a ReducingState.
	ReducingKind
)

// ErasedState describes a state whose values a StateStore holds as any.
type ErasedState struct {
	// Kind is the state primitive.
	Kind StateKind
	// Name identifies the state in its operator.
	Name string
	// TTL is the state's time-to-live configuration.
	TTL state.TTLConfig
	// Type is the value type; a name registered with another type fails.
	Type reflect.Type
	// Reduce is the reduce function of a reducing state.
	Reduce func(a, b any) any
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
	raw, err := store.Erased(ErasedState{Kind: ReducingKind, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V](),
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
	raw, err := store.Erased(ErasedState{Kind: ValueKind, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V]()})
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
	raw, err := store.Erased(ErasedState{Kind: ListKind, Name: d.Name, TTL: d.TTL, Type: reflect.TypeFor[V]()})
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
