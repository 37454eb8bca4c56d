// Package basicop holds the stateless record-at-a-time operators of the
// root package (Map, Filter, FlatMap, MapErr, FlatMapErr) and the
// protocol by which a Filter hands its batch and predicate to the
// operator chained after it.
package basicop

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/weirstream/weir/internal/engine"
)

// Base carries an operator's identity for error reports.
type Base struct {
	Name    string
	Subtask int
}

// NewBase returns the identity of the operator bc builds.
func NewBase(bc *engine.BuildContext) Base { return Base{Name: bc.Name, Subtask: bc.Subtask} }

// Catch is deferred by every operator method that calls user code: it
// turns a panic into an OperatorError with the stack, and names the
// operator in a returned error.
func (b *Base) Catch(err *error) { b.Settle(recover(), err) }

// Settle is Catch's work on what recover returned (r).
func (b *Base) Settle(r any, err *error) {
	if r != nil {
		e, ok := r.(error)
		if !ok {
			e = fmt.Errorf("%v", r)
		}
		*err = &engine.OperatorError{Operator: b.Name, Subtask: b.Subtask, Err: e, Stack: string(debug.Stack())}
		return
	}
	if *err != nil {
		var oe *engine.OperatorError
		if !errors.As(*err, &oe) {
			*err = &engine.OperatorError{Operator: b.Name, Subtask: b.Subtask, Err: *err}
		}
	}
}

// ForwardControl passes watermarks, statuses and the end of input on.
type ForwardControl[OUT any] struct {
	Out *engine.Output[OUT]
}

// ProcessWatermark implements engine.Input.
func (f ForwardControl[OUT]) ProcessWatermark(wm int64) error { return f.Out.EmitWatermark(wm) }

// ProcessStatus implements engine.Input.
func (f ForwardControl[OUT]) ProcessStatus(idle bool) error { return f.Out.EmitStatus(idle) }

// EndInput implements engine.Input.
func (f ForwardControl[OUT]) EndInput() error { return f.Out.End() }

// FilterGuard is embedded by the operators that implement FilteredInput:
// inFilter is set while ProcessFiltered runs the chained filter's
// predicate, so that its panic is reported against the filter.
type FilterGuard struct {
	inFilter bool
}

// KeepOne runs the chained filter's predicate keep on v under g.
func KeepOne[T any](g *FilterGuard, keep func(T) bool, v T) bool {
	g.inFilter = true
	ok := keep(v)
	g.inFilter = false
	return ok
}

// CatchFiltered is deferred by ProcessFiltered: Catch of the operator
// own, naming the filter instead if its predicate panicked.
func (g *FilterGuard) CatchFiltered(err *error, own, filter *Base) {
	r := recover()
	if g.inFilter {
		g.inFilter = false
		filter.Settle(r, err)
		return
	}
	own.Settle(r, err)
}

// FilteredInput is implemented by operators that a Filter chained before
// them can hand its input batch together with its predicate, instead of
// copying the records it keeps into a batch of its own: the operator
// evaluates the predicate on each record and processes the record if it
// is kept, so the two make one pass over the batch and one copy, record
// at a time (as Flink's chained operators). It returns how many records
// were kept; filter names the filter in a panic of the predicate.
type FilteredInput[T any] interface {
	ProcessFiltered(recs []engine.Record[T], keep func(T) bool, filter *Base) (kept int, err error)
}

// Map applies F to every record.
type Map[IN, OUT any] struct {
	Base
	ForwardControl[OUT]
	FilterGuard
	F func(IN) OUT
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *Map[IN, OUT]) ProcessFiltered(recs []engine.Record[IN], keep func(IN) bool, filter *Base) (kept int, err error) {
	defer o.CatchFiltered(&err, &o.Base, filter)
	out, f := o.Out, o.F
	for len(recs) > 0 {
		dst := out.Space()
		k, i := 0, 0
		for ; i < len(recs) && k < len(dst); i++ {
			r := &recs[i]
			if KeepOne(&o.FilterGuard, keep, r.Value) {
				dst[k] = engine.Record[OUT]{Value: f(r.Value), TS: r.TS}
				k++
			}
		}
		out.Advance(k)
		kept += k
		recs = recs[i:]
	}
	return kept, out.Err()
}

// ProcessBatch implements engine.Input.
func (o *Map[IN, OUT]) ProcessBatch(recs []engine.Record[IN]) (err error) {
	defer o.Catch(&err)
	out, f := o.Out, o.F
	for len(recs) > 0 {
		dst := out.Space()
		n := min(len(dst), len(recs))
		for i, r := range recs[:n] {
			dst[i] = engine.Record[OUT]{Value: f(r.Value), TS: r.TS}
		}
		out.Advance(n)
		recs = recs[n:]
	}
	return out.Err()
}

// Filter keeps the records for which F returns true.
type Filter[T any] struct {
	Base
	ForwardControl[T]
	F func(T) bool
	// next is the chained consumer that runs the predicate itself
	// (FilteredInput), set on the first batch.
	next    FilteredInput[T]
	checked bool
}

// ProcessBatch implements engine.Input.
func (o *Filter[T]) ProcessBatch(recs []engine.Record[T]) (err error) {
	if !o.checked {
		o.next, _ = o.Out.Target().(FilteredInput[T])
		o.checked = true
	}
	if o.next != nil {
		return o.handOn(recs)
	}
	defer o.Catch(&err)
	out, f := o.Out, o.F
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
func (o *Filter[T]) handOn(recs []engine.Record[T]) error {
	if err := o.Out.Flush(); err != nil {
		return err
	}
	kept, err := o.next.ProcessFiltered(recs, o.F, &o.Base)
	o.Out.Handed(kept)
	return err
}

// Collector emits with the timestamp TS chosen by the operator.
type Collector[T any] struct {
	Out *engine.Output[T]
	TS  int64
}

// Collect emits v at TS.
func (c *Collector[T]) Collect(v T) { c.Out.Collect(v, c.TS) }

// FlatMap calls F with every record and the collector C (the root's
// Collector interface holding Col), which emits at the record's
// timestamp.
type FlatMap[IN, OUT, C any] struct {
	Base
	ForwardControl[OUT]
	FilterGuard
	F   func(IN, C) error
	Col Collector[OUT]
	C   C
}

// ProcessFiltered is ProcessBatch on the records of recs that keep keeps.
func (o *FlatMap[IN, OUT, C]) ProcessFiltered(recs []engine.Record[IN], keep func(IN) bool, filter *Base) (kept int, err error) {
	defer o.CatchFiltered(&err, &o.Base, filter)
	for i := range recs {
		r := &recs[i]
		if !KeepOne(&o.FilterGuard, keep, r.Value) {
			continue
		}
		kept++
		o.Col.TS = r.TS
		if err := o.F(r.Value, o.C); err != nil {
			return kept, err
		}
	}
	return kept, o.Out.Err()
}

// ProcessBatch implements engine.Input.
func (o *FlatMap[IN, OUT, C]) ProcessBatch(recs []engine.Record[IN]) (err error) {
	defer o.Catch(&err)
	for i := range recs {
		o.Col.TS = recs[i].TS
		if err := o.F(recs[i].Value, o.C); err != nil {
			return err
		}
	}
	return o.Out.Err()
}
