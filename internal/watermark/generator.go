package watermark

import (
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// Output is where a Generator sends watermarks and idleness (Flink's
// WatermarkOutput).
type Output interface {
	// EmitWatermark emits watermark wm. Outputs drop watermarks that do not
	// advance what they emitted before.
	EmitWatermark(wm int64)
	// MarkIdle marks the output idle: downstream stops waiting for its
	// watermarks until it emits an advancing watermark or is marked active.
	MarkIdle()
	// MarkActive marks the output active again.
	MarkActive()
}

// Generator generates watermarks from the events of one stream (Flink's
// WatermarkGenerator). The runtime calls OnEvent for every event, after the
// event itself has been emitted, and OnPeriodicEmit at every periodic tick
// (every pipeline.auto-watermark-interval, 200 ms by default) and once more at
// end of input.
type Generator[T any] interface {
	// OnEvent is called for every event with its timestamp (milliseconds). A
	// punctuated generator may emit a watermark here.
	OnEvent(event T, ts int64, out Output)
	// OnPeriodicEmit is called periodically. A periodic generator emits its
	// current watermark here.
	OnPeriodicEmit(out Output)
}

// PeriodicOnly is implemented by generators that never emit in OnEvent,
// only in OnPeriodicEmit. A source may then emit a whole batch of events
// first and call OnEvent for each afterwards (its watermark cannot fall
// between two events of the batch anyway), handing the batch downstream
// without copying it.
type PeriodicOnly interface {
	// PeriodicOnly reports whether OnEvent never emits.
	PeriodicOnly() bool
}

// IsPeriodicOnly reports whether g declares that it emits only in
// OnPeriodicEmit.
func IsPeriodicOnly[T any](g Generator[T]) bool {
	p, ok := g.(PeriodicOnly)
	return ok && p.PeriodicOnly()
}

// MaxTimestampOnly is implemented by PeriodicOnly generators whose OnEvent
// looks only at the timestamp and keeps only the largest one seen: a run of
// OnEvent calls then has the effect of one OnMaxTimestamp with the run's
// largest timestamp, and a source calls it once per batch instead of
// passing every event.
type MaxTimestampOnly interface {
	// MaxTimestampOnly reports whether OnMaxTimestamp may stand for OnEvent.
	MaxTimestampOnly() bool
	// OnMaxTimestamp is OnEvent for a run of events whose largest
	// timestamp is ts.
	OnMaxTimestamp(ts int64)
}

// AsMaxTimestampOnly returns g as a MaxTimestampOnly if it declares itself
// one (and PeriodicOnly), else nil.
func AsMaxTimestampOnly[T any](g Generator[T]) MaxTimestampOnly {
	m, ok := g.(MaxTimestampOnly)
	if !ok || !m.MaxTimestampOnly() || !IsPeriodicOnly(g) {
		return nil
	}
	return m
}

// BoundedOutOfOrderness returns Flink's BoundedOutOfOrdernessWatermarks: the
// watermark is maxTs - d - 1, where maxTs is the largest timestamp seen and d
// is maxOutOfOrderness in whole milliseconds. Before any event maxTs is
// Min + d + 1, so the first watermark is exactly Min. It emits only in
// OnPeriodicEmit, never on events. It panics if maxOutOfOrderness is negative.
func BoundedOutOfOrderness[T any](maxOutOfOrderness time.Duration) Generator[T] {
	if maxOutOfOrderness < 0 {
		panic("watermark: maxOutOfOrderness must not be negative")
	}
	d := maxOutOfOrderness.Milliseconds()
	return &boundedOutOfOrderness[T]{maxTs: Min + d + 1, delay: d}
}

// Monotonous returns Flink's AscendingTimestampsWatermarks: bounded
// out-of-orderness with d = 0, so the watermark is maxTs - 1.
func Monotonous[T any]() Generator[T] { return BoundedOutOfOrderness[T](0) }

// None returns a generator that never emits (Flink's NoWatermarksGenerator).
func None[T any]() Generator[T] { return noWatermarks[T]{} }

type boundedOutOfOrderness[T any] struct {
	maxTs int64
	delay int64
}

func (g *boundedOutOfOrderness[T]) OnEvent(_ T, ts int64, _ Output) {
	if ts > g.maxTs {
		g.maxTs = ts
	}
}

func (g *boundedOutOfOrderness[T]) OnPeriodicEmit(out Output) {
	out.EmitWatermark(g.maxTs - g.delay - 1)
}

func (*boundedOutOfOrderness[T]) PeriodicOnly() bool { return true }

func (*boundedOutOfOrderness[T]) MaxTimestampOnly() bool { return true }

func (g *boundedOutOfOrderness[T]) OnMaxTimestamp(ts int64) {
	if ts > g.maxTs {
		g.maxTs = ts
	}
}

type noWatermarks[T any] struct{}

func (noWatermarks[T]) OnEvent(T, int64, Output) {}
func (noWatermarks[T]) OnPeriodicEmit(Output)    {}
func (noWatermarks[T]) PeriodicOnly() bool       { return true }
func (noWatermarks[T]) MaxTimestampOnly() bool   { return true }
func (noWatermarks[T]) OnMaxTimestamp(int64)     {}

// WithIdleness wraps g with Flink's idleness detection (WatermarksWithIdleness).
//
// OnEvent forwards the event to g, counts it as activity and clears the idle
// flag. Idleness is evaluated only in OnPeriodicEmit, by reading clk:
//
//  1. at a tick that sees activity since the previous tick, the inactivity
//     timer is reset and the stream is not idle;
//  2. at the first tick that sees no activity, the start of inactivity is
//     recorded (clk.NowMillis()) and the stream is not idle;
//  3. at later quiet ticks the stream is idle iff now - start > timeout
//     (strictly).
//
// When idle, OnPeriodicEmit calls out.MarkIdle() once, on entering idleness,
// and does not call g.OnPeriodicEmit. When not idle it delegates to g. An event
// alone does not mark the output active; the next advancing watermark does
// (see Emitter).
//
// Example: ticks every 200 ms, timeout 1000 ms, last event just before the
// tick at 100: quiet tick at 300 starts the timer, the tick at 1300 is not
// idle (1000 is not > 1000), the tick at 1500 marks idle.
//
// The timeout is compared in whole milliseconds (a fractional timeout t gives
// the same answers as floor(t) with a millisecond clock). WithIdleness panics
// if timeout is not positive. clk is, as in Flink (FLIP-471), the split's
// input-activity clock: a source gives each split a clock that stops while
// the split is paused by watermark alignment or its task is blocked by
// backpressure, so that time in which the split could not be read does not
// count as time without records.
func WithIdleness[T any](g Generator[T], timeout time.Duration, clk clock.Relative) Generator[T] {
	if timeout <= 0 {
		panic("watermark: idleness timeout must be greater than zero")
	}
	if g == nil || clk == nil {
		panic("watermark: WithIdleness needs a generator and a clock")
	}
	return &withIdleness[T]{g: g, clk: clk, timeout: timeout.Milliseconds()}
}

type withIdleness[T any] struct {
	g       Generator[T]
	clk     clock.Relative
	timeout int64 // milliseconds

	counter     uint64 // activity counter; wrapping is harmless
	lastCounter uint64 // counter at the previous tick
	started     bool   // whether the inactivity timer runs
	start       int64  // start of inactivity, clk milliseconds
	idleNow     bool
}

func (w *withIdleness[T]) OnEvent(event T, ts int64, out Output) {
	w.g.OnEvent(event, ts, out)
	w.counter++
	w.idleNow = false
}

// PeriodicOnly is that of the wrapped generator: idleness is decided in
// OnPeriodicEmit only.
func (w *withIdleness[T]) PeriodicOnly() bool { return IsPeriodicOnly(w.g) }

// MaxTimestampOnly is that of the wrapped generator: a run of events is
// activity as one event is (only whether the counter moved is looked at).
func (w *withIdleness[T]) MaxTimestampOnly() bool { return AsMaxTimestampOnly(w.g) != nil }

func (w *withIdleness[T]) OnMaxTimestamp(ts int64) {
	w.g.(MaxTimestampOnly).OnMaxTimestamp(ts)
	w.counter++
	w.idleNow = false
}

func (w *withIdleness[T]) OnPeriodicEmit(out Output) {
	if w.checkIfIdle() {
		if !w.idleNow {
			w.idleNow = true
			out.MarkIdle()
		}
		return
	}
	w.g.OnPeriodicEmit(out)
}

// checkIfIdle is Flink's WatermarksWithIdleness.IdlenessTimer.checkIfIdle.
// Flink encodes "no timer" as a start time of 0; an explicit flag is used
// here so that a clock reading of 0 is a valid start.
func (w *withIdleness[T]) checkIfIdle() bool {
	if w.counter != w.lastCounter {
		w.lastCounter = w.counter
		w.started = false
		return false
	}
	if !w.started {
		w.started = true
		w.start = w.clk.NowMillis()
		return false
	}
	return w.clk.NowMillis()-w.start > w.timeout
}
