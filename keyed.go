package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keyedop"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/state"
)

type void = struct{}

// keyedBase is the keyed part of a keyed operator: the current key, keyed
// state and the "user-timers" timer service. It implements KeyedContext,
// OnTimerContext and TimerService for the user function.
type keyedBase[K comparable] struct {
	opContext
	keyedop.Base[K]
	par     int // the operator's parallelism, for RuntimeContext
	domain  TimeDomain
	onTimer func(ts int64) error
	timerTS func(ts int64)
	mg      *metrics.Group // the functions' user metrics
}

func newKeyedBase[K comparable](bc *engine.BuildContext, hash func(K) int32) keyedBase[K] {
	return keyedBase[K]{
		opContext: newOpContext(bc),
		Base:      keyedop.New(bc, hash),
		mg:        metricGroupOf(bc),
		par:       bc.Parallelism,
	}
}

func (b *keyedBase[K]) runtimeContext() KeyedRuntimeContext[K] {
	rc := keyedRuntimeCtx[K]{runtimeCtx: runtimeCtx{name: b.name, subtask: b.subtask, par: b.par, maxPar: b.MaxP, mg: b.mg}, b: b.Backend}
	if b.Disk != nil {
		return diskRuntimeCtx[K]{keyedRuntimeCtx: rc, kb: b.Disk}
	}
	return rc
}

// TimerService implements KeyedContext.
func (b *keyedBase[K]) TimerService() TimerService { return b }

// TimeDomain implements OnTimerContext.
func (b *keyedBase[K]) TimeDomain() TimeDomain { return b.domain }

// CurrentWatermark implements Context and TimerService.
func (b *keyedBase[K]) CurrentWatermark() int64 { return b.Timers.CurrentWatermark() }

// fire runs the timer t (eventTime: of the event-time domain).
func (b *keyedBase[K]) fire(t timer.Timer[K, void], eventTime bool) error {
	b.Key, b.KG = t.Key, t.KeyGroup
	b.SetBackendKey(t.Key, t.KeyGroup)
	b.ts = t.Timestamp
	if eventTime {
		b.domain = EventTime
		b.timerTS(t.Timestamp)
	} else {
		b.domain = ProcessingTime
		b.timerTS(NoTimestamp)
	}
	if err := b.onTimer(t.Timestamp); err != nil {
		return err
	}
	return b.takeSideErr()
}

func (b *keyedBase[K]) advanceWatermark(wm int64) (err error) {
	defer b.catch(&err)
	b.wm = wm
	return b.Drv.AdvanceWatermark(wm)
}

// openKeyed restores keyed state and timers (keyedop's Restore, with a
// disk backend's store), re-arms the earliest processing-time timer
// (timers already due fire right away) and opens the function.
func openKeyed[K comparable](fn any, b *keyedBase[K]) (err error) {
	defer b.catch(&err)
	if err := b.Restore(); err != nil {
		return err
	}
	b.Drv.Start(b.fire, b.catch)
	if op, ok := fn.(KeyedOpener[K]); ok {
		return op.Open(b.runtimeContext())
	}
	return nil
}

// closeKeyed closes the function, then the keyed state backend.
func closeKeyed[K comparable](fn any, b *keyedBase[K]) error {
	err := closeFn(fn, &b.opBase)
	if cerr := b.CloseDisk(); err == nil {
		err = cerr
	}
	return err
}

// openFn opens fn if it is an Opener, with rc.
func openFn(fn any, b *opBase, rc RuntimeContext) (err error) {
	defer b.catch(&err)
	if op, ok := fn.(Opener); ok {
		return op.Open(rc)
	}
	return nil
}

func closeFn(fn any, b *opBase) (err error) {
	defer b.catch(&err)
	if c, ok := fn.(Closer); ok {
		return c.Close()
	}
	return nil
}

// keyedOut is a keyed operator with its output: a watermark fires the
// event-time timers it passes before it goes on.
type keyedOut[K comparable, OUT any] struct {
	keyedBase[K]
	out *engine.Output[OUT]
	col collector[OUT]
}

