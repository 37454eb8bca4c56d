package weir

import (
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/watermark"
	"github.com/weirstream/weir/internal/watermark/assigner"
)

// WatermarkGenerator generates watermarks from events and on a periodic
// tick, as Flink's WatermarkGenerator; ForGenerator makes a strategy of
// one. A source runs one per split, AssignTimestampsAndWatermarks one per
// subtask; the calls into one generator are serial.
type WatermarkGenerator[T any] interface {
	// OnEvent is called for every event with its timestamp (ms), after
	// the timestamp assigner and after the event was emitted. A
	// punctuated generator emits watermarks here.
	OnEvent(event T, ts int64, out WatermarkOutput)
	// OnPeriodicEmit is called every auto-watermark interval
	// (WithAutoWatermarkInterval) and once at the end of a bounded input.
	// A periodic generator emits its current watermark here.
	OnPeriodicEmit(out WatermarkOutput)
}

// WatermarkOutput receives a generator's watermarks and idleness.
type WatermarkOutput interface {
	// EmitWatermark emits watermark wm; one that does not advance the
	// output's last watermark is dropped.
	EmitWatermark(wm int64)
	// MarkIdle marks the output idle: downstream stops waiting for its
	// watermarks until it emits an advancing watermark or is marked active.
	MarkIdle()
	// MarkActive marks the output active again.
	MarkActive()
}

// MinWatermark is the watermark before any has been emitted.
const MinWatermark int64 = math.MinInt64

// MaxWatermark is the watermark that ends event time.
const MaxWatermark int64 = math.MaxInt64

// WatermarkStrategy tells how to take timestamps from records and generate
// watermarks, at a source or in AssignTimestampsAndWatermarks.
type WatermarkStrategy[T any] struct {
	gen   func() watermark.Generator[T]
	ts    func(v T, recordTS int64) int64
	idle  time.Duration
	align *engine.Alignment
	bound *time.Duration // the out-of-orderness bound declared (the monitor's); nil: none
	err   error
	durs  []durationSetting // checked where the strategy is used (env.go)
}

// ForBoundedOutOfOrderness emits watermark = max timestamp - d - 1 on each
// periodic tick, as Flink. d must not be negative.
func ForBoundedOutOfOrderness[T any](d time.Duration) WatermarkStrategy[T] {
	s := WatermarkStrategy[T]{gen: func() watermark.Generator[T] { return watermark.BoundedOutOfOrderness[T](d) }, bound: &d,
		durs: []durationSetting{{"bounded out-of-orderness", d}}}
	if d < 0 {
		s.err = fmt.Errorf("bounded out-of-orderness must not be negative, got %v", d)
	}
	return s
}

// ForMonotonousTimestamps emits watermark = max timestamp - 1.
func ForMonotonousTimestamps[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{gen: func() watermark.Generator[T] { return watermark.Monotonous[T]() }, bound: new(time.Duration)}
}

// NoWatermarks emits no watermarks (timestamps are still assigned).
func NoWatermarks[T any]() WatermarkStrategy[T] { return WatermarkStrategy[T]{} }

// ForGenerator uses a custom generator; newGen is called once per source
// split or subtask.
func ForGenerator[T any](newGen func() WatermarkGenerator[T]) WatermarkStrategy[T] {
	if newGen == nil {
		return WatermarkStrategy[T]{err: fmt.Errorf("watermark generator factory is nil")}
	}
	return WatermarkStrategy[T]{gen: func() watermark.Generator[T] {
		return watermark.Adapt[T, WatermarkOutput](newGen())
	}}
}

// WithTimestampAssigner sets how to extract the event timestamp of a record
// (recordTS is the timestamp the record already has, or NoTimestamp).
func (s WatermarkStrategy[T]) WithTimestampAssigner(f func(v T, recordTS int64) int64) WatermarkStrategy[T] {
	s.ts = f
	if f == nil && s.err == nil {
		s.err = fmt.Errorf("timestamp assigner is nil")
	}
	return s
}

// WithIdleness marks the stream (or split) idle after d without records,
// measured on the processing-time clock at periodic ticks, as Flink.
func (s WatermarkStrategy[T]) WithIdleness(d time.Duration) WatermarkStrategy[T] {
	s.idle = d
	s.durs = append(append([]durationSetting(nil), s.durs...), durationSetting{"idleness timeout", d})
	if d <= 0 && s.err == nil {
		s.err = fmt.Errorf("idleness timeout must be positive, got %v", d)
	}
	return s
}

