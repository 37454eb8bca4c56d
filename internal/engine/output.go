package engine

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/weirstream/weir/internal/invariants"
	"github.com/weirstream/weir/internal/watermark"
)

// OutputPort is the type-erased face of an Output, used by the plan to wire
// outputs and by the task to flush them.
type OutputPort interface {
	// AddTarget connects a consumer; target must be an Input of the
	// output's element type.
	AddTarget(target any) error
	// Flush hands buffered records to the targets.
	Flush() error
	EmitWatermark(wm int64) error
	EmitStatus(idle bool) error
	// End flushes and ends every target's input.
	End() error
	// EmitAny buffers a record given as any; it fails if v has the wrong type.
	EmitAny(v any, ts int64) error
	// Counted returns the number of records that left this output.
	Counted() int64
	// OutputWatermark returns the latest watermark the output forwarded
	// (watermark.Min before the first) and OutputIdle whether it has
	// announced IDLE; both are safe to call from any goroutine (metrics).
	OutputWatermark() int64
	OutputIdle() bool
	// AddSibling makes this output pass its watermarks, statuses and end
	// on to a side output of the same operator.
	AddSibling(side OutputPort)
}

// Output buffers the records an operator emits and hands them to its
// targets (chained operators, exchange writers, sinks) in batches. It keeps
// Flink's output-side rule: while the output has announced IDLE, watermarks
// are dropped. A status is forwarded only when it changes.
type Output[T any] struct {
	buf      []Record[T]
	size     int
	ptrs     bool // records hold pointers: clear buffers after use
	targets  []Input[T]
	idle     bool
	err      error
	count    atomic.Int64
	siblings []OutputPort
	// The latest watermark emitted, if emitted (the invariants build tag).
	lastWM  int64
	emitted bool
	// What OutputWatermark and OutputIdle read: stored once per
	// watermark or status change, never per record.
	wmOut   atomic.Int64
	idleOut atomic.Bool
}

// AddSibling implements OutputPort.
func (o *Output[T]) AddSibling(side OutputPort) { o.siblings = append(o.siblings, side) }

// NewOutput returns an output whose batches hold up to batchSize records.
// The buffer is allocated when the first target connects, so an output
// nobody consumes costs one failed capacity check per record.
func NewOutput[T any](batchSize int) *Output[T] {
	o := &Output[T]{size: max(batchSize, 1), buf: make([]Record[T], 0, 1), ptrs: hasPointers(reflect.TypeFor[T]())}
	o.wmOut.Store(watermark.Min)
	return o
}

// AddTarget implements OutputPort.
func (o *Output[T]) AddTarget(target any) error {
	in, ok := target.(Input[T])
	if !ok {
		var zero T
		return fmt.Errorf("runtime: cannot connect an output of %T to %T", zero, target)
	}
	o.targets = append(o.targets, in)
	if cap(o.buf) < o.size {
		o.buf = make([]Record[T], 0, o.size)
	}
	return nil
}

// Collect buffers one record. A failure of a downstream consumer is kept
// and reported by the next Flush (or Err).
func (o *Output[T]) Collect(v T, ts int64) {
	if len(o.buf) == cap(o.buf) {
		o.makeRoom()
	}
	o.buf = append(o.buf, Record[T]{Value: v, TS: ts})
}

// Target returns the output's only target, or nil when it has none or
// several: an operator may hand its one chained consumer records directly
// rather than copying them into the output (then it flushes the output
// first and reports them with Handed).
func (o *Output[T]) Target() Input[T] {
	if len(o.targets) == 1 {
		return o.targets[0]
	}
	return nil
}

// Handed counts n records an operator passed to Target itself, for the
// records-out metric.
func (o *Output[T]) Handed(n int) { o.count.Add(int64(n)) }

// Space returns the free tail of the buffer, flushing first if it is full;
// an operator writes records into it and then calls Advance with how many
// it wrote. It is the batch form of Collect.
func (o *Output[T]) Space() []Record[T] {
	if len(o.buf) == cap(o.buf) {
		o.makeRoom()
	}
	return o.buf[len(o.buf):cap(o.buf)]
}

// Advance commits n records written into the slice Space returned.
func (o *Output[T]) Advance(n int) {
	o.buf = o.buf[:len(o.buf)+n]
	if len(o.buf) == cap(o.buf) {
		o.makeRoom()
	}
}

// makeRoom empties the buffer: flushed to the targets, or dropped when
// there are none.
func (o *Output[T]) makeRoom() {
	if len(o.targets) == 0 {
		clearRecords(o.buf, o.ptrs)
		o.buf = o.buf[:0]
		return
	}
	if err := o.Flush(); err != nil {
		if o.err == nil {
			o.err = err
		}
		o.buf = o.buf[:0]
	}
}