// init sets the output, the job's disk state backend (nil: heap) and the
// timer callback; a timer's records carry its timestamp (event time) or
// none (processing time).
func (o *keyedOut[K, OUT]) init(out *engine.Output[OUT], sb *keyedop.DiskBackend, onTimer func(ts int64) error) {
	o.out, o.col.out, o.DiskBackend, o.onTimer = out, out, sb, onTimer
	o.timerTS = func(ts int64) { o.col.ts = ts }
}

func (o *keyedOut[K, OUT]) ProcessWatermark(wm int64) error {
	if err := o.advanceWatermark(wm); err != nil {
		return err
	}
	return o.out.EmitWatermark(wm)
}

func (o *keyedOut[K, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }

type keyedProcessOp[K comparable, IN, OUT any] struct {
	keyedOut[K, OUT]
	fn    KeyedProcessFunction[K, IN, OUT]
	keyFn func(IN) K
}

func (o *keyedProcessOp[K, IN, OUT]) Open() error  { return openKeyed[K](o.fn, &o.keyedBase) }
func (o *keyedProcessOp[K, IN, OUT]) Close() error { return closeKeyed(o.fn, &o.keyedBase) }

func (o *keyedProcessOp[K, IN, OUT]) ProcessBatch(recs []engine.Record[IN]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v IN) error {
		o.SetKey(o.keyFn(v))
		return o.fn.ProcessElement(v, &o.keyedBase, &o.col)
	})
}

func (o *keyedProcessOp[K, IN, OUT]) EndInput() error { return o.out.End() }

// Process applies a KeyedProcessFunction to a keyed stream: keyed state,
// event- and processing-time timers, side outputs.
func Process[K comparable, IN, OUT any](ks KeyedStream[K, IN], fn KeyedProcessFunction[K, IN, OUT]) DataStream[OUT] {
	env := ks.ds.env
	if isNil(fn) {
		env.fail(fmt.Errorf("operator %q: %w", "KeyedProcess", nilFnError("keyed process function")))
	}
	return oneInput(ks.ds, "KeyedProcess", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		o := &keyedProcessOp[K, IN, OUT]{keyedOut: keyedOut[K, OUT]{keyedBase: newKeyedBase(bc, ks.hashK)}, fn: cloneFunction(fn), keyFn: ks.key}
		o.init(out, env.keyedStateBackend(), func(ts int64) error { return o.fn.OnTimer(ts, &o.keyedBase, &o.col) })
		return o, o, nil
	})
}

// ConnectedStreams are two streams processed together by one operator.
type ConnectedStreams[A, B any] struct {
	first  DataStream[A]
	second DataStream[B]
}

// Connect connects two streams for CoProcess.
func Connect[A, B any](a DataStream[A], b DataStream[B]) ConnectedStreams[A, B] {
	if a.env != b.env {
		a.env.fail(fmt.Errorf("connect: streams belong to different environments"))
	}
	return ConnectedStreams[A, B]{first: a, second: b}
}

// KeyedConnectedStreams are two keyed streams with keys of one type.
type KeyedConnectedStreams[K comparable, A, B any] struct {
	first  KeyedStream[K, A]
	second KeyedStream[K, B]
}

// ConnectKeyed connects two keyed streams; records with equal keys meet in
// one subtask.
func ConnectKeyed[K comparable, A, B any](a KeyedStream[K, A], b KeyedStream[K, B]) KeyedConnectedStreams[K, A, B] {
	if a.ds.env != b.ds.env {
		a.ds.env.fail(fmt.Errorf("connect: streams belong to different environments"))
	}
	return KeyedConnectedStreams[K, A, B]{first: a, second: b}
}

// KeyByConnected keys both connected streams.
func KeyByConnected[K comparable, A, B any](cs ConnectedStreams[A, B], keyA func(A) K, keyB func(B) K) KeyedConnectedStreams[K, A, B] {
	return ConnectKeyed(KeyBy(cs.first, keyA), KeyBy(cs.second, keyB))
}

