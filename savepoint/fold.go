package savepoint

import (
	"iter"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// Reducing and aggregating state store one value per key (the folded
// value, the accumulator), as value state does; they are read and written
// through their own handles, whose fold functions are never called here:
// a reducing state's first value is stored as it is, and the aggregate
// function below stores the accumulator given.

// keep is the reduce function of reducing state read or written here: it
// is not called (values are read, or stored into an empty state).
func keep[V any](_, b V) V { return b }

// identity is an AggregateFunction whose accumulator is what is added.
type identity[ACC any] struct{}

func (identity[ACC]) CreateAccumulator() ACC { var zero ACC; return zero }
func (identity[ACC]) Add(v ACC, _ ACC) ACC   { return v }
func (identity[ACC]) GetResult(acc ACC) ACC  { return acc }
func (identity[ACC]) Merge(_, b ACC) ACC     { return b }

// ReadReducingState reads the reducing state name of operator uid (keys
// of type K, values of type V) into an iterator over the keys with a
// value and their folded values, in no particular order. opts and errors
// are those of ReadValueState.
func ReadReducingState[K comparable, V any](sp *Savepoint, uid, name string, opts ...state.Option) (iter.Seq2[K, V], error) {
	r, err := restoreKeyed[K](sp, uid, name)
	if err != nil {
		return nil, err
	}
	h, err := register(uid, func() (*istate.Reducing[K, void, V], error) {
		return istate.GetReducing[K, void, V](r.b, state.Reducing[V](name, keep[V], opts...))
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(K, V) bool) {
		for k := range r.keys(name) {
			if v, ok := h.Get(); ok && !yield(k, v) {
				return
			}
		}
	}, nil
}

// ReadAggregatingState reads the aggregating state name of operator uid
// (keys of type K, accumulators of type ACC, the job's aggregate
// function's accumulator type) into an iterator over the keys with an
// accumulator and their accumulators, in no particular order. opts and
// errors are those of ReadValueState.
func ReadAggregatingState[K comparable, ACC any](sp *Savepoint, uid, name string, opts ...state.Option) (iter.Seq2[K, ACC], error) {
	r, err := restoreKeyed[K](sp, uid, name)
	if err != nil {
		return nil, err
	}
	h, err := register(uid, func() (*istate.Aggregating[K, void, ACC, ACC, ACC], error) {
		return istate.GetAggregating[K, void, ACC, ACC, ACC](r.b, state.Aggregating[ACC, ACC, ACC](name, identity[ACC]{}, opts...))
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(K, ACC) bool) {
		for k := range r.keys(name) {
			if acc, ok := h.Get(); ok && !yield(k, acc) {
				return
			}
		}
	}, nil
}

// ReducingState is the reducing state name holding, for each key of
// values, its folded value (the last one if a key comes more than once),
// as a job's function declares it with state.Reducing[V](name, reduce,
// opts...); the job's reduce function folds the values it adds later.
func ReducingState[K comparable, V any](name string, values iter.Seq2[K, V], opts ...state.Option) KeyedState[K] {
	return KeyedState[K]{name: name, write: func(kb *keyedBuild[K]) error {
		h, err := istate.GetReducing[K, void, V](kb.b, state.Reducing[V](name, keep[V], opts...))
		if err != nil {
			return err
		}
		if values == nil {
			return nil
		}
		for k, v := range values {
			kb.setKey(k)
			h.Clear()
			h.Add(v)
		}
		return nil
	}}
}

// AggregatingState is the aggregating state name holding, for each key of
// accs, its accumulator (the last one if a key comes more than once), as
// a job's function declares it with state.Aggregating[IN, ACC,
// OUT](name, fn, opts...); the job's function adds to it later.
func AggregatingState[K comparable, ACC any](name string, accs iter.Seq2[K, ACC], opts ...state.Option) KeyedState[K] {
	return KeyedState[K]{name: name, write: func(kb *keyedBuild[K]) error {
		h, err := istate.GetAggregating[K, void, ACC, ACC, ACC](kb.b, state.Aggregating[ACC, ACC, ACC](name, identity[ACC]{}, opts...))
		if err != nil {
			return err
		}
		if accs == nil {
			return nil
		}
		for k, acc := range accs {
			kb.setKey(k)
			h.Clear()
			h.Add(acc)
		}
		return nil
	}}
}