// CollectBatch emits records that keep their timestamps. When nothing is
// buffered the batch goes to the targets as is, without a copy.
func (o *Output[T]) CollectBatch(recs []Record[T]) {
	if len(o.targets) == 0 || len(recs) == 0 || o.err != nil {
		return
	}
	if len(o.buf) > 0 {
		if err := o.Flush(); err != nil {
			return
		}
	}
	o.count.Add(int64(len(recs)))
	var sum uint64
	var seed maphash.Seed
	if invariants.Enabled {
		seed = maphash.MakeSeed()
		sum = batchSum(seed, recs)
	}
	for _, t := range o.targets {
		if err := t.ProcessBatch(recs); err != nil {
			o.err = err
			return
		}
		if invariants.Enabled && batchSum(seed, recs) != sum {
			invariants.Violated("output: %T changed a batch handed on to it (%d records of %T)", t, len(recs), recs)
		}
	}
}

// batchSum hashes the bytes of recs: a batch handed on as it is
// (CollectBatch: a source's, possibly a view of memory other jobs read
// too) must come back from every target unchanged.
func batchSum[T any](seed maphash.Seed, recs []Record[T]) uint64 {
	if len(recs) == 0 {
		return 0
	}
	n := len(recs) * int(unsafe.Sizeof(recs[0]))
	return maphash.Bytes(seed, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(recs))), n))
}

// Err returns the first error a flush triggered by Collect met.
func (o *Output[T]) Err() error { return o.err }

// Flush implements OutputPort.
func (o *Output[T]) Flush() error {
	if o.err != nil {
		return o.err
	}
	if len(o.buf) == 0 {
		return nil
	}
	if len(o.targets) == 0 {
		clearRecords(o.buf, o.ptrs)
		o.buf = o.buf[:0]
		return nil
	}
	o.count.Add(int64(len(o.buf)))
	for _, t := range o.targets {
		if err := t.ProcessBatch(o.buf); err != nil {
			o.err = err
			o.buf = o.buf[:0]
			return err
		}
	}
	clearRecords(o.buf, o.ptrs)
	o.buf = o.buf[:0]
	return nil
}

// EmitWatermark implements OutputPort.
func (o *Output[T]) EmitWatermark(wm int64) error {
	if invariants.Enabled {
		if o.emitted && wm < o.lastWM {
			invariants.Violated("output: watermark %d after %d", wm, o.lastWM)
		}
		o.lastWM, o.emitted = wm, true
	}
	for _, s := range o.siblings {
		if err := s.EmitWatermark(wm); err != nil {
			return err
		}
	}
	if o.idle {
		return nil
	}
	o.wmOut.Store(wm)
	if err := o.Flush(); err != nil {
		return err
	}
	for _, t := range o.targets {
		if err := t.ProcessWatermark(wm); err != nil {
			return err
		}
	}
	return nil
}

// EmitStatus implements OutputPort.
func (o *Output[T]) EmitStatus(idle bool) error {
	for _, s := range o.siblings {
		if err := s.EmitStatus(idle); err != nil {
			return err
		}
	}
	if o.idle == idle {
		return nil
	}
	if err := o.Flush(); err != nil {
		return err
	}
	o.idle = idle
	o.idleOut.Store(idle)
	for _, t := range o.targets {
		if err := t.ProcessStatus(idle); err != nil {
			return err
		}
	}
	return nil
}

// Idle reports whether the output has announced IDLE.
func (o *Output[T]) Idle() bool { return o.idle }

// End implements OutputPort.
func (o *Output[T]) End() error {
	for _, s := range o.siblings {
		if err := s.End(); err != nil {
			return err
		}
	}
	if err := o.Flush(); err != nil {
		return err
	}
	for _, t := range o.targets {
		if err := t.EndInput(); err != nil {
			return err
		}
	}
	return nil
}

// EmitAny implements OutputPort.
func (o *Output[T]) EmitAny(v any, ts int64) error {
	tv, ok := v.(T)
	if !ok {
		var zero T
		return fmt.Errorf("side output expects %T, got %T", zero, v)
	}
	o.Collect(tv, ts)
	return o.err
}

// Counted implements OutputPort.
func (o *Output[T]) Counted() int64 { return o.count.Load() }

// OutputWatermark implements OutputPort.
func (o *Output[T]) OutputWatermark() int64 { return o.wmOut.Load() }

// OutputIdle implements OutputPort.
func (o *Output[T]) OutputIdle() bool { return o.idleOut.Load() }
