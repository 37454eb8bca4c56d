// Package state declares Weir's keyed state API: state descriptors, their
// time-to-live configuration and the interfaces of the state primitives
// (value, list, map, reducing, aggregating). It has no implementation; the
// state backends live in internal packages.
//
// Semantics follow Flink's heap state backend. Where Flink returns null for
// an absent value, Weir returns the zero value and false.
//
// Every state is scoped to the operator's current key (and, for window
// state, the current window). A state object is used by the single goroutine
// that runs its operator and is not safe for concurrent use.
package state

import "iter"

// ValueState holds a single value per key.
type ValueState[V any] interface {
	// Value returns the stored value, or the zero value and false when no
	// value is stored (or it has expired).
	Value() (V, bool)
	// Update stores v.
	Update(v V)
	// Clear removes the value.
	Clear()
}

// ListState holds a list of values per key, in insertion order.
type ListState[V any] interface {
	// Get returns a fresh copy of the list; it is empty (never nil) when no
	// list is stored. The caller may keep and modify it.
	Get() []V
	// All iterates over the list in insertion order. The state is read when
	// the iteration starts.
	All() iter.Seq[V]
	// Add appends v.
	Add(v V)
	// AddAll appends vs in order. An empty vs changes nothing.
	AddAll(vs []V)
	// Update replaces the list with a copy of vs. An empty vs clears the
	// state.
	Update(vs []V)
	// Clear removes the list.
	Clear()
}

// MapState holds a map per key. Iteration order is unspecified.
type MapState[K comparable, V any] interface {
	// Get returns the value stored under k, or the zero value and false.
	Get(k K) (V, bool)
	// Put stores v under k.
	Put(k K, v V)
	// PutAll stores every entry of m.
	PutAll(m map[K]V)
	// Remove removes the entry of k.
	Remove(k K)
	// Contains reports whether an entry of k is stored.
	Contains(k K) bool
	// All iterates over the entries. The map may be modified during the
	// iteration; as with a Go map, entries added meanwhile may or may not be
	// produced.
	All() iter.Seq2[K, V]
	// Keys iterates over the keys of the entries.
	Keys() iter.Seq[K]
	// Values iterates over the values of the entries.
	Values() iter.Seq[V]
	// IsEmpty reports whether the map has no entries.
	IsEmpty() bool
	// Clear removes all entries.
	Clear()
}

// ReducingState folds added values with a reduce function into a single
// value per key.
type ReducingState[V any] interface {
	// Get returns the folded value, or the zero value and false when nothing
	// has been added.
	Get() (V, bool)
	// Add folds v into the stored value as reduce(stored, v); the first value
	// is stored as is.
	Add(v V)
	// Clear removes the value.
	Clear()
}

// AggregatingState aggregates added values with an AggregateFunction into a
// single accumulator per key.
type AggregatingState[IN, OUT any] interface {
	// Get returns the result of the accumulator, or the zero value and false
	// when no accumulator exists.
	Get() (OUT, bool)
	// Add adds v to the accumulator, creating it first if there is none.
	Add(v IN)
	// Clear removes the accumulator.
	Clear()
}
