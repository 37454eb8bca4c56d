package windowing

import (
	"context"
	"fmt"
	"math"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keyedsnap"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Engine is what a Task drives: the per-window Operator or Sliced.
type Engine[K comparable, T any] interface {
	SetCurrentKey(k K)
	// ProcessElementPtr processes *v, which it does not keep.
	ProcessElementPtr(v *T, ts int64) error
	AdvanceWatermark(wm int64) error
	// CurrentWatermark is the engine's watermark.
	CurrentWatermark() int64
	// Snapshot and Restore checkpoint the engine's keyed state and timers
	// per key group.
	Snapshot() (map[int][]byte, error)
	// SnapshotAsync is the synchronous part of an asynchronous snapshot.
	SnapshotAsync() (keyedsnap.Async, error)
	Restore(kgs map[int][]byte) error
	// LateDropped counts the late elements dropped (no late side output).
	LateDropped() int64
	// TimerCount is the number of registered timers.
	TimerCount() int
}

// BatchClock reads a task's processing-time clock at most once per batch
// of records: a processing-time window assigner asks for the time of every
// element, and a clock read costs as much as assigning the window (tens
// of ns, more on some virtual machines). Within a batch, which takes
// microseconds, every element sees the time read for its first; outside
// a batch (timers, watermarks) every call reads the clock.
type BatchClock struct {
	now     func() int64
	inBatch bool
	valid   bool
	at      int64
}

// NewBatchClock returns a batch clock reading now.
func NewBatchClock(now func() int64) BatchClock { return BatchClock{now: now} }

// begin starts a batch.
func (c *BatchClock) begin() { c.inBatch, c.valid = true, false }

// end ends a batch.
func (c *BatchClock) end() { c.inBatch = false }

// Now returns the processing time.
func (c *BatchClock) Now() int64 {
	if !c.inBatch {
		return c.now()
	}
	if !c.valid {
		c.at, c.valid = c.now(), true
	}
	return c.at
}

// FoldReduce reduces the elements an evictor left with f.
func FoldReduce[T any](f func(a, b T) T) func([]T) (T, bool) {
	return func(vs []T) (T, bool) {
		var acc T
		if len(vs) == 0 {
			return acc, false
		}
		acc = vs[0]
		for _, v := range vs[1:] {
			acc = f(acc, v)
		}
		return acc, true
	}
}

// FoldAggregate aggregates the elements an evictor left with agg.
func FoldAggregate[T, ACC, R any](agg state.AggregateFunction[T, ACC, R]) func([]T) (R, bool) {
	return func(vs []T) (R, bool) {
		acc := agg.CreateAccumulator()
		for _, v := range vs {
			acc = agg.Add(v, acc)
		}
		return agg.GetResult(acc), true
	}
}

// FoldList keeps the elements an evictor left as they are.
func FoldList[T any](vs []T) ([]T, bool) { return vs, true }

// SliceConfig is what a sliced engine builder needs from the operator.
type SliceConfig[K comparable, T, OUT any] struct {
	Assigner       window.Sliding
	Lateness       int64
	Backend        *istate.Backend[K]
	Hash           func(K) int32
	MaxParallelism int
	Late           func(v T, ts int64)
	Out            *engine.Output[OUT]
}

func slicedConfig[K comparable, T, ACC, OUT any](cfg SliceConfig[K, T, OUT]) SlicedConfig[K, T, ACC] {
	return SlicedConfig[K, T, ACC]{
		Size: cfg.Assigner.Size(), Slide: cfg.Assigner.Slide(), Offset: cfg.Assigner.Offset(), Lateness: cfg.Lateness,
		Backend: cfg.Backend, Hash: cfg.Hash, MaxParallelism: cfg.MaxParallelism, Late: cfg.Late,
	}
}

// SliceReduce builds the sliced engine of Reduce: one reduced partial per
// slice, reduced in slice order at firing.
func SliceReduce[K comparable, T any](f func(a, b T) T) func(cfg SliceConfig[K, T, T]) (Engine[K, T], error) {
	return func(cfg SliceConfig[K, T, T]) (Engine[K, T], error) {
		sc := slicedConfig[K, T, T](cfg)
		sc.Add = func(v, acc T, has bool) T {
			if has {
				return f(acc, v)
			}
			return v
		}
		sc.Merge = f
		out := cfg.Out
		sc.Emit = func(_ K, w window.TimeWindow, acc T) error {
			out.Collect(acc, w.MaxTimestamp())
			return nil
		}
		return NewSliced(sc)
	}
}

// SliceAggregate builds the sliced engine of Aggregate: one accumulator per
// slice, merged with Merge at firing.
func SliceAggregate[K comparable, T, ACC, R any](agg state.AggregateFunction[T, ACC, R]) func(cfg SliceConfig[K, T, R]) (Engine[K, T], error) {
	return func(cfg SliceConfig[K, T, R]) (Engine[K, T], error) {
		sc := slicedConfig[K, T, ACC](cfg)
		sc.Add = func(v T, acc ACC, has bool) ACC {
			if !has {
				acc = agg.CreateAccumulator()
			}
			return agg.Add(v, acc)
		}
		sc.Merge = agg.Merge
		out := cfg.Out
		sc.Emit = func(_ K, w window.TimeWindow, acc ACC) error {
			out.Collect(agg.GetResult(acc), w.MaxTimestamp())
			return nil
		}
		return NewSliced(sc)
	}
}

// EngineConfig configures NewEngine.
type EngineConfig[K comparable, T, V, OUT any, W window.Window] struct {
	Assigner window.Assigner[W]
	// Trigger is the trigger in effect; DefaultTrigger tells that the user
	// set none (then the sliced engine may be used).
	Trigger        window.Trigger
	DefaultTrigger bool
	Evictor        window.Evictor
	Lateness       int64
	Backend        *istate.Backend[K]
	Hash           func(K) int32
	MaxParallelism int
	// Now is the operator's (batch) clock, EvictorNow the task's clock
	// that evictors read.
	Now, EvictorNow func() int64
	Schedule        func(at int64, f func(at int64) error)
	Late            func(v T, ts int64)
	ClearWindow     func(key K, w W) error
	// Emit calls the window function for one firing.
	Emit func(key K, w W, v V) error
	// Fns are the window function kind's.
	Fns Fns[K, T, V, OUT, W]
	Out *engine.Output[OUT]
}

// NewEngine builds the engine of a window operator: the sliced one for
// sliding event-time windows with the default trigger and no evictor when
// the function allows it, else the per-window one, evicting or not.
func NewEngine[K comparable, T, V, OUT any, W window.Window](cfg EngineConfig[K, T, V, OUT, W]) (Engine[K, T], error) {
	if cfg.Evictor == nil && cfg.Fns.Slicer != nil && cfg.DefaultTrigger {
		if sa, ok := any(cfg.Assigner).(window.Sliding); ok && sa.IsEventTime() && sa.Size() > sa.Slide() {
			return cfg.Fns.Slicer(SliceConfig[K, T, OUT]{Assigner: sa, Lateness: cfg.Lateness, Backend: cfg.Backend,
				Hash: cfg.Hash, MaxParallelism: cfg.MaxParallelism, Late: cfg.Late, Out: cfg.Out})
		}
	}
	if cfg.Evictor == nil {
		contents, err := cfg.Fns.Contents(cfg.Backend)
		if err != nil {
			return nil, err
		}
		return New(Config[K, T, V, W]{
			Assigner: cfg.Assigner, Trigger: cfg.Trigger, Lateness: cfg.Lateness, Backend: cfg.Backend,
			Hash: cfg.Hash, MaxParallelism: cfg.MaxParallelism, Now: cfg.Now, Schedule: cfg.Schedule,
			Contents: contents, Late: cfg.Late, ClearWindow: cfg.ClearWindow, Emit: cfg.Emit,
		})
	}
	contents, err := NewTimestampedList[K, W, T](cfg.Backend)
	if err != nil {
		return nil, err
	}
	ev := &evicting[K, T, V, W]{evictor: cfg.Evictor, fold: cfg.Fns.Fold, fn: cfg.Emit, contents: contents, now: cfg.EvictorNow}
	eng, err := New(Config[K, T, []window.TimestampedValue[T], W]{
		Assigner: cfg.Assigner, Trigger: cfg.Trigger, Lateness: cfg.Lateness, Backend: cfg.Backend,
		Hash: cfg.Hash, MaxParallelism: cfg.MaxParallelism, Now: cfg.Now, Schedule: cfg.Schedule,
		Contents: contents, Late: cfg.Late, ClearWindow: cfg.ClearWindow, Emit: ev.emit,
	})
	if err != nil {
		return nil, err
	}
	ev.wm = eng.CurrentWatermark
	return eng, nil
}

// evicting is the firing of an evicting window: evict before, fold what is
// left, call the function, evict after, store what is left.
type evicting[K comparable, T, V any, W window.Window] struct {
	evictor  window.Evictor
	fold     func([]T) (V, bool)
	fn       func(key K, w W, v V) error
	contents *TimestampedList[K, W, T]
	now      func() int64
	wm       func() int64
	el       elements[T]
	vals     []T
}

func (e *evicting[K, T, V, W]) emit(key K, w W, contents []window.TimestampedValue[T]) error {
	e.el.items = contents
	ctx := evictorCtx[W]{w: w, now: e.now, wm: e.wm}
	e.el.reset()
	e.evictor.EvictBefore(&e.el, e.el.Len(), ctx)
	e.el.compact()
	e.vals = e.vals[:0]
	for _, it := range e.el.items {
		e.vals = append(e.vals, it.Value)
	}
	if v, ok := e.fold(e.vals); ok {
		if err := e.fn(key, w, v); err != nil {
			return err
		}
	}
	clear(e.vals)
	e.el.reset()
	e.evictor.EvictAfter(&e.el, e.el.Len(), ctx)
	e.el.compact()
	e.contents.Update(e.el.items)
	e.el.items = nil
	return nil
}

// elements implements window.TypedElements over a window's contents.
type elements[T any] struct {
	items   []window.TimestampedValue[T]
	evicted []bool
}

func (e *elements[T]) reset() {
	e.evicted = append(e.evicted[:0], make([]bool, len(e.items))...)
}

func (e *elements[T]) compact() {
	k := 0
	for i, it := range e.items {
		if !e.evicted[i] {
			e.items[k] = it
			k++
		}
	}
	clear(e.items[k:])
	e.items = e.items[:k]
}

func (e *elements[T]) Len() int { return len(e.items) }
func (e *elements[T]) Timestamp(i int) (int64, bool) {
	ts := e.items[i].Timestamp
	return ts, ts != math.MinInt64
}
func (e *elements[T]) Evict(i int)        { e.evicted[i] = true }
func (e *elements[T]) Evicted(i int) bool { return e.evicted[i] }
func (e *elements[T]) Value(i int) T      { return e.items[i].Value }

type evictorCtx[W window.Window] struct {
	w   W
	now func() int64
	wm  func() int64
}

func (c evictorCtx[W]) CurrentProcessingTime() int64 { return c.now() }
func (c evictorCtx[W]) CurrentWatermark() int64      { return c.wm() }
func (c evictorCtx[W]) Window() any                  { return c.w }

// Task is the window operator of one subtask as the runtime drives it:
// its engine, and hooks to the API layer that holds the user's function.
type Task[K comparable, T, OUT any] struct {
	Name     string
	Eng      Engine[K, T]
	KeyFn    func(T) K
	Out      *engine.Output[OUT]
	Restored *engine.Restored
	Clock    BatchClock
	// Settle turns what recover returned and a returned error into the
	// operator's error.
	Settle func(r any, err *error)
	// SideErr points at the first failure of a side output, taken after
	// every element.
	SideErr *error
	// Watermark points at the watermark the operator context keeps.
	Watermark *int64
	// OpenFn opens the user's function, CloseFn closes it.
	OpenFn, CloseFn func() error
}

func (t *Task[K, T, OUT]) takeSideErr() error {
	err := *t.SideErr
	*t.SideErr = nil
	return err
}

// LateRecordsDropped implements engine.LateDropCounter.
func (t *Task[K, T, OUT]) LateRecordsDropped() int64 { return t.Eng.LateDropped() }

// Open restores the engine and opens the user's function.
func (t *Task[K, T, OUT]) Open() (err error) {
	defer func() { t.Settle(recover(), &err) }()
	if t.Restored != nil {
		if err := t.Eng.Restore(t.Restored.KeyGroups); err != nil {
			return err
		}
	}
	return t.OpenFn()
}

// Close closes the user's function.
func (t *Task[K, T, OUT]) Close() error { return t.CloseFn() }

// SnapshotState snapshots the window contents, the trigger and window
// state and the timers, per key group.
func (t *Task[K, T, OUT]) SnapshotState(int64) (engine.OperatorSnapshot, error) {
	kgs, err := t.Eng.Snapshot()
	if err != nil {
		return engine.OperatorSnapshot{}, fmt.Errorf("operator %q: snapshot of the window state: %w", t.Name, err)
	}
	return engine.OperatorSnapshot{KeyGroups: kgs}, nil
}

// SnapshotStateAsync takes a copy-on-write view of the window state and a
// copy of the timers at the barrier and encodes them asynchronously.
func (t *Task[K, T, OUT]) SnapshotStateAsync(int64) (engine.AsyncSnapshot, error) {
	async, err := t.Eng.SnapshotAsync()
	if err != nil {
		return nil, fmt.Errorf("operator %q: snapshot of the window state: %w", t.Name, err)
	}
	return func(ctx context.Context) (engine.OperatorSnapshot, error) {
		kgs, err := async(ctx)
		if err != nil {
			return engine.OperatorSnapshot{}, fmt.Errorf("operator %q: snapshot of the window state: %w", t.Name, err)
		}
		return engine.OperatorSnapshot{KeyGroups: kgs}, nil
	}, nil
}

// ProcessBatch processes a batch of records.
func (t *Task[K, T, OUT]) ProcessBatch(recs []engine.Record[T]) (err error) {
	defer func() { t.Settle(recover(), &err) }()
	t.Clock.begin()
	defer t.Clock.end()
	for i := range recs {
		t.Eng.SetCurrentKey(t.KeyFn(recs[i].Value))
		if err := t.Eng.ProcessElementPtr(&recs[i].Value, recs[i].TS); err != nil {
			return err
		}
		if *t.SideErr != nil {
			return t.takeSideErr()
		}
	}
	return t.Out.Err()
}

// ProcessWatermark fires the windows the watermark ends and forwards it.
func (t *Task[K, T, OUT]) ProcessWatermark(wm int64) (err error) {
	if err := t.advance(wm); err != nil {
		return err
	}
	return t.Out.EmitWatermark(wm)
}

func (t *Task[K, T, OUT]) advance(wm int64) (err error) {
	defer func() { t.Settle(recover(), &err) }()
	*t.Watermark = wm
	if err := t.Eng.AdvanceWatermark(wm); err != nil {
		return err
	}
	if err := t.takeSideErr(); err != nil {
		return err
	}
	return t.Out.Err()
}

// ProcessStatus forwards the idleness status.
func (t *Task[K, T, OUT]) ProcessStatus(idle bool) error { return t.Out.EmitStatus(idle) }

// EndInput ends the output.
func (t *Task[K, T, OUT]) EndInput() error { return t.Out.End() }

// Schedule wraps processing-time callbacks with the operator's error
// handling.
func (t *Task[K, T, OUT]) Schedule(pts engine.ProcessingTimeService) func(at int64, f func(int64) error) {
	return func(at int64, f func(int64) error) {
		pts.Schedule(at, func(at int64) (err error) {
			defer func() { t.Settle(recover(), &err) }()
			if err := f(at); err != nil {
				return err
			}
			if err := t.takeSideErr(); err != nil {
				return err
			}
			return t.Out.Err()
		})
	}
}

// Fns are the engine's functions of a window function kind.
type Fns[K comparable, T, V, OUT any, W window.Window] struct {
	// Contents makes the incremental contents state.
	Contents func(b *istate.Backend[K]) (Contents[T, V, W], error)
	// Fold turns the elements left by an evictor into V.
	Fold func([]T) (V, bool)
	// Slicer, if set, builds the sliced engine for sliding event-time
	// windows with the default trigger.
	Slicer func(cfg SliceConfig[K, T, OUT]) (Engine[K, T], error)
}

// ReduceFns are the functions of a window reducing with f (no sliced
// engine: set Slicer to SliceReduce where the result is emitted as it is).
func ReduceFns[K comparable, T, OUT any, W window.Window](f func(a, b T) T) Fns[K, T, T, OUT, W] {
	return Fns[K, T, T, OUT, W]{
		Contents: func(b *istate.Backend[K]) (Contents[T, T, W], error) { return NewReducing[K, W, T](b, f) },
		Fold:     FoldReduce(f),
	}
}

// AggregateFns are the functions of a window aggregating with agg (no
// sliced engine: set Slicer to SliceAggregate where the result is emitted
// as it is).
func AggregateFns[K comparable, T, ACC, R, OUT any, W window.Window](agg state.AggregateFunction[T, ACC, R]) Fns[K, T, R, OUT, W] {
	return Fns[K, T, R, OUT, W]{
		Contents: func(b *istate.Backend[K]) (Contents[T, R, W], error) {
			return NewAggregating[K, W, T, ACC, R](b, agg)
		},
		Fold: FoldAggregate(agg),
	}
}

// ListFns are the functions of a window keeping all its elements.
func ListFns[K comparable, T, OUT any, W window.Window]() Fns[K, T, []T, OUT, W] {
	return Fns[K, T, []T, OUT, W]{
		Contents: func(b *istate.Backend[K]) (Contents[T, []T, W], error) { return NewList[K, W, T](b) },
		Fold:     FoldList[T],
	}
}
