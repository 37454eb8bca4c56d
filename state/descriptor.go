package state

import (
	"errors"
	"fmt"
	"iter"
)

// Option configures a state descriptor.
type Option func(*options)

type options struct {
	ttl      TTLConfig
	codec    any // Codec[T] of the stored values, from WithCodec
	keyCodec any // Codec[T] of map keys, from WithKeyCodec
}

// WithTTL sets the time-to-live configuration of the state.
func WithTTL(c TTLConfig) Option {
	return func(o *options) { o.ttl = c }
}

func applyOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

func validate(kind, name string, ttl TTLConfig, codecs ...any) error {
	if name == "" {
		return fmt.Errorf("%s state descriptor: name must not be empty", kind)
	}
	if err := ttl.Validate(); err != nil {
		return fmt.Errorf("state %q: %w", name, err)
	}
	for _, c := range codecs {
		if err := codecError(c); err != nil {
			return fmt.Errorf("state %q: %w", name, err)
		}
	}
	return nil
}

// ValueDescriptor describes a ValueState holding one V per key and namespace.
type ValueDescriptor[V any] struct {
	// Name identifies the state within its operator.
	Name string
	// TTL is the time-to-live configuration; the zero value means no TTL.
	TTL TTLConfig
	// Codec serializes the value in snapshots; nil picks one from the type
	// (see Codec).
	Codec Codec[V]
}

// Value returns a descriptor of a ValueState named name.
func Value[V any](name string, opts ...Option) ValueDescriptor[V] {
	o := applyOptions(opts)
	return ValueDescriptor[V]{Name: name, TTL: o.ttl, Codec: codecOf[V](o.codec, "WithCodec")}
}

// Validate checks that the name is not empty, the TTL config is valid and
// no codec of another type was given.
func (d ValueDescriptor[V]) Validate() error { return validate("value", d.Name, d.TTL, d.Codec) }

// ListDescriptor describes a ListState holding a list of V per key and
// namespace.
type ListDescriptor[V any] struct {
	// Name identifies the state within its operator.
	Name string
	// TTL is the time-to-live configuration; the zero value means no TTL.
	// TTL applies to each element separately.
	TTL TTLConfig
	// Codec serializes the elements in snapshots; nil picks one from the type
	// (see Codec).
	Codec Codec[V]
}

// List returns a descriptor of a ListState named name.
func List[V any](name string, opts ...Option) ListDescriptor[V] {
	o := applyOptions(opts)
	return ListDescriptor[V]{Name: name, TTL: o.ttl, Codec: codecOf[V](o.codec, "WithCodec")}
}

// Validate checks that the name is not empty, the TTL config is valid and
// no codec of another type was given.
func (d ListDescriptor[V]) Validate() error { return validate("list", d.Name, d.TTL, d.Codec) }

// MapDescriptor describes a MapState holding a map from K to V per key and
// namespace.
type MapDescriptor[K comparable, V any] struct {
	// Name identifies the state within its operator.
	Name string
	// TTL is the time-to-live configuration; the zero value means no TTL.
	// TTL applies to each map entry separately.
	TTL TTLConfig
	// Codec serializes the values in snapshots; nil picks one from the type
	// (see Codec).
	Codec Codec[V]
	// KeyCodec serializes the map keys in snapshots; nil picks one from the
	// type.
	KeyCodec Codec[K]
}

// Map returns a descriptor of a MapState named name.
func Map[K comparable, V any](name string, opts ...Option) MapDescriptor[K, V] {
	o := applyOptions(opts)
	return MapDescriptor[K, V]{Name: name, TTL: o.ttl,
		Codec: codecOf[V](o.codec, "WithCodec"), KeyCodec: codecOf[K](o.keyCodec, "WithKeyCodec")}
}

// Validate checks that the name is not empty, the TTL config is valid and
// no codec of another type was given.
func (d MapDescriptor[K, V]) Validate() error {
	return validate("map", d.Name, d.TTL, d.Codec, d.KeyCodec)
}

