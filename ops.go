package weir

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/weirstream/weir/internal/runtime"
)

// opBase carries an operator's identity for error reports.
type opBase struct {
	name    string
	subtask int
}

// catch is deferred by every operator method that calls user code: it turns
// a panic into an OperatorError with the stack, and names the operator in a
// returned error.
func (b *opBase) catch(err *error) { b.settle(recover(), err) }

// settle is catch's work on what recover returned (r).
func (b *opBase) settle(r any, err *error) {
	if r != nil {
		e, ok := r.(error)
		if !ok {
			e = fmt.Errorf("%v", r)
		}
		*err = &runtime.OperatorError{Operator: b.name, Subtask: b.subtask, Err: e, Stack: string(debug.Stack())}
		return
	}
	if *err != nil {
		var oe *runtime.OperatorError
		if !errors.As(*err, &oe) {
			*err = &runtime.OperatorError{Operator: b.name, Subtask: b.subtask, Err: *err}
		}
	}
}

func base(bc *runtime.BuildContext) opBase { return opBase{name: bc.Name, subtask: bc.Subtask} }

// forwardControl passes watermarks, statuses and the end of input on.
type forwardControl[OUT any] struct {
	out *runtime.Output[OUT]
}

func (f forwardControl[OUT]) ProcessWatermark(wm int64) error { return f.out.EmitWatermark(wm) }
func (f forwardControl[OUT]) ProcessStatus(idle bool) error   { return f.out.EmitStatus(idle) }
func (f forwardControl[OUT]) EndInput() error                 { return f.out.End() }

type mapOp[IN, OUT any] struct {
	opBase
	forwardControl[OUT]
	filterGuard
	f func(IN) OUT
}

// filterGuard is embedded by the operators that implement filteredInput:
// inFilter is set while ProcessFiltered runs the chained filter's
// predicate, so that its panic is reported against the filter.
type filterGuard struct {
	inFilter bool
}

// keepOne runs the chained filter's predicate keep on v under g.
func keepOne[T any](g *filterGuard, keep func(T) bool, v T) bool {
	g.inFilter = true
	ok := keep(v)
	g.inFilter = false
	return ok
}

// catchFiltered is deferred by ProcessFiltered: catch of the operator own,
// naming the filter instead if its predicate panicked.
func (g *filterGuard) catchFiltered(err *error, own, filter *opBase) {
	r := recover()
	if g.inFilter {
		g.inFilter = false
		filter.settle(r, err)
		return
	}
	own.settle(r, err)
}

// filteredInput is implemented by operators that a Filter chained before
// them can hand its input batch together with its predicate, instead of
// copying the records it keeps into a batch of its own: the operator
// evaluates the predicate on each record and processes the record if it
// is kept, so the two make one pass over the batch and one copy, record
// at a time (as Flink's chained operators). It returns how many records
// were kept; filter names the filter in a panic of the predicate.
type filteredInput[T any] interface {
	ProcessFiltered(recs []runtime.Record[T], keep func(T) bool, filter *opBase) (kept int, err error)
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *mapOp[IN, OUT]) ProcessFiltered(recs []runtime.Record[IN], keep func(IN) bool, filter *opBase) (kept int, err error) {
	defer o.catchFiltered(&err, &o.opBase, filter)
	out, f := o.out, o.f
	for len(recs) > 0 {
		dst := out.Space()
		k, i := 0, 0
		for ; i < len(recs) && k < len(dst); i++ {
			r := &recs[i]
			if keepOne(&o.filterGuard, keep, r.Value) {
				dst[k] = runtime.Record[OUT]{Value: f(r.Value), TS: r.TS}
				k++
			}
		}
		out.Advance(k)
		kept += k
		recs = recs[i:]
	}
	return kept, out.Err()
}

func (o *mapOp[IN, OUT]) ProcessBatch(recs []runtime.Record[IN]) (err error) {
	defer o.catch(&err)
	out, f := o.out, o.f
	for len(recs) > 0 {
		dst := out.Space()
		n := min(len(dst), len(recs))
		for i, r := range recs[:n] {
			dst[i] = runtime.Record[OUT]{Value: f(r.Value), TS: r.TS}
		}
		out.Advance(n)
		recs = recs[n:]
	}
	return out.Err()
}