func twoInput[A, B, OUT any](a DataStream[A], b DataStream[B], name string,
	mk func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[A, B], engine.Lifecycle, error)) DataStream[OUT] {
	env := a.env
	n := newNode[OUT](env, name, engine.KindTwoInput, env.cfg.parallelism,
		func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Built, error) {
			op, life, err := mk(bc, out)
			if err != nil {
				return engine.Built{}, err
			}
			ad := engine.NewTwoInputAdapter(op)
			return engine.Built{Inputs: []any{ad.First(), ad.Second()}, Life: life}, nil
		})
	a.connect(n, 0)
	b.connect(n, 1)
	return streamOf[OUT](env, n)
}

// endBoth ends the output once both inputs have ended.
type endBoth struct{ ended [2]bool }

func (e *endBoth) end(i int, out engine.OutputPort) error {
	e.ended[i] = true
	if e.ended[0] && e.ended[1] {
		return out.End()
	}
	return nil
}

type coProcessOp[A, B, OUT any] struct {
	plainOut[OUT]
	endBoth
	fn CoProcessFunction[A, B, OUT]
}

func (o *coProcessOp[A, B, OUT]) Open() error  { return openFn(o.fn, &o.opBase, o.rc) }
func (o *coProcessOp[A, B, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

func (o *coProcessOp[A, B, OUT]) ProcessBatch1(recs []engine.Record[A]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v A) error { return o.fn.ProcessElement1(v, &o.opContext, &o.col) })
}

func (o *coProcessOp[A, B, OUT]) ProcessBatch2(recs []engine.Record[B]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v B) error { return o.fn.ProcessElement2(v, &o.opContext, &o.col) })
}

func (o *coProcessOp[A, B, OUT]) EndInput1() error { return o.end(0, o.out) }
func (o *coProcessOp[A, B, OUT]) EndInput2() error { return o.end(1, o.out) }

// CoProcess processes two connected non-keyed streams with one function
// instance per subtask; its watermark is the minimum of both inputs'.
func CoProcess[A, B, OUT any](cs ConnectedStreams[A, B], fn CoProcessFunction[A, B, OUT]) DataStream[OUT] {
	if isNil(fn) {
		cs.first.env.fail(fmt.Errorf("operator %q: %w", "CoProcess", nilFnError("co-process function")))
	}
	return twoInput(cs.first, cs.second, "CoProcess", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[A, B], engine.Lifecycle, error) {
		o := &coProcessOp[A, B, OUT]{plainOut: newPlainOut(bc, out), fn: cloneFunction(fn)}
		return o, o, nil
	})
}

type keyedCoProcessOp[K comparable, A, B, OUT any] struct {
	keyedOut[K, OUT]
	endBoth
	fn   KeyedCoProcessFunction[K, A, B, OUT]
	keyA func(A) K
	keyB func(B) K
}

func (o *keyedCoProcessOp[K, A, B, OUT]) Open() error  { return openKeyed[K](o.fn, &o.keyedBase) }
func (o *keyedCoProcessOp[K, A, B, OUT]) Close() error { return closeKeyed(o.fn, &o.keyedBase) }

func (o *keyedCoProcessOp[K, A, B, OUT]) ProcessBatch1(recs []engine.Record[A]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v A) error {
		o.SetKey(o.keyA(v))
		return o.fn.ProcessElement1(v, &o.keyedBase, &o.col)
	})
}

func (o *keyedCoProcessOp[K, A, B, OUT]) ProcessBatch2(recs []engine.Record[B]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v B) error {
		o.SetKey(o.keyB(v))
		return o.fn.ProcessElement2(v, &o.keyedBase, &o.col)
	})
}

func (o *keyedCoProcessOp[K, A, B, OUT]) EndInput1() error { return o.end(0, o.out) }
func (o *keyedCoProcessOp[K, A, B, OUT]) EndInput2() error { return o.end(1, o.out) }

