package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
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
	fns := windowing.ReduceFns[K, T, T, W](f)
	fns.Slicer = windowing.SliceReduce[K, T](f)
	return buildWindow(ws, windowSpec[K, T, T, T, W]{kind: "Reduce", nilFn: f == nil, fns: fns,
		newFn: func(any) windowFn[K, T, T, W] { return emitValue[K, T, W] }})
}

// ReduceWithProcess reduces incrementally with f and, at each firing,
// hands the single reduced value to fn (Flink's reduce with a
// ProcessWindowFunction).
func ReduceWithProcess[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], f func(a, b T) T, fn ProcessWindowFunction[K, T, OUT, W]) DataStream[OUT] {
	return buildWindow(ws, windowSpec[K, T, T, OUT, W]{kind: "ReduceWithProcess", nilFn: f == nil || isNil(fn), user: fn,
		fns: windowing.ReduceFns[K, T, OUT, W](f), newFn: processSingle[K, T, OUT, W]})
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
	fns := windowing.AggregateFns[K, T, ACC, R, R, W](agg)
	fns.Slicer = windowing.SliceAggregate[K, T, ACC, R](agg)
	return buildWindow(ws, windowSpec[K, T, R, R, W]{kind: "Aggregate", nilFn: isNil(agg), fns: fns,
		newFn: func(any) windowFn[K, R, R, W] { return emitValue[K, R, W] }})
}

// AggregateWithProcess aggregates incrementally with agg and, at each
// firing, hands the single result to fn.
func AggregateWithProcess[K comparable, T, ACC, R, OUT any, W window.Window](ws WindowedStream[K, T, W], agg state.AggregateFunction[T, ACC, R], fn ProcessWindowFunction[K, R, OUT, W]) DataStream[OUT] {
	return buildWindow(ws, windowSpec[K, T, R, OUT, W]{kind: "AggregateWithProcess", nilFn: isNil(agg) || isNil(fn), user: fn,
		fns: windowing.AggregateFns[K, T, ACC, R, OUT, W](agg), newFn: processSingle[K, R, OUT, W]})
}

// ProcessWindow keeps every element of a window and hands them, in arrival
// order, to fn at each firing.
func ProcessWindow[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], fn ProcessWindowFunction[K, T, OUT, W]) DataStream[OUT] {
	return buildWindow(ws, windowSpec[K, T, []T, OUT, W]{kind: "ProcessWindow", nilFn: isNil(fn), user: fn,
		fns: windowing.ListFns[K, T, OUT, W](), newFn: processList[K, T, OUT, W]})
}

// Apply keeps every element of a window and hands them to fn at each
// firing (Flink's WindowedStream.apply).
func Apply[K comparable, T, OUT any, W window.Window](ws WindowedStream[K, T, W], fn WindowFunction[K, T, OUT, W]) DataStream[OUT] {
	return buildWindow(ws, windowSpec[K, T, []T, OUT, W]{kind: "Apply", nilFn: isNil(fn), user: fn,
		fns: windowing.ListFns[K, T, OUT, W](), newFn: applyList[K, T, OUT, W]})
}

// windowSpec is what a window function kind hands to buildWindow.
type windowSpec[K comparable, T, V, OUT any, W window.Window] struct {
	kind  string
	nilFn bool
	user  any // the user function, for Open/Close/Clear
	fns   windowing.Fns[K, T, V, OUT, W]
	// newFn makes the per-subtask function adapter around the subtask's
	// clone of the user function (nil for Reduce and Aggregate).
	newFn func(user any) windowFn[K, V, OUT, W]
}

// windowFn calls the user's window function for one firing.
type windowFn[K comparable, V, OUT any, W window.Window] func(key K, w W, v V, c *winCtx[K, OUT, W]) error

// emitValue emits the incremental result itself.
func emitValue[K comparable, V any, W window.Window](_ K, w W, v V, c *winCtx[K, V, W]) error {
	c.out.Collect(v, w.MaxTimestamp())
	return nil
}

// processSingle hands the single incremental result to a process function.
func processSingle[K comparable, V, OUT any, W window.Window](u any) windowFn[K, V, OUT, W] {
	fn := u.(ProcessWindowFunction[K, V, OUT, W])
	var buf [1]V
	return func(key K, w W, v V, c *winCtx[K, OUT, W]) error {
		c.begin(w)
		buf[0] = v
		err := fn.Process(key, c, buf[:], &c.col)
		var zero V
		buf[0] = zero
		return err
	}
}

// processList hands all elements to a process function.
func processList[K comparable, T, OUT any, W window.Window](u any) windowFn[K, []T, OUT, W] {
	fn := u.(ProcessWindowFunction[K, T, OUT, W])
	return func(key K, w W, v []T, c *winCtx[K, OUT, W]) error {
		c.begin(w)
		return fn.Process(key, c, v, &c.col)
	}
}

