// Package watermark holds Weir's event-time progress machinery, with the
// semantics of Apache Flink's DataStream runtime:
//
//   - Valve merges the watermarks and watermark statuses of the input channels
//     of one input gate (Flink's StatusWatermarkValve).
//   - Combiner merges the per-input watermarks of a multi-input operator
//     (Flink's IndexedCombinedWatermarkStatus as used by
//     AbstractStreamOperator.processWatermark1/2 and processWatermarkStatus1/2).
//   - Generator, BoundedOutOfOrderness, Monotonous, None and WithIdleness are
//     Flink's WatermarkGenerator and the generators of WatermarkStrategy.
//   - Emitter applies the output rules of Flink's WatermarkEmitter and
//     WatermarkToDataOutput (no regressions, idle/active status changes).
//   - Multiplexer is Flink's WatermarkOutputMultiplexer for per-split
//     watermarks inside one source subtask.
//
// Everything here is single-threaded, deterministic and free of I/O and
// goroutines. None of the types is safe for concurrent use. In steady state no
// method allocates.
//
// Watermarks are int64 milliseconds. A watermark W promises that no more
// elements with timestamp <= W will arrive.
package watermark

import (
	"math"
	"strconv"
)

// Min is the lowest watermark: "no watermark yet". Every input, channel and
// generator starts here.
const Min = math.MinInt64

// Max is the highest watermark: end of input. It fires every event-time timer.
const Max = math.MaxInt64

// Event is one thing a Valve emits: a watermark, or a status change.
//
// For a watermark, IsStatus is false and Watermark holds its value (Idle is
// false). For a status change, IsStatus is true, Idle tells the new status
// (true = IDLE, false = ACTIVE) and Watermark is 0.
type Event struct {
	// IsStatus is true for a watermark-status change, false for a watermark.
	IsStatus bool
	// Idle is the new status of a status change: true for IDLE, false for ACTIVE.
	Idle bool
	// Watermark is the value of a watermark event.
	Watermark int64
}

// WatermarkEvent returns the Event for watermark wm.
func WatermarkEvent(wm int64) Event { return Event{Watermark: wm} }

// StatusEvent returns the Event for a status change to idle (true) or
// active (false).
func StatusEvent(idle bool) Event { return Event{IsStatus: true, Idle: idle} }

// String renders e as in the conformance scenario files: "wm <ts>",
// "status idle" or "status active".
func (e Event) String() string {
	if e.IsStatus {
		if e.Idle {
			return "status idle"
		}
		return "status active"
	}
	return "wm " + strconv.FormatInt(e.Watermark, 10)
}
