package weir

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/runtime"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/windowing"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Reduce reduces the elements of each window incrementally with f and
// emits the result at each firing, with the window's max timestamp.
//
// Beyond Flink: on sliding event-time windows with the default trigger and
// no evictor, Weir keeps one partial per slice (gcd of size and slide)
// instead of one per window, and reduces the slices of a window, in time
// order, when it fires. This needs f to be associative and commutative
// (as any pre-aggregation does); set the trigger explicitly
// (Trigger(window.EventTimeTrigger())) to keep Flink's per-window state.
func Reduce[K comparable, T any, W window.Window](ws WindowedStream[K, T, W], f func(a, b T) T) DataStream[T] {
	spec := windowSpec[K, T, T, T, W]{kind: "Reduce", nilFn: f == nil,
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, T, W], error) {
			return windowing.NewReducing[K, W, T](b, f)
		},
		fold:  foldReduce(f),
		newFn: func(any) windowFn[K, T, T, W] { return emitValue[K, T, W]{} },
	}
	spec.slicer = sliceReduce[K, T, W](f)
	return buildWindow(ws, spec)
}

// ReduceWithProcess reduces incrementally with f and, at each firing,
// hands the single reduced value to fn (Flink's reduce with a
// ProcessWindowFunction).
func ReduceWithProcess[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], f func(a, b T) T, fn ProcessWindowFunction[K, T, OUT, W]) DataStream[OUT] {
	spec := windowSpec[K, T, T, OUT, W]{kind: "ReduceWithProcess", nilFn: f == nil || isNil(fn), user: fn,
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, T, W], error) {
			return windowing.NewReducing[K, W, T](b, f)
		},
		fold: foldReduce(f),
		newFn: func(u any) windowFn[K, T, OUT, W] {
			return &processSingle[K, T, OUT, W]{fn: u.(ProcessWindowFunction[K, T, OUT, W])}
		},
	}
	return buildWindow(ws, spec)
}

// Aggregate aggregates the elements of each window incrementally with agg
// and emits GetResult at each firing. Merging windows use agg.Merge.
//
// Beyond Flink: on sliding event-time windows with the default trigger and
// no evictor, Weir keeps one accumulator per slice (gcd of size and slide)
// and merges the slices of a window with agg.Merge when it fires, so an
// element costs one Add instead of size/slide; Merge must be a true merge
// of accumulators. Set the trigger explicitly to keep per-window state.
func Aggregate[K comparable, T, ACC, R any, W window.Window](ws WindowedStream[K, T, W], agg state.AggregateFunction[T, ACC, R]) DataStream[R] {
	spec := windowSpec[K, T, R, R, W]{kind: "Aggregate", nilFn: isNil(agg),
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, R, W], error) {
			return windowing.NewAggregating[K, W, T, ACC, R](b, agg)
		},
		fold:  foldAggregate(agg),
		newFn: func(any) windowFn[K, R, R, W] { return emitValue[K, R, W]{} },
	}
	spec.slicer = sliceAggregate[K, T, ACC, R, W](agg)
	return buildWindow(ws, spec)
}

// AggregateWithProcess aggregates incrementally with agg and, at each
// firing, hands the single result to fn.
func AggregateWithProcess[K comparable, T, ACC, R, OUT any, W window.Window](ws WindowedStream[K, T, W], agg state.AggregateFunction[T, ACC, R], fn ProcessWindowFunction[K, R, OUT, W]) DataStream[OUT] {
	spec := windowSpec[K, T, R, OUT, W]{kind: "AggregateWithProcess", nilFn: isNil(agg) || isNil(fn), user: fn,
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, R, W], error) {
			return windowing.NewAggregating[K, W, T, ACC, R](b, agg)
		},
		fold: foldAggregate(agg),
		newFn: func(u any) windowFn[K, R, OUT, W] {
			return &processSingle[K, R, OUT, W]{fn: u.(ProcessWindowFunction[K, R, OUT, W])}
		},
	}
	return buildWindow(ws, spec)
}

// ProcessWindow keeps every element of a window and hands them, in arrival
// order, to fn at each firing.
func ProcessWindow[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], fn ProcessWindowFunction[K, T, OUT, W]) DataStream[OUT] {
	spec := windowSpec[K, T, []T, OUT, W]{kind: "ProcessWindow", nilFn: isNil(fn), user: fn,
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, []T, W], error) {
			return windowing.NewList[K, W, T](b)
		},
		fold: func(vs []T) ([]T, bool) { return vs, true },
		newFn: func(u any) windowFn[K, []T, OUT, W] {
			return &processList[K, T, OUT, W]{fn: u.(ProcessWindowFunction[K, T, OUT, W])}
		},
	}
	return buildWindow(ws, spec)
}

