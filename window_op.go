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
// window's max timestamp) and the ProcessWindowContext, whose window side
// is internal/windowing's.
type winCtx[K comparable, OUT any, W window.Window] struct {
	opContext
	windowing.Ctx[K, W]
	out  *engine.Output[OUT]
	col  collector[OUT]
	wmFn func() int64
}

func (c *winCtx[K, OUT, W]) begin(w W) {
	c.Win = w
	c.col.ts = w.MaxTimestamp()
	c.ts = c.col.ts
}

// CurrentWatermark implements ProcessWindowContext.
func (c *winCtx[K, OUT, W]) CurrentWatermark() int64 { return c.wmFn() }

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
	wspec := &windowing.Spec[K, T, V, OUT, W]{Assigner: ws.assigner, Trigger: trigger, DefaultTrigger: ws.trigger == nil,
		Evictor: ws.evictor, Lateness: max(ws.lateness, 0), Merging: merging, Key: ws.ks.key, Hash: ws.ks.hashK,
		LateTag: ws.lateTag, HasLate: ws.hasLateTag, Fns: spec.fns}
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
			fn := spec.newFn(user)
			h := windowing.Hooks[K, V, W]{Settle: c.settle, SideErr: &c.sideErr, Watermark: &c.wm, Ctx: &c.Ctx,
				Open: func() error {
					switch f := user.(type) {
					case KeyedOpener[K]:
						return f.Open(o.rc)
					case Opener:
						return f.Open(o.rc)
					}
					return nil
				},
				Close: func() error { return closeFn(user, &c.opBase) },
				Emit:  func(key K, w W, v V) error { return fn(key, w, v, c) },
			}
			if cl, ok := user.(ProcessWindowClearer[W]); ok {
				h.Clear = func(_ K, w W) error {
					c.begin(w)
					return cl.Clear(c)
				}
			}
			eng, err := wspec.Subtask(bc, out, backend, &o.Task, h)
			if err != nil {
				return engine.Built{}, err
			}
			o.eng, c.wmFn = eng, eng.CurrentWatermark
			return engine.Built{Inputs: []any{engine.Input[T](o)}, Life: o}, nil
		})
	ws.ks.ds.connect(n, 0)
	return streamOf[OUT](env, n)
}
