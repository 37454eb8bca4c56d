// Package winstate is the bridge between the typed state getters of
// package window (GetValueState, GetListState, GetReducingState) and the
// window operator's state store: states whose values are held as any,
// described by kind, name, TTL and value type.
package winstate

import (
	"reflect"

	"github.com/weirstream/weir/state"
)

// Kind is the primitive of a Descriptor.
type Kind uint8

const (
	// Value is a ValueState.
	Value Kind = iota + 1
	// List is a ListState.
	List
	// Reducing is a ReducingState.
	Reducing
)

// Descriptor describes a state whose values are held as any.
type Descriptor struct {
	// Kind is the state primitive.
	Kind Kind
	// Name identifies the state in its operator.
	Name string
	// TTL is the state's time-to-live configuration.
	TTL state.TTLConfig
	// Type is the value type; a name registered with another type fails.
	Type reflect.Type
	// Reduce is the reduce function of a reducing state.
	Reduce func(a, b any) any
}

// Store is what the window operator implements behind window.StateStore.
type Store interface {
	// Int64Reducing returns an int64 reducing state without boxing (the
	// built-in triggers' counters and fire times).
	Int64Reducing(d state.ReducingDescriptor[int64]) (state.ReducingState[int64], error)
	// Erased returns a state.ValueState[any], state.ListState[any] or
	// state.ReducingState[any] for d.
	Erased(d Descriptor) (any, error)
}