// check records the strategy's errors on env for the operator that uses it
// (a source or Timestamps/Watermarks).
func (s WatermarkStrategy[T]) check(env *Environment, what string) {
	if s.err != nil {
		env.fail(fmt.Errorf("%s: %w", what, s.err))
		return
	}
	for _, d := range s.durs {
		env.millis(what+": "+d.what, d.d)
	}
}

// WithWatermarkAlignment aligns the watermarks of every source whose
// strategy names the same group, as Flink's withWatermarkAlignment
// (FLIP-182, and FLIP-217 for the splits of one source subtask): every
// updateInterval of processing time (0 means Flink's default, 1 s) each
// source subtask reports its watermark to the group and learns the
// group's limit, its lowest watermark plus maxDrift. A source subtask
// whose watermark is above the limit stops reading; one that reads
// several splits (Kafka partitions, files) also stops reading each split
// whose own watermark is above it, and reads the others on. Paused splits
// are not read at all (nothing is buffered for them) and resume when the
// group's lowest watermark catches up; an idle or finished source holds
// nobody back; a source that has not emitted a watermark yet is not
// waited for. A paused split's idleness clock stands still (FLIP-471).
// Alignment applies at sources only: a strategy with it given to
// AssignTimestampsAndWatermarks fails the job when it is built.
func (s WatermarkStrategy[T]) WithWatermarkAlignment(group string, maxDrift, updateInterval time.Duration) WatermarkStrategy[T] {
	if updateInterval == 0 {
		updateInterval = time.Second
	}
	var err error
	switch {
	case group == "":
		err = fmt.Errorf("watermark alignment needs a group name")
	case maxDrift < 0:
		err = fmt.Errorf("watermark alignment: the maximum drift must not be negative, got %v", maxDrift)
	case updateInterval < 0:
		err = fmt.Errorf("watermark alignment: the update interval must be positive, got %v", updateInterval)
	}
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return s
	}
	s.durs = append(append([]durationSetting(nil), s.durs...),
		durationSetting{"watermark alignment maximum drift", maxDrift}, durationSetting{"watermark alignment update interval", updateInterval})
	s.align = &engine.Alignment{Group: group, MaxDrift: maxDrift.Milliseconds(), UpdateInterval: updateInterval.Milliseconds()}
	return s
}

// factory returns the per-split generator factory; activity is the
// split's input-activity clock, which idleness measures on.
func (s WatermarkStrategy[T]) factory() func(activity clock.Relative) watermark.Generator[T] {
	return watermark.Factory(s.gen, s.idle)
}

func (s WatermarkStrategy[T]) runtime(env *Environment) engine.SourceWatermarks[T] {
	return engine.SourceWatermarks[T]{
		NewGenerator: s.factory(),
		Timestamp:    s.ts,
		Interval:     env.cfg.wmInterval.Milliseconds(),
		Alignment:    s.align,
	}
}

// AssignTimestampsAndWatermarks assigns timestamps and generates watermarks
// in the middle of a pipeline (as Flink's TimestampsAndWatermarksOperator:
// each record is emitted before the generator sees it; upstream watermarks
// are dropped except the final maximum one).
func AssignTimestampsAndWatermarks[T any](ds DataStream[T], s WatermarkStrategy[T]) (out DataStream[T]) {
	s.check(ds.env, fmt.Sprintf("operator %q", "Timestamps/Watermarks"))
	if s.align != nil {
		ds.env.fail(fmt.Errorf("operator %q: watermark alignment applies to sources only (group %q)", "Timestamps/Watermarks", s.align.Group))
	}
	env := ds.env
	defer func() { out.origins[0].node.Watermarks = engine.DeclareWatermarks(s.bound, s.idle, s.align) }()
	return oneInput(ds, "Timestamps/Watermarks", func(bc *engine.BuildContext, out *engine.Output[T]) (engine.Input[T], engine.Lifecycle, error) {
		var gen watermark.Generator[T]
		if f := s.factory(); f != nil {
			// Idleness measures on the task's input-activity clock, which
			// stops while the task is back-pressured (FLIP-471), as
			// Flink's TimestampsAndWatermarksOperator.
			var c clock.Relative = env.cfg.clock
			if bc.Activity != nil {
				c = bc.Activity
			}
			gen = f(c)
		}
		b := base(bc)
		o := assigner.New(out, gen, s.ts, bc.Time, env.cfg.wmInterval.Milliseconds(), b.settle)
		return o, o, nil
	})
}