// KeyedCoProcess processes two connected keyed streams with keyed state and
// timers. ProcessElement1, ProcessElement2 and OnTimer of one subtask run
// serially on one goroutine.
func KeyedCoProcess[K comparable, A, B, OUT any](ks KeyedConnectedStreams[K, A, B], fn KeyedCoProcessFunction[K, A, B, OUT]) DataStream[OUT] {
	if isNil(fn) {
		ks.first.ds.env.fail(fmt.Errorf("operator %q: %w", "KeyedCoProcess", nilFnError("keyed co-process function")))
	}
	return twoInput(ks.first.ds, ks.second.ds, "KeyedCoProcess", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.TwoInput[A, B], engine.Lifecycle, error) {
		o := &keyedCoProcessOp[K, A, B, OUT]{keyedOut: keyedOut[K, OUT]{keyedBase: newKeyedBase(bc, ks.first.hashK)}, fn: cloneFunction(fn),
			keyA: ks.first.key, keyB: ks.second.key}
		o.init(out, ks.first.ds.env.keyedStateBackend(), func(ts int64) error { return o.fn.OnTimer(ts, &o.keyedBase, &o.col) })
		return o, o, nil
	})
}

// keyedState returns the state handle S of d, checked by validate: made
// by onDisk when the function's state is on disk, else by onHeap.
func keyedState[K comparable, S, D, HD, HH any](ctx KeyedRuntimeContext[K], d D, validate func() error,
	onDisk func(*kvstate.Backend[K], D) (HD, error), onHeap func(*istate.Backend[K], D) (HH, error)) (S, error) {
	if err := validate(); err != nil {
		var zero S
		return zero, err
	}
	if pb := diskBackendOf(ctx); pb != nil {
		return handleOf[S](onDisk(pb, d))
	}
	h, err := onHeap(ctx.keyedBackend(), d)
	return any(h).(S), err
}

// GetValueState returns the value state of d for the function's current key.
func GetValueState[K comparable, V any](ctx KeyedRuntimeContext[K], d state.ValueDescriptor[V]) (state.ValueState[V], error) {
	return keyedState[K, state.ValueState[V]](ctx, d, d.Validate, kvstate.GetValue[K, void, V], istate.GetValue[K, void, V])
}

// GetListState returns the list state of d for the current key.
func GetListState[K comparable, V any](ctx KeyedRuntimeContext[K], d state.ListDescriptor[V]) (state.ListState[V], error) {
	return keyedState[K, state.ListState[V]](ctx, d, d.Validate, kvstate.GetList[K, void, V], istate.GetList[K, void, V])
}

// GetMapState returns the map state of d for the current key.
func GetMapState[K comparable, UK comparable, UV any](ctx KeyedRuntimeContext[K], d state.MapDescriptor[UK, UV]) (state.MapState[UK, UV], error) {
	return keyedState[K, state.MapState[UK, UV]](ctx, d, d.Validate, kvstate.GetMap[K, void, UK, UV], istate.GetMap[K, void, UK, UV])
}

// GetReducingState returns the reducing state of d for the current key.
func GetReducingState[K comparable, V any](ctx KeyedRuntimeContext[K], d state.ReducingDescriptor[V]) (state.ReducingState[V], error) {
	return keyedState[K, state.ReducingState[V]](ctx, d, d.Validate, kvstate.GetReducing[K, void, V], istate.GetReducing[K, void, V])
}

// GetAggregatingState returns the aggregating state of d for the current key.
func GetAggregatingState[K comparable, IN, ACC, OUT any](ctx KeyedRuntimeContext[K], d state.AggregatingDescriptor[IN, ACC, OUT]) (state.AggregatingState[IN, OUT], error) {
	return keyedState[K, state.AggregatingState[IN, OUT]](ctx, d, d.Validate,
		kvstate.GetAggregating[K, void, IN, ACC, OUT], istate.GetAggregating[K, void, IN, ACC, OUT])
}