// ReducingDescriptor describes a ReducingState that folds added values with
// Reduce.
type ReducingDescriptor[V any] struct {
	// Name identifies the state within its operator.
	Name string
	// TTL is the time-to-live configuration; the zero value means no TTL.
	TTL TTLConfig
	// Codec serializes the value in snapshots; nil picks one from the type
	// (see Codec).
	Codec Codec[V]
	// Reduce combines the stored value a with a newly added value b.
	Reduce func(a, b V) V
}

// Reducing returns a descriptor of a ReducingState named name that folds
// values with reduce.
func Reducing[V any](name string, reduce func(a, b V) V, opts ...Option) ReducingDescriptor[V] {
	o := applyOptions(opts)
	return ReducingDescriptor[V]{Name: name, TTL: o.ttl, Reduce: reduce, Codec: codecOf[V](o.codec, "WithCodec")}
}

// Validate checks the name, the TTL config, the codec and that Reduce is set.
func (d ReducingDescriptor[V]) Validate() error {
	if err := validate("reducing", d.Name, d.TTL, d.Codec); err != nil {
		return err
	}
	if d.Reduce == nil {
		return fmt.Errorf("state %q: %w", d.Name, errors.New("reduce function must not be nil"))
	}
	return nil
}

// AggregateFunction aggregates input values of type IN into an accumulator
// of type ACC and produces a result of type OUT, as Flink's AggregateFunction.
type AggregateFunction[IN, ACC, OUT any] interface {
	// CreateAccumulator returns a new, empty accumulator.
	CreateAccumulator() ACC
	// Add adds v to acc and returns the updated accumulator.
	Add(v IN, acc ACC) ACC
	// GetResult returns the result of the aggregation in acc.
	GetResult(acc ACC) OUT
	// Merge merges two accumulators and returns the merged one.
	Merge(a, b ACC) ACC
}

// AggregatingDescriptor describes an AggregatingState that aggregates values
// with Function.
type AggregatingDescriptor[IN, ACC, OUT any] struct {
	// Name identifies the state within its operator.
	Name string
	// TTL is the time-to-live configuration; the zero value means no TTL.
	TTL TTLConfig
	// Codec serializes the accumulator in snapshots; nil picks one from
	// the type (see Codec).
	Codec Codec[ACC]
	// Function is the aggregate function.
	Function AggregateFunction[IN, ACC, OUT]
}

// Aggregating returns a descriptor of an AggregatingState named name that
// aggregates with fn.
func Aggregating[IN, ACC, OUT any](name string, fn AggregateFunction[IN, ACC, OUT], opts ...Option) AggregatingDescriptor[IN, ACC, OUT] {
	o := applyOptions(opts)
	return AggregatingDescriptor[IN, ACC, OUT]{Name: name, TTL: o.ttl, Function: fn, Codec: codecOf[ACC](o.codec, "WithCodec")}
}

// Validate checks the name, the TTL config, the codec and that Function is set.
func (d AggregatingDescriptor[IN, ACC, OUT]) Validate() error {
	if err := validate("aggregating", d.Name, d.TTL, d.Codec); err != nil {
		return err
	}
	if d.Function == nil {
		return fmt.Errorf("state %q: %w", d.Name, errors.New("aggregate function must not be nil"))
	}
	return nil
}

// StateName returns the descriptor's name.
func (d MapDescriptor[K, V]) StateName() string { return d.Name }

// Named is a descriptor that has a name; broadcast streams declare their
// broadcast states with map descriptors.
type Named interface {
	StateName() string
}

// BroadcastState is the read-write broadcast state of one subtask: a map,
// given to the broadcast side of a broadcast-connected operator. Every
// subtask must change its copy in the same way (no communication between
// them).
type BroadcastState[K comparable, V any] interface {
	ReadOnlyBroadcastState[K, V]
	Put(k K, v V)
	Remove(k K)
	Clear()
}

// ReadOnlyBroadcastState is the broadcast state as the element side sees it.
type ReadOnlyBroadcastState[K comparable, V any] interface {
	Get(k K) (V, bool)
	Contains(k K) bool
	All() iter.Seq2[K, V]
	Len() int
}