// Apply keeps every element of a window and hands them to fn at each
// firing (Flink's WindowedStream.apply).
func Apply[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], fn WindowFunction[K, T, OUT, W]) DataStream[OUT] {
	spec := windowSpec[K, T, []T, OUT, W]{kind: "Apply", nilFn: isNil(fn), user: fn,
		contents: func(b *istate.Backend[K]) (windowing.Contents[T, []T, W], error) {
			return windowing.NewList[K, W, T](b)
		},
		fold: func(vs []T) ([]T, bool) { return vs, true },
		newFn: func(u any) windowFn[K, []T, OUT, W] {
			return &applyList[K, T, OUT, W]{fn: u.(WindowFunction[K, T, OUT, W])}
		},
	}
	return buildWindow(ws, spec)
}

func foldReduce[T any](f func(a, b T) T) func([]T) (T, bool) {
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

func foldAggregate[T, ACC, R any](agg state.AggregateFunction[T, ACC, R]) func([]T) (R, bool) {
	return func(vs []T) (R, bool) {
		acc := agg.CreateAccumulator()
		for _, v := range vs {
			acc = agg.Add(v, acc)
		}
		return agg.GetResult(acc), true
	}
}

// windowSpec is what a window function kind hands to buildWindow.
type windowSpec[K comparable, T, V, OUT any, W window.Window] struct {
	kind  string
	nilFn bool
	user  any // the user function, for Open/Close/Clear
	// contents makes the incremental contents state.
	contents func(b *istate.Backend[K]) (windowing.Contents[T, V, W], error)
	// fold turns the elements left by an evictor into V.
	fold func([]T) (V, bool)
	// newFn makes the per-subtask function adapter around the subtask's
	// clone of the user function (nil for Reduce and Aggregate).
	newFn func(user any) windowFn[K, V, OUT, W]
	// slicer, if set, builds the sliced engine for sliding event-time
	// windows with the default trigger (Reduce and Aggregate only).
	slicer func(cfg sliceConfig[K, T, OUT, W]) (windowEngine[K, T], error)
}

// windowFn calls the user's window function for one firing.
type windowFn[K comparable, V, OUT any, W window.Window] interface {
	process(key K, w W, v V, c *winCtx[K, OUT, W]) error
}

// emitValue emits the incremental result itself.
type emitValue[K comparable, V any, W window.Window] struct{}

func (emitValue[K, V, W]) process(_ K, w W, v V, c *winCtx[K, V, W]) error {
	c.out.Collect(v, w.MaxTimestamp())
	return nil
}

// processSingle hands the single incremental result to a process function.
type processSingle[K comparable, V, OUT any, W window.Window] struct {
	fn  ProcessWindowFunction[K, V, OUT, W]
	buf [1]V
}

func (p *processSingle[K, V, OUT, W]) process(key K, w W, v V, c *winCtx[K, OUT, W]) error {
	c.begin(w)
	p.buf[0] = v
	err := p.fn.Process(key, c, p.buf[:], &c.col)
	var zero V
	p.buf[0] = zero
	return err
}

// processList hands all elements to a process function.
type processList[K comparable, T, OUT any, W window.Window] struct {
	fn ProcessWindowFunction[K, T, OUT, W]
}

func (p *processList[K, T, OUT, W]) process(key K, w W, v []T, c *winCtx[K, OUT, W]) error {
	c.begin(w)
	return p.fn.Process(key, c, v, &c.col)
}

// applyList hands all elements to a window function.
type applyList[K comparable, T, OUT any, W window.Window] struct {
	fn WindowFunction[K, T, OUT, W]
}

func (p *applyList[K, T, OUT, W]) process(key K, w W, v []T, c *winCtx[K, OUT, W]) error {
	c.begin(w)
	return p.fn.Apply(key, w, v, &c.col)
}

// winCtx is the output side of a window operator: the collector (with the
// window's max timestamp) and the ProcessWindowContext.
type winCtx[K comparable, OUT any, W window.Window] struct {
	opContext
	out      *runtime.Output[OUT]
	col      collector[OUT]
	w        W
	wmFn     func() int64
	winState *windowing.Store[K, W]
	global   *windowing.Store[K, void]
}

func (c *winCtx[K, OUT, W]) begin(w W) {
	c.w = w
	c.col.ts = w.MaxTimestamp()
	c.ts = c.col.ts
}

// Window implements ProcessWindowContext.
func (c *winCtx[K, OUT, W]) Window() W { return c.w }

// CurrentWatermark implements ProcessWindowContext.
func (c *winCtx[K, OUT, W]) CurrentWatermark() int64 { return c.wmFn() }

// WindowState implements ProcessWindowContext.
func (c *winCtx[K, OUT, W]) WindowState() window.StateStore {
	c.winState.SetNamespace(c.w)
	return c.winState
}

// GlobalState implements ProcessWindowContext.
func (c *winCtx[K, OUT, W]) GlobalState() window.StateStore { return c.global }

// windowEngine is what the operator drives: the per-window engine or the
// sliced one.
type windowEngine[K comparable, T any] interface {
	SetCurrentKey(k K)
	// ProcessElementPtr processes *v, which it does not keep.
	ProcessElementPtr(v *T, ts int64) error
	AdvanceWatermark(wm int64) error
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

// windowOp is the window operator of one subtask.
type windowOp[K comparable, T, OUT any, W window.Window] struct {
	winCtx[K, OUT, W]
	eng      windowEngine[K, T]
	keyFn    func(T) K
	user     any
	rc       keyedRuntimeCtx[K]
	restored *runtime.Restored
	clock    batchClock
}

// LateRecordsDropped implements runtime.LateDropCounter.
func (o *windowOp[K, T, OUT, W]) LateRecordsDropped() int64 { return o.eng.LateDropped() }

// batchClock reads a task's processing-time clock at most once per batch
// of records: a processing-time window assigner asks for the time of every
// element, and a clock read costs as much as assigning the window (tens
// of ns, more on some virtual machines). Within a batch, which takes
// microseconds, every element sees the time read for its first; outside
// a batch (timers, watermarks) every call reads the clock.
type batchClock struct {
	now     func() int64
	inBatch bool
	valid   bool
	at      int64
}

// begin starts a batch.
func (c *batchClock) begin() { c.inBatch, c.valid = true, false }

// end ends a batch.
func (c *batchClock) end() { c.inBatch = false }

// Now returns the processing time.
func (c *batchClock) Now() int64 {
	if !c.inBatch {
		return c.now()
	}
	if !c.valid {
		c.at, c.valid = c.now(), true
	}
	return c.at
}

func (o *windowOp[K, T, OUT, W]) Open() (err error) {
	defer o.catch(&err)
	if o.restored != nil {
		if err := o.eng.Restore(o.restored.KeyGroups); err != nil {
			return err
		}
	}
	switch f := o.user.(type) {
	case KeyedOpener[K]:
		return f.Open(o.rc)
	case Opener:
		return f.Open(o.rc)
	}
	return nil
}

func (o *windowOp[K, T, OUT, W]) Close() error { return closeFn(o.user, &o.opBase) }

// SnapshotState snapshots the window contents, the trigger and window
// state and the timers, per key group.
func (o *windowOp[K, T, OUT, W]) SnapshotState(int64) (runtime.OperatorSnapshot, error) {
	kgs, err := o.eng.Snapshot()
	if err != nil {
		return runtime.OperatorSnapshot{}, fmt.Errorf("operator %q: snapshot of the window state: %w", o.name, err)
	}
	return runtime.OperatorSnapshot{KeyGroups: kgs}, nil
}

// SnapshotStateAsync takes a copy-on-write view of the window state and a
// copy of the timers at the barrier and encodes them asynchronously.
func (o *windowOp[K, T, OUT, W]) SnapshotStateAsync(int64) (runtime.AsyncSnapshot, error) {
	async, err := o.eng.SnapshotAsync()
	if err != nil {
		return nil, fmt.Errorf("operator %q: snapshot of the window state: %w", o.name, err)
	}
	return func(ctx context.Context) (runtime.OperatorSnapshot, error) {
		kgs, err := async(ctx)
		if err != nil {
			return runtime.OperatorSnapshot{}, fmt.Errorf("operator %q: snapshot of the window state: %w", o.name, err)
		}
		return runtime.OperatorSnapshot{KeyGroups: kgs}, nil
	}, nil
}

func (o *windowOp[K, T, OUT, W]) ProcessBatch(recs []runtime.Record[T]) (err error) {
	defer o.catch(&err)
	o.clock.begin()
	defer o.clock.end()
	for i := range recs {
		o.eng.SetCurrentKey(o.keyFn(recs[i].Value))
		if err := o.eng.ProcessElementPtr(&recs[i].Value, recs[i].TS); err != nil {
			return err
		}
		if o.sideErr != nil {
			return o.takeSideErr()
		}
	}
	return o.out.Err()
}

func (o *windowOp[K, T, OUT, W]) ProcessWatermark(wm int64) (err error) {
	if err := o.advance(wm); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}

func (o *windowOp[K, T, OUT, W]) advance(wm int64) (err error) {
	defer o.catch(&err)
	o.wm = wm
	if err := o.eng.AdvanceWatermark(wm); err != nil {
		return err
	}
	if err := o.takeSideErr(); err != nil {
		return err
	}
	return o.out.Err()
}

func (o *windowOp[K, T, OUT, W]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *windowOp[K, T, OUT, W]) EndInput() error               { return o.out.End() }

// schedule wraps processing-time callbacks with the operator's error
// handling.
func (o *windowOp[K, T, OUT, W]) schedule(pts runtime.ProcessingTimeService) func(at int64, f func(int64) error) {
	return func(at int64, f func(int64) error) {
		pts.Schedule(at, func(at int64) (err error) {
			defer o.catch(&err)
			if err := f(at); err != nil {
				return err
			}
			if err := o.takeSideErr(); err != nil {
				return err
			}
			return o.out.Err()
		})
	}
}

var errMergingWindowState = fmt.Errorf("per-window state is not supported with merging window assigners")

// buildWindow validates the windowed stream and adds the window operator.
func buildWindow[K comparable, T, V, OUT any, W window.Window](ws WindowedStream[K, T, W], spec windowSpec[K, T, V, OUT, W]) DataStream[OUT] {
	env := ws.ks.ds.env
	name := "Window(" + spec.kind + ")"
	if ws.all {
		name = "WindowAll(" + spec.kind + ")"
	}
	fail := func(err error) { env.fail(fmt.Errorf("operator %q: %w", name, err)) }
	for _, err := range ws.errs {
		fail(err)
	}
	if spec.nilFn {
		fail(nilFnError("window function"))
	}
	trigger := ws.trigger
	_, merging := ws.assigner.(window.MergingAssigner[W])
	eventTime := false
	if isNil(ws.assigner) {
		fail(fmt.Errorf("window assigner is nil"))
	} else {
		eventTime = ws.assigner.IsEventTime()
		if err := ws.assigner.Validate(); err != nil {
			fail(err)
		}
		if trigger == nil && len(ws.errs) == 0 {
			trigger = ws.assigner.DefaultTrigger()
		}
		if e, ok := ws.assigner.(interface{ ElementType() reflect.Type }); ok {
			if _, ok := ws.assigner.(window.ElementAssigner[T, W]); !ok {
				fail(fmt.Errorf("the assigner reads elements of type %s, the stream carries %s", e.ElementType(), reflect.TypeFor[T]()))
			}
		}
	}
	for _, x := range []any{ws.assigner, ws.trigger, ws.evictor} {
		for _, s := range window.Truncated(x) {
			env.warnTruncated(fmt.Sprintf("operator %q: %s", name, s))
		}
	}
	if trigger != nil {
		if err := validateWindowPart(trigger); err != nil {
			fail(err)
		} else if merging && !trigger.CanMerge() {
			fail(fmt.Errorf("a merging window assigner cannot be used with a trigger that does not support merging (%v)", trigger))
		}
	}
	if ws.evictor != nil {
		if err := validateWindowPart(ws.evictor); err != nil {
			fail(err)
		}
	}
	if ws.lateness > 0 && !isNil(ws.assigner) && !eventTime {
		env.cfg.logger.Warn("allowed lateness is ignored for windows that are not in event time", "operator", name, "lateness_ms", ws.lateness)
	}
	par := env.cfg.parallelism
	if ws.all {
		par = 1
	}
	lateTag, hasLate := ws.lateTag, ws.hasLateTag
	evictor := ws.evictor
	lateness := max(ws.lateness, 0)
	n := newNode[OUT](env, name, runtime.KindOneInput, par,
		func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Built, error) {
			o := &windowOp[K, T, OUT, W]{keyFn: ws.ks.key, user: spec.user, restored: bc.Restored, clock: batchClock{now: bc.Time.Now}}
			o.opContext = newOpContext(bc)
			o.out, o.col.out = out, out
			if spec.user != nil {
				o.user = cloneFunction(spec.user)
			}
			backend := istate.NewBackend[K](bc.KeyGroups.Start, bc.KeyGroups.End, bc.Clock)
			o.rc = keyedRuntimeCtx[K]{runtimeCtx: newRuntimeCtx(bc), b: backend}
			var forbid error
			if merging {
				forbid = errMergingWindowState
			}
			o.winState = windowing.NewStore[K, W](backend, forbid)
			o.global = windowing.NewStore[K, void](backend, nil)
			fn := spec.newFn(o.user)
			var late func(v T, ts int64)
			if hasLate {
				if side, ok := bc.Sides[lateTag].(*runtime.Output[T]); ok {
					late = func(v T, ts int64) { side.Collect(v, ts) }
				} else if p := bc.Sides[lateTag]; p != nil {
					late = func(v T, ts int64) {
						if err := p.EmitAny(v, ts); err != nil && o.sideErr == nil {
							o.sideErr = err
						}
					}
				} else {
					late = func(T, int64) {}
				}
			}
			var clearWin func(key K, w W) error
			if c, ok := o.user.(ProcessWindowClearer[W]); ok {
				clearWin = func(_ K, w W) error {
					o.begin(w)
					return c.Clear(o)
				}
			}
			if evictor == nil && spec.slicer != nil && ws.trigger == nil {
				if sa, ok := any(ws.assigner).(window.Sliding); ok && sa.IsEventTime() && sa.Size() > sa.Slide() {
					eng, err := spec.slicer(sliceConfig[K, T, OUT, W]{assigner: sa, lateness: lateness, backend: backend,
						hash: ws.ks.hashK, maxP: bc.MaxParallelism, late: late, ctx: &o.winCtx})
					if err != nil {
						return runtime.Built{}, err
					}
					o.eng = eng
				}
			}
			if o.eng == nil {
				if evictor == nil {
					contents, err := spec.contents(backend)
					if err != nil {
						return runtime.Built{}, err
					}
					eng, err := windowing.New(windowing.Config[K, T, V, W]{
						Assigner: ws.assigner, Trigger: trigger, Lateness: lateness, Backend: backend,
						Hash: ws.ks.hashK, MaxParallelism: bc.MaxParallelism, Now: o.clock.Now, Schedule: o.schedule(bc.Time),
						Contents: contents, Late: late, ClearWindow: clearWin,
						Emit: func(key K, w W, v V) error { return fn.process(key, w, v, &o.winCtx) },
					})
					if err != nil {
						return runtime.Built{}, err
					}
					o.eng = eng
					o.winCtx.wmFn = eng.CurrentWatermark
				} else {
					contents, err := windowing.NewTimestampedList[K, W, T](backend)
					if err != nil {
						return runtime.Built{}, err
					}
					ev := &evicting[K, T, V, OUT, W]{evictor: evictor, fold: spec.fold, fn: fn, contents: contents, c: &o.winCtx, now: bc.Time.Now}
					eng, err := windowing.New(windowing.Config[K, T, []window.TimestampedValue[T], W]{
						Assigner: ws.assigner, Trigger: trigger, Lateness: lateness, Backend: backend,
						Hash: ws.ks.hashK, MaxParallelism: bc.MaxParallelism, Now: o.clock.Now, Schedule: o.schedule(bc.Time),
						Contents: contents, Late: late, ClearWindow: clearWin, Emit: ev.emit,
					})
					if err != nil {
						return runtime.Built{}, err
					}
					o.eng = eng
					o.winCtx.wmFn = eng.CurrentWatermark
				}
			}
			return runtime.Built{Inputs: []any{runtime.Input[T](o)}, Life: o}, nil
		})
	ws.ks.ds.connect(n, 0)
	return streamOf[OUT](env, n)
}

// evicting is the firing of an evicting window: evict before, fold what is
// left, call the function, evict after, store what is left.
type evicting[K comparable, T, V, OUT any, W window.Window] struct {
	evictor  window.Evictor
	fold     func([]T) (V, bool)
	fn       windowFn[K, V, OUT, W]
	contents *windowing.TimestampedList[K, W, T]
	c        *winCtx[K, OUT, W]
	now      func() int64
	el       elements[T]
	vals     []T
}

func (e *evicting[K, T, V, OUT, W]) emit(key K, w W, contents []window.TimestampedValue[T]) error {
	e.el.items = contents
	ctx := evictorCtx[W]{w: w, now: e.now, wm: e.c.wmFn}
	e.el.reset()
	e.evictor.EvictBefore(&e.el, e.el.Len(), ctx)
	e.el.compact()
	e.vals = e.vals[:0]
	for _, it := range e.el.items {
		e.vals = append(e.vals, it.Value)
	}
	if v, ok := e.fold(e.vals); ok {
		if err := e.fn.process(key, w, v, e.c); err != nil {
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

// validateWindowPart returns a trigger's or evictor's own validation error.
func validateWindowPart(v any) error {
	if v, ok := v.(window.Validator); ok {
		return v.Validate()
	}
	return nil
}
