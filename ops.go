package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/basicop"
	"github.com/weirstream/weir/internal/engine"
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
	(&basicop.Base{Name: b.name, Subtask: b.subtask}).Settle(r, err)
}

func base(bc *engine.BuildContext) opBase { return opBase{name: bc.Name, subtask: bc.Subtask} }

// Map applies f to every record.
func Map[IN, OUT any](ds DataStream[IN], f func(IN) OUT) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Map", nilFnError("map function")))
	}
	return oneInput(ds, "Map", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		return &basicop.Map[IN, OUT]{Base: basicop.NewBase(bc), ForwardControl: basicop.ForwardControl[OUT]{Out: out}, F: f}, nil, nil
	})
}

// Filter keeps the records for which f returns true.
func Filter[T any](ds DataStream[T], f func(T) bool) DataStream[T] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Filter", nilFnError("filter function")))
	}
	return oneInput(ds, "Filter", func(bc *engine.BuildContext, out *engine.Output[T]) (engine.Input[T], engine.Lifecycle, error) {
		return &basicop.Filter[T]{Base: basicop.NewBase(bc), ForwardControl: basicop.ForwardControl[T]{Out: out}, F: f}, nil, nil
	})
}

// collector emits with a timestamp chosen by the operator.
type collector[T any] struct {
	out *engine.Output[T]
	ts  int64
}

func (c *collector[T]) Collect(v T) { c.out.Collect(v, c.ts) }

// FlatMap calls f with every record; f emits zero or more records.
func FlatMap[IN, OUT any](ds DataStream[IN], f func(v IN, out Collector[OUT]) error) DataStream[OUT] {
	if f == nil {
		ds.env.fail(fmt.Errorf("operator %q: %w", "FlatMap", nilFnError("flatMap function")))
	}
	return oneInput(ds, "FlatMap", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		o := &basicop.FlatMap[IN, OUT, Collector[OUT]]{Base: basicop.NewBase(bc), ForwardControl: basicop.ForwardControl[OUT]{Out: out}, F: f}
		o.Col.Out = out
		o.C = &o.Col
		return o, nil, nil
	})
}

// oneInput adds a one-input operator fed by ds.
func oneInput[IN, OUT any](ds DataStream[IN], name string,
	mk func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error)) DataStream[OUT] {
	n := newNode[OUT](ds.env, name, engine.KindOneInput, ds.env.cfg.parallelism,
		func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Built, error) {
			in, life, err := mk(bc, out)
			if err != nil {
				return engine.Built{}, err
			}
			return engine.Built{Inputs: []any{in}, Life: life}, nil
		})
	ds.connect(n, 0)
	return streamOf[OUT](ds.env, n)
}

// opContext implements Context (and the keyed contexts) for one operator.
type opContext struct {
	opBase
	ts      int64
	wm      int64
	sides   map[string]engine.OutputPort
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

// eachRecord is the ProcessBatch of the process operators: it calls fn
// with every record of recs (which sets the current key, if any, and calls
// the user function) at the record's timestamp, and stops at the first
// error of fn or of a side output.
func eachRecord[T, OUT any](c *opContext, col *collector[OUT], recs []engine.Record[T], fn func(v T) error) (err error) {
	defer c.catch(&err)
	for i := range recs {
		c.ts, col.ts = recs[i].TS, recs[i].TS
		if err := fn(recs[i].Value); err != nil {
			return err
		}
		if c.sideErr != nil {
			return c.takeSideErr()
		}
	}
	return col.out.Err()
}

func newOpContext(bc *engine.BuildContext) opContext {
	return opContext{opBase: base(bc), wm: engine.NoTimestamp, sides: bc.Sides, now: bc.Time.Now}
}

// plainOut is a non-keyed operator with its output and the runtime
// context of its function.
type plainOut[OUT any] struct {
	opContext
	out *engine.Output[OUT]
	col collector[OUT]
	rc  runtimeCtx
}

func newPlainOut[OUT any](bc *engine.BuildContext, out *engine.Output[OUT]) plainOut[OUT] {
	return plainOut[OUT]{opContext: newOpContext(bc), out: out, col: collector[OUT]{out: out}, rc: newRuntimeCtx(bc)}
}

func (o *plainOut[OUT]) ProcessWatermark(wm int64) error {
	o.wm = wm
	return o.out.EmitWatermark(wm)
}

func (o *plainOut[OUT]) ProcessStatus(idle bool) error { return o.out.EmitStatus(idle) }

type processOp[IN, OUT any] struct {
	plainOut[OUT]
	basicop.FilterGuard
	self basicop.Base // opBase, for CatchFiltered
	fn   ProcessFunction[IN, OUT]
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *processOp[IN, OUT]) ProcessFiltered(recs []engine.Record[IN], keep func(IN) bool, filter *basicop.Base) (kept int, err error) {
	defer o.CatchFiltered(&err, &o.self, filter)
	for i := range recs {
		r := &recs[i]
		if !basicop.KeepOne(&o.FilterGuard, keep, r.Value) {
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

func (o *processOp[IN, OUT]) Open() error  { return openFn(o.fn, &o.opBase, o.rc) }
func (o *processOp[IN, OUT]) Close() error { return closeFn(o.fn, &o.opBase) }

func (o *processOp[IN, OUT]) ProcessBatch(recs []engine.Record[IN]) error {
	return eachRecord(&o.opContext, &o.col, recs, func(v IN) error { return o.fn.ProcessElement(v, &o.opContext, &o.col) })
}

func (o *processOp[IN, OUT]) EndInput() error { return o.out.End() }

// ProcessStream applies a ProcessFunction to a non-keyed stream. The function may
// emit to side outputs; it has no timers or keyed state (use KeyBy).
func ProcessStream[IN, OUT any](ds DataStream[IN], fn ProcessFunction[IN, OUT]) DataStream[OUT] {
	if isNil(fn) {
		ds.env.fail(fmt.Errorf("operator %q: %w", "Process", nilFnError("process function")))
	}
	return oneInput(ds, "Process", func(bc *engine.BuildContext, out *engine.Output[OUT]) (engine.Input[IN], engine.Lifecycle, error) {
		o := &processOp[IN, OUT]{plainOut: newPlainOut(bc, out), self: basicop.NewBase(bc), fn: cloneFunction(fn)}
		return o, o, nil
	})
}
