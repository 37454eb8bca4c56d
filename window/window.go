// Package window declares Weir's windowing vocabulary with Apache Flink's
// semantics (1.20): the window types (TimeWindow, GlobalWindow), window
// assigners (tumbling, sliding, sessions, global), triggers with their
// results and contexts, and evictors.
//
// The windowed operators themselves are built with weir.Window,
// weir.WindowAll and weir.CountWindow, followed by weir.Reduce,
// weir.Aggregate, weir.ProcessWindow or weir.Apply.
//
// Time values are int64 milliseconds, as in Flink. Constructors take
// time.Duration values and keep whole milliseconds.
//
// Triggers and evictors are not generic: a trigger sees its window through
// TriggerContext.MaxTimestamp (and, boxed, TriggerContext.Window), so one
// trigger value serves every window type and needs no type arguments.
package window

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Window is the constraint satisfied by window types: comparable values
// with a maximum timestamp, the last instant that belongs to the window.
type Window interface {
	comparable
	// MaxTimestamp returns the largest timestamp that still belongs to the
	// window.
	MaxTimestamp() int64
}

// TimeWindow is the half-open interval [Start, End) in milliseconds.
type TimeWindow struct {
	// Start is the first timestamp of the window.
	Start int64
	// End is the first timestamp after the window.
	End int64
}

// MaxTimestamp returns End - 1.
func (w TimeWindow) MaxTimestamp() int64 { return w.End - 1 }

// Intersects reports whether w and o overlap or touch (inclusive on both
// ends, as Flink's TimeWindow.intersects): [1,4) and [4,7) intersect.
func (w TimeWindow) Intersects(o TimeWindow) bool {
	return w.Start <= o.End && w.End >= o.Start
}

// Cover returns the smallest window containing w and o.
func (w TimeWindow) Cover(o TimeWindow) TimeWindow {
	return TimeWindow{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// String returns "start,end".
func (w TimeWindow) String() string {
	return strconv.FormatInt(w.Start, 10) + "," + strconv.FormatInt(w.End, 10)
}

// GlobalWindow is the single window of GlobalWindows; its maximum timestamp
// is the maximum int64.
type GlobalWindow struct{}

// MaxTimestamp returns math.MaxInt64.
func (GlobalWindow) MaxTimestamp() int64 { return math.MaxInt64 }

// String returns "global".
func (GlobalWindow) String() string { return "global" }

// StartWithOffset returns the start of the window of size size and offset
// offset that contains ts, exactly as Flink's
// TimeWindow.getWindowStartWithOffset: the remainder is Go's truncating %,
// the same as Java's, so negative timestamps round correctly.
func StartWithOffset(ts, offset, size int64) int64 {
	r := (ts - offset) % size
	if r < 0 {
		return ts - (r + size)
	}
	return ts - r
}

// TimestampedValue is a window element with its timestamp, as evictors and
// evicting windows keep them.
type TimestampedValue[T any] struct {
	// Value is the element.
	Value T
	// Timestamp is the element's event timestamp, or math.MinInt64 if it
	// has none.
	Timestamp int64
}

func millis(d time.Duration) int64 { return d.Milliseconds() }

// given keeps the durations a constructor was given, by setting, to tell
// what whole milliseconds make of them: Weir keeps time in whole
// milliseconds, as Flink, truncating toward zero.
type given struct {
	n     int
	names [3]string
	ds    [3]time.Duration
}

// set records setting name's duration (replacing an earlier one).
func (g given) set(name string, d time.Duration) given {
	for i := range g.n {
		if g.names[i] == name {
			g.ds[i] = d
			return g
		}
	}
	if g.n < len(g.names) {
		g.names[g.n], g.ds[g.n] = name, d
		g.n++
	}
	return g
}

// check fails for a non-zero duration below 1 ms, which would become 0 ms
// (invalid, or meaning something else).
func (g given) check() error {
	for i := range g.n {
		if d := g.ds[i]; d != 0 && d.Milliseconds() == 0 {
			return errorf("%s %v is less than a millisecond: Weir works in whole milliseconds, as Flink, and would truncate it to 0 ms", g.names[i], d)
		}
	}
	return nil
}

func (g given) truncated() []string {
	var out []string
	for i := range g.n {
		d := g.ds[i]
		if ms := d.Milliseconds(); ms != 0 && time.Duration(ms)*time.Millisecond != d {
			out = append(out, fmt.Sprintf("%s %v used as %d ms", g.names[i], d, ms))
		}
	}
	return out
}

// Truncated lists the durations given to x (an assigner, trigger or
// evictor of this package) that lost a sub-millisecond part, each as
// "tumbling window size 1.5ms used as 1 ms". Weir keeps time in whole
// milliseconds, as Flink; a duration below 1 ms fails Validate instead.
// The window operators log these as warnings.
func Truncated(x any) []string {
	if t, ok := x.(interface{ truncated() []string }); ok {
		return t.truncated()
	}
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf("window: "+format, args...) }
