package weir

import (
	"cmp"
	"fmt"

	"github.com/weirstream/weir/internal/rolling"
	"github.com/weirstream/weir/state"
)

// Number is the constraint of Sum's field: any integer or floating-point
// type (integers wrap around on overflow, as Java's do).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// RollingReduce combines each record with its key's running value, on a
// keyed stream without a window (Flink's KeyedStream.reduce; the operator
// is named "Keyed Reduce"): the first record of a key is stored and
// emitted as it is, every later one becomes f(running, record), which is
// stored and emitted with the record's timestamp, one output per input.
//
// The running value is keyed state ("_op_state", as Flink's
// StreamGroupedReduceOperator): it lives in the job's state backend, is
// part of every checkpoint and savepoint, and moves with its key group
// when the job is restored at another parallelism. Sum, Min, Max, MinBy
// and MaxBy are rolling reductions of one field, read with a getter and
// written with a setter:
//
//	totals := weir.Sum(weir.KeyBy(orders, byUser),
//		func(o Order) float64 { return o.Amount },
//		func(o *Order, v float64) { o.Amount = v })
func RollingReduce[K comparable, T any](ks KeyedStream[K, T], f func(running, v T) T) DataStream[T] {
	if f == nil {
		ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Keyed Reduce", nilFnError("reduce function")))
	}
	return rollingOp(ks, "Keyed Reduce", f)
}

// Sum emits, for each record, its key's running sum of a field: the
// first record of the key with the field set to the sum of the key's
// records so far (Flink's KeyedStream.sum: the other fields are the
// first record's, not the latest's). get reads the field, set writes it.
func Sum[K comparable, T any, F Number](ks KeyedStream[K, T], get func(T) F, set func(*T, F)) DataStream[T] {
	if get == nil || set == nil {
		ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Keyed Aggregation", nilFnError("sum field getter or setter")))
	}
	return rollingOp(ks, "Keyed Aggregation", rolling.Sum(get, set))
}

// Min emits, for each record, the first record of its key with the field
// set to the smallest value the key has seen (Flink's KeyedStream.min:
// only the field changes; use MinBy for the whole record holding the
// minimum). Values compare as Java's compareTo does for Flink's fields:
// cmp.Compare, except that NaN is larger than every other float (and
// equal to itself); -0.0 and 0.0 compare equal.
func Min[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, set func(*T, F)) DataStream[T] {
	return extremeField(ks, get, set, -1)
}

// Max is Min for the largest value (Flink's KeyedStream.max).
func Max[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, set func(*T, F)) DataStream[T] {
	return extremeField(ks, get, set, 1)
}

// ByOption configures MinBy and MaxBy.
type ByOption func(*byConfig)

type byConfig struct{ last bool }

// LastOnTies makes MinBy and MaxBy keep the latest of the records whose
// field equals the extreme, instead of the first (Flink's minBy(field,
// false)).
func LastOnTies() ByOption { return func(c *byConfig) { c.last = true } }

// MinBy emits, for each record, the whole record of its key with the
// smallest field value so far; of records with equal values the first is
// kept unless LastOnTies is given (Flink's KeyedStream.minBy). Values
// compare as in Min.
func MinBy[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, opts ...ByOption) DataStream[T] {
	return extremeRecord(ks, get, -1, opts)
}

// MaxBy is MinBy for the largest value (Flink's KeyedStream.maxBy).
func MaxBy[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, opts ...ByOption) DataStream[T] {
	return extremeRecord(ks, get, 1, opts)
}

// extremeField is Min (sign -1) or Max (1).
func extremeField[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, set func(*T, F), sign int) DataStream[T] {
	if get == nil || set == nil {
		ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Keyed Aggregation", nilFnError("field getter or setter")))
	}
	return rollingOp(ks, "Keyed Aggregation", rolling.ExtremeField(get, set, sign))
}

// extremeRecord is MinBy (sign -1) or MaxBy (1).
func extremeRecord[K comparable, T any, F cmp.Ordered](ks KeyedStream[K, T], get func(T) F, sign int, opts []ByOption) DataStream[T] {
	if get == nil {
		ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Keyed Aggregation", nilFnError("field getter")))
	}
	var c byConfig
	for _, o := range opts {
		o(&c)
	}
	return rollingOp(ks, "Keyed Aggregation", rolling.ExtremeRecord(get, sign, c.last))
}

// rollingOp adds the keyed operator of a rolling aggregation.
func rollingOp[K comparable, T any](ks KeyedStream[K, T], name string, f func(acc, v T) T) DataStream[T] {
	return Process(ks, &rollingFn[K, T]{f: f}).Name(name)
}

// rollingFn is the function of a rolling aggregation: the running value of
// each key in value state, as Flink's StreamGroupedReduceOperator.
type rollingFn[K comparable, T any] struct {
	f       func(acc, v T) T
	running state.ValueState[T]
}

func (r *rollingFn[K, T]) Open(ctx KeyedRuntimeContext[K]) (err error) {
	r.running, err = GetValueState(ctx, state.Value[T]("_op_state"))
	return err
}

func (r *rollingFn[K, T]) ProcessElement(v T, _ KeyedContext[K], out Collector[T]) error {
	if acc, ok := r.running.Value(); ok {
		v = r.f(acc, v)
	}
	r.running.Update(v)
	out.Collect(v)
	return nil
}

func (r *rollingFn[K, T]) OnTimer(int64, OnTimerContext[K], Collector[T]) error { return nil }