// applyList hands all elements to a window function.
func applyList[K comparable, T, OUT any, W window.Window](u any) windowFn[K, []T, OUT, W] {
	fn := u.(WindowFunction[K, T, OUT, W])
	return func(key K, w W, v []T, c *winCtx[K, OUT, W]) error {
		c.begin(w)
		return fn.Apply(key, w, v, &c.col)
	}
}

// winCtx is the output side of a window operator: the collector (with the
// window's max timestamp) and the ProcessWindowContext.
type winCtx[K comparable, OUT any, W window.Window] struct {
	opContext
	out      *engine.Output[OUT]
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

// windowOp is the window operator of one subtask: the engine's task
// (internal/windowing) with the user's function and its context.
type windowOp[K comparable, T, OUT any, W window.Window] struct {
	windowing.Task[K, T, OUT]
	ctx winCtx[K, OUT, W]
	eng windowing.Engine[K, T]
	rc  keyedRuntimeCtx[K]
}

// buildWindow validates the windowed stream and adds the window operator.
func buildWindow[K comparable, T, V, OUT any, W window.Window](ws WindowedStream[K, T, W], spec windowSpec[K, T, V, OUT, W]) DataStream[OUT] {
	env := ws.ks.ds.env
	name := "Window(" + spec.kind + ")"
	if ws.all {
		name = "WindowAll(" + spec.kind + ")"
	}
	fail := func(err error) { env.fail(fmt.Errorf("operator %q: %w", name, err)) }
	trigger, merging, eventTime := windowing.Check[T](windowing.Parts[W]{Assigner: ws.assigner, AssignerNil: isNil(ws.assigner),
		Trigger: ws.trigger, Evictor: ws.evictor, Errs: ws.errs, NilFn: spec.nilFn},
		fail, func(s string) { env.warnTruncated(fmt.Sprintf("operator %q: %s", name, s)) })
	if ws.lateness > 0 && !isNil(ws.assigner) && !eventTime {
		env.cfg.logger.Warn("allowed lateness is ignored for windows that are not in event time", "operator", name, "lateness_ms", ws.lateness)
	}
	par := env.cfg.parallelism
	if ws.all {
		par = 1
	}
	lateTag, hasLate := ws.lateTag, ws.hasLateTag
	n := newNode[OUT](env, name, engine.KindOneInput, par,
		func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Built, error) {
			o := &windowOp[K, T, OUT, W]{}
			c := &o.ctx
			c.opContext = newOpContext(bc)
			c.out, c.col.out = out, out
			user := spec.user
			if user != nil {
				user = cloneFunction(user)
			}
			backend := istate.NewBackend[K](bc.KeyGroups.Start, bc.KeyGroups.End, bc.Clock)
			o.rc = keyedRuntimeCtx[K]{runtimeCtx: newRuntimeCtx(bc), b: backend}
			o.Task = windowing.Task[K, T, OUT]{Name: bc.Name, KeyFn: ws.ks.key, Out: out, Restored: bc.Restored,
				Clock: windowing.NewBatchClock(bc.Time.Now), Settle: c.settle, SideErr: &c.sideErr, Watermark: &c.wm,
				OpenFn: func() error {
					switch f := user.(type) {
					case KeyedOpener[K]:
						return f.Open(o.rc)
					case Opener:
						return f.Open(o.rc)
					}
					return nil
				},
				CloseFn: func() error { return closeFn(user, &c.opBase) },
			}
			c.winState, c.global = windowing.NewStores[K, W](backend, merging)
			fn := spec.newFn(user)
			var late func(v T, ts int64)
			if hasLate {
				late = windowing.LateOutput[T](bc.Sides[lateTag], &c.sideErr)
			}
			var clearWin func(key K, w W) error
			if cl, ok := user.(ProcessWindowClearer[W]); ok {
				clearWin = func(_ K, w W) error {
					c.begin(w)
					return cl.Clear(c)
				}
			}
			eng, err := windowing.NewEngine(windowing.EngineConfig[K, T, V, OUT, W]{
				Assigner: ws.assigner, Trigger: trigger, DefaultTrigger: ws.trigger == nil, Evictor: ws.evictor,
				Lateness: max(ws.lateness, 0), Backend: backend, Hash: ws.ks.hashK, MaxParallelism: bc.MaxParallelism,
				Now: o.Clock.Now, EvictorNow: bc.Time.Now, Schedule: o.Schedule(bc.Time), Late: late, ClearWindow: clearWin,
				Emit: func(key K, w W, v V) error { return fn(key, w, v, c) },
				Fns:  spec.fns, Out: out,
			})
			if err != nil {
				return engine.Built{}, err
			}
			o.eng, o.Eng, c.wmFn = eng, eng, eng.CurrentWatermark
			return engine.Built{Inputs: []any{engine.Input[T](o)}, Life: o}, nil
		})
	ws.ks.ds.connect(n, 0)
	return streamOf[OUT](env, n)
}
