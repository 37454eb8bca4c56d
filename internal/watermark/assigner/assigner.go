// Package assigner is the operator of AssignTimestampsAndWatermarks: it
// assigns timestamps and runs a watermark generator in the middle of a
// pipeline, as Flink's TimestampsAndWatermarksOperator.
package assigner

import (
	"math"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/watermark"
)

// Op assigns timestamps and generates watermarks for one subtask: each
// record is emitted before the generator sees it; upstream watermarks are
// dropped except the final maximum one.
type Op[T any] struct {
	out      *engine.Output[T]
	gen      watermark.Generator[T]
	ts       func(T, int64) int64
	emitter  *watermark.Emitter
	pts      engine.ProcessingTimeService
	interval int64
	settle   func(r any, err *error)
	err      error
}

// New returns the operator of one subtask: gen generates its watermarks
// (nil: none), ts assigns timestamps (nil: keep the records'), every
// interval ms of processing time (none if 0) the generator's periodic
// emit runs; settle turns what recover returned and a returned error into
// the operator's error.
func New[T any](out *engine.Output[T], gen watermark.Generator[T], ts func(T, int64) int64,
	pts engine.ProcessingTimeService, interval int64, settle func(r any, err *error)) *Op[T] {
	if gen == nil {
		gen = watermark.None[T]()
	}
	o := &Op[T]{out: out, gen: gen, ts: ts, pts: pts, interval: interval, settle: settle}
	o.emitter = watermark.NewEmitter(func(e watermark.Event) {
		var err error
		if e.IsStatus {
			err = out.EmitStatus(e.Idle)
		} else {
			err = out.EmitWatermark(e.Watermark)
		}
		if err != nil && o.err == nil {
			o.err = err
		}
	})
	return o
}

// Open schedules the first periodic tick.
func (o *Op[T]) Open() error {
	if o.interval > 0 {
		o.pts.Schedule(o.pts.Now()+o.interval, o.tick)
	}
	return nil
}

// Close does nothing.
func (o *Op[T]) Close() error { return nil }

func (o *Op[T]) tick(at int64) (err error) {
	defer func() { o.settle(recover(), &err) }()
	o.gen.OnPeriodicEmit(o.emitter)
	o.pts.Schedule(at+o.interval, o.tick)
	return o.takeErr()
}

func (o *Op[T]) takeErr() error {
	err := o.err
	o.err = nil
	return err
}

// ProcessBatch assigns timestamps, emits the records and shows each to the
// generator after it was emitted.
func (o *Op[T]) ProcessBatch(recs []engine.Record[T]) (err error) {
	defer func() { o.settle(recover(), &err) }()
	for _, r := range recs {
		if o.ts != nil {
			r.TS = o.ts(r.Value, r.TS)
		}
		o.out.Collect(r.Value, r.TS)
		o.gen.OnEvent(r.Value, r.TS, o.emitter)
	}
	if err := o.out.Err(); err != nil {
		return err
	}
	return o.takeErr()
}

// ProcessWatermark swallows upstream watermarks except the final one.
func (o *Op[T]) ProcessWatermark(wm int64) error {
	if wm == math.MaxInt64 && o.emitter.Last() != math.MaxInt64 {
		o.emitter.EmitWatermark(wm)
		return o.takeErr()
	}
	return nil
}

// ProcessStatus swallows upstream statuses.
func (o *Op[T]) ProcessStatus(bool) error { return nil }

// EndInput runs the generator's periodic emit a last time and ends the
// output.
func (o *Op[T]) EndInput() (err error) {
	defer func() { o.settle(recover(), &err) }()
	if o.emitter.Last() != math.MaxInt64 {
		o.gen.OnPeriodicEmit(o.emitter)
	}
	if err := o.takeErr(); err != nil {
		return err
	}
	return o.out.End()
}