// Map applies f to every record.
func Map[IN, OUT any](ds DataStream[IN], f func(IN) OUT) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Map", nilFnError("map function")))
	}
	return oneInput(ds, "Map", func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Input[IN], runtime.Lifecycle, error) {
		return &mapOp[IN, OUT]{opBase: base(bc), forwardControl: forwardControl[OUT]{out}, f: f}, nil, nil
	})
}

type filterOp[T any] struct {
	opBase
	forwardControl[T]
	f func(T) bool
	// next is the chained consumer that runs the predicate itself
	// (filteredInput), set on the first batch.
	next    filteredInput[T]
	checked bool
}

func (o *filterOp[T]) ProcessBatch(recs []runtime.Record[T]) (err error) {
	if !o.checked {
		o.next, _ = o.out.Target().(filteredInput[T])
		o.checked = true
	}
	if o.next != nil {
		return o.handOn(recs)
	}
	defer o.catch(&err)
	out, f := o.out, o.f
	for len(recs) > 0 {
		dst := out.Space()
		k, i := 0, 0
		for ; i < len(recs) && k < len(dst); i++ {
			if f(recs[i].Value) {
				dst[k] = recs[i]
				k++
			}
		}
		out.Advance(k)
		recs = recs[i:]
	}
	return out.Err()
}

// handOn hands recs and the predicate to the next operator.
func (o *filterOp[T]) handOn(recs []runtime.Record[T]) error {
	if err := o.out.Flush(); err != nil {
		return err
	}
	kept, err := o.next.ProcessFiltered(recs, o.f, &o.opBase)
	o.out.Handed(kept)
	return err
}

// Filter keeps the records for which f returns true.
func Filter[T any](ds DataStream[T], f func(T) bool) DataStream[T] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Filter", nilFnError("filter function")))
	}
	return oneInput(ds, "Filter", func(bc *runtime.BuildContext, out *runtime.Output[T]) (runtime.Input[T], runtime.Lifecycle, error) {
		return &filterOp[T]{opBase: base(bc), forwardControl: forwardControl[T]{out}, f: f}, nil, nil
	})
}

// collector emits with a timestamp chosen by the operator.
type collector[T any] struct {
	out *runtime.Output[T]
	ts  int64
}

func (c *collector[T]) Collect(v T) { c.out.Collect(v, c.ts) }

type flatMapOp[IN, OUT any] struct {
	opBase
	forwardControl[OUT]
	filterGuard
	f   func(IN, Collector[OUT]) error
	col collector[OUT]
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *flatMapOp[IN, OUT]) ProcessFiltered(recs []runtime.Record[IN], keep func(IN) bool, filter *opBase) (kept int, err error) {
	defer o.catchFiltered(&err, &o.opBase, filter)
	for i := range recs {
		r := &recs[i]
		if !keepOne(&o.filterGuard, keep, r.Value) {
			continue
		}
		kept++
		o.col.ts = r.TS
		if err := o.f(r.Value, &o.col); err != nil {
			return kept, err
		}
	}
	return kept, o.out.Err()
}

func (o *flatMapOp[IN, OUT]) ProcessBatch(recs []runtime.Record[IN]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.col.ts = recs[i].TS
		if err := o.f(recs[i].Value, &o.col); err != nil {
			return err
		}
	}
	return o.out.Err()
}

// FlatMap calls f with every record; f emits zero or more records.
func FlatMap[IN, OUT any](ds DataStream[IN], f func(v IN, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "FlatMap", nilFnError("flatMap function")))
	}
	return oneInput(ds, "FlatMap", func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Input[IN], runtime.Lifecycle, error) {
		o := &flatMapOp[IN, OUT]{opBase: base(bc), forwardControl: forwardControl[OUT]{out}, f: f}
		o.col.out = out
		return o, nil, nil
	})
}

