package weir

import (
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The ...Func entry points take a plain function where the plain entry
// point takes an interface (for functions with state, Open, Close or
// several methods), so that a function literal needs no conversion and Go
// infers every type parameter from it:
//
//	alerts := weir.ProcessStreamFunc(events, func(e Event, ctx weir.Context, out weir.Collector[Alert]) error {
//		...
//	})
//
// A function given to a ...Func entry point is shared by the operator's
// subtasks, which call it concurrently; keep per-subtask state in a struct
// passed to the plain entry point instead.

// ProcessStreamFunc is ProcessStream with a function: f is called for every
// record, with a Context for its timestamp, the watermark and side outputs.
func ProcessStreamFunc[IN, OUT any](ds DataStream[IN], f func(v IN, ctx Context, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return ProcessStream[IN, OUT](ds, nil)
	}
	return ProcessStream[IN, OUT](ds, processFunc[IN, OUT](f))
}

// ProcessFunc is Process with a function and no timer callback: f is
// called for every record with the keyed context (current key, timer
// service, side outputs). Timers it registers fire without effect; use a
// KeyedProcessFunction with Process for OnTimer and keyed state.
func ProcessFunc[K comparable, IN, OUT any](ks KeyedStream[K, IN], f func(v IN, ctx KeyedContext[K], out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return Process[K, IN, OUT](ks, nil)
	}
	return Process[K, IN, OUT](ks, keyedProcessFunc[K, IN, OUT](f))
}

// IntervalJoinFunc is IntervalJoin with a function called once per
// matching pair.
func IntervalJoinFunc[K comparable, L, R, OUT any](left KeyedStream[K, L], right KeyedStream[K, R], b IntervalBounds,
	f func(left L, right R, ctx JoinContext, out Collector[OUT]) error, opts ...IntervalJoinOption) DataStream[OUT] {
	if f == nil {
		return IntervalJoin[K, L, R, OUT](left, right, b, nil, opts...)
	}
	return IntervalJoin[K, L, R, OUT](left, right, b, processJoinFunc[L, R, OUT](f), opts...)
}

// IntervalOuterJoinFunc is IntervalOuterJoin with a function called per
// matching pair and per unmatched record (with a nil partner).
func IntervalOuterJoinFunc[K comparable, L, R, OUT any](left KeyedStream[K, L], right KeyedStream[K, R], b IntervalBounds,
	kind OuterJoinKind, f func(left *L, right *R, ctx JoinContext, out Collector[OUT]) error, opts ...IntervalJoinOption) DataStream[OUT] {
	if f == nil {
		return IntervalOuterJoin[K, L, R, OUT](left, right, b, kind, nil, opts...)
	}
	return IntervalOuterJoin[K, L, R, OUT](left, right, b, kind, outerJoinFunc[L, R, OUT](f), opts...)
}

// ApplyFunc is Apply with a function called with a window's elements at
// each firing.
func ApplyFunc[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], f func(key K, w W, elements []T, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return Apply[K, T, OUT, W](ws, nil)
	}
	return Apply[K, T, OUT, W](ws, windowFunc[K, T, OUT, W](f))
}

// ProcessWindowFunc is ProcessWindow with a function called with the
// window context and the window's elements at each firing.
func ProcessWindowFunc[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W],
	f func(key K, ctx ProcessWindowContext[W], elements []T, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return ProcessWindow[K, T, OUT, W](ws, nil)
	}
	return ProcessWindow[K, T, OUT, W](ws, processWindowFunc[K, T, OUT, W](f))
}

// ReduceWithProcessFunc is ReduceWithProcess with a function: f gets the
// single reduced value of each firing (elements has one element).
func ReduceWithProcessFunc[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], reduce func(a, b T) T,
	f func(key K, ctx ProcessWindowContext[W], elements []T, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return ReduceWithProcess[K, T, OUT, W](ws, reduce, nil)
	}
	return ReduceWithProcess[K, T, OUT, W](ws, reduce, processWindowFunc[K, T, OUT, W](f))
}

// AggregateWithProcessFunc is AggregateWithProcess with a function: f gets
// the single aggregate result of each firing (elements has one element).
func AggregateWithProcessFunc[K comparable, T, ACC, R, OUT any, W window.Window](ws WindowedStream[K, T, W], agg state.AggregateFunction[T, ACC, R],
	f func(key K, ctx ProcessWindowContext[W], elements []R, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		return AggregateWithProcess[K, T, ACC, R, OUT, W](ws, agg, nil)
	}
	return AggregateWithProcess[K, T, ACC, R, OUT, W](ws, agg, processWindowFunc[K, R, OUT, W](f))
}