// oneInput adds a one-input operator fed by ds.
func oneInput[IN, OUT any](ds DataStream[IN], name string,
	mk func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Input[IN], runtime.Lifecycle, error)) DataStream[OUT] {
	n := newNode[OUT](ds.env, name, runtime.KindOneInput, ds.env.cfg.parallelism,
		func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Built, error) {
			in, life, err := mk(bc, out)
			if err != nil {
				return runtime.Built{}, err
			}
			return runtime.Built{Inputs: []any{in}, Life: life}, nil
		})
	ds.connect(n, 0)
	return streamOf[OUT](ds.env, n)
}

// opContext implements Context (and the keyed contexts) for one operator.
type opContext struct {
	opBase
	ts      int64
	wm      int64
	sides   map[string]runtime.OutputPort
	now     func() int64
	sideErr error
}

func (c *opContext) Timestamp() (int64, bool) {
	if c.ts == NoTimestamp {
		return 0, false
	}
	return c.ts, true
}
func (c *opContext) CurrentWatermark() int64      { return c.wm }
func (c *opContext) CurrentProcessingTime() int64 { return c.now() }
func (c *opContext) emitSide(id string, v any) {
	p := c.sides[id]
	if p == nil {
		return
	}
	if err := p.EmitAny(v, c.ts); err != nil && c.sideErr == nil {
		c.sideErr = fmt.Errorf("side output %q: %w", id, err)
	}
}

func (c *opContext) takeSideErr() error {
	err := c.sideErr
	c.sideErr = nil
	return err
}

func newOpContext(bc *runtime.BuildContext) opContext {
	return opContext{opBase: base(bc), wm: runtime.NoTimestamp, sides: bc.Sides, now: bc.Time.Now}
}

type processOp[IN, OUT any] struct {
	opContext
	filterGuard
	fn  ProcessFunction[IN, OUT]
	out *runtime.Output[OUT]
	col collector[OUT]
	rc  runtimeCtx
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *processOp[IN, OUT]) ProcessFiltered(recs []runtime.Record[IN], keep func(IN) bool, filter *opBase) (kept int, err error) {
	defer o.catchFiltered(&err, &o.opBase, filter)
	for i := range recs {
		r := &recs[i]
		if !keepOne(&o.filterGuard, keep, r.Value) {
			continue
		}
		kept++
		o.ts, o.col.ts = r.TS, r.TS
		if err := o.fn.ProcessElement(r.Value, &o.opContext, &o.col); err != nil {
			return kept, err
		}
		if err := o.takeSideErr(); err != nil {
			return kept, err
		}
	}
	return kept, o.out.Err()
}

func (o *processOp[IN, OUT]) Open() (err error) {
	defer o.catch(&err)
	if op, ok := o.fn.(Opener); ok {
		return op.Open(o.rc)
	}
	return nil
}

func (o *processOp[IN, OUT]) Close() (err error) {
	defer o.catch(&err)
	if c, ok := o.fn.(Closer); ok {
		return c.Close()
	}
	return nil
}

func (o *processOp[IN, OUT]) ProcessBatch(recs []runtime.Record[IN]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		o.ts, o.col.ts = recs[i].TS, recs[i].TS
		if err := o.fn.ProcessElement(recs[i].Value, &o.opContext, &o.col); err != nil {
			return err
		}
		if err := o.takeSideErr(); err != nil {
			return err
		}
	}
	return o.out.Err()
}

func (o *processOp[IN, OUT]) ProcessWatermark(wm int64) error {
	o.wm = wm
	return o.out.EmitWatermark(wm)
}
func (o *processOp[IN, OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }
func (o *processOp[IN, OUT]) EndInput() error               { return o.out.End() }

// ProcessStream applies a ProcessFunction to a non-keyed stream. The function may
// emit to side outputs; it has no timers or keyed state (use KeyBy).
func ProcessStream[IN, OUT any](ds DataStream[IN], fn ProcessFunction[IN, OUT]) DataStream[OUT] {
	if isNil(fn) {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Process", nilFnError("process function")))
	}
	return oneInput(ds, "Process", func(bc *runtime.BuildContext, out *runtime.Output[OUT]) (runtime.Input[IN], runtime.Lifecycle, error) {
		o := &processOp[IN, OUT]{opContext: newOpContext(bc), fn: cloneFunction(fn), out: out}
		o.col.out = out
		o.rc = newRuntimeCtx(bc)
		return o, o, nil
	})
}
