package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/windowing"
	"github.com/weirstream/weir/window"
)

// NoKey is the key of WindowAll streams: every element has the same key,
// so one subtask sees them all.
type NoKey struct{}

// WindowedStream is a keyed stream with a window assigner, an optional
// trigger, evictor, allowed lateness and late side output; a window
// function (Reduce, Aggregate, ProcessWindow, Apply and their combinations)
// turns it into a DataStream. Settings are methods; each returns the
// updated stream.
type WindowedStream[K comparable, T any, W window.Window] struct {
	ks         KeyedStream[K, T]
	assigner   window.Assigner[W]
	trigger    window.Trigger
	evictor    window.Evictor
	lateness   int64
	lateTag    string
	hasLateTag bool
	all        bool
	errs       []error
}

// Window groups the elements of a keyed stream into windows (Flink's
// KeyedStream.window). The window type W follows from the assigner:
//
//	ws := weir.Window(keyed, window.TumblingEventTime(time.Minute))
//	sums := weir.Reduce(ws, func(a, b int64) int64 { return a + b })
func Window[K comparable, T any, W window.Window](ks KeyedStream[K, T], assigner window.Assigner[W]) WindowedStream[K, T, W] {
	return WindowedStream[K, T, W]{ks: ks, assigner: assigner}
}

// WindowAll groups all elements of a non-keyed stream into windows, in one
// subtask (parallelism 1), as Flink's DataStream.windowAll. The window
// functions see the key NoKey{}.
func WindowAll[T any, W window.Window](ds DataStream[T], assigner window.Assigner[W]) WindowedStream[NoKey, T, W] {
	ks := KeyBy(ds, func(T) NoKey { return NoKey{} })
	return WindowedStream[NoKey, T, W]{ks: ks, assigner: assigner, all: true}
}

// CountWindow is Flink's KeyedStream.countWindow: with one argument, global
// windows with a purging count trigger that fires every size elements;
// with a slide, global windows with a CountEvictor(size) and a count
// trigger firing every slide elements. Results carry the maximum
// timestamp.
func CountWindow[K comparable, T any](ks KeyedStream[K, T], size int64, slide ...int64) WindowedStream[K, T, window.GlobalWindow] {
	ws := Window(ks, window.Global())
	ws.errs = windowing.CountErrs(size, slide)
	switch len(slide) {
	case 0:
		return ws.Trigger(window.PurgingTrigger(window.CountTrigger(size)))
	case 1:
		return ws.Evictor(window.CountEvictor(size)).Trigger(window.CountTrigger(slide[0]))
	}
	return ws
}

// Trigger sets the trigger (default: the assigner's).
func (ws WindowedStream[K, T, W]) Trigger(t window.Trigger) WindowedStream[K, T, W] {
	ws.trigger = t
	if t == nil {
		ws.errs = append(ws.errs, fmt.Errorf("trigger is nil"))
	}
	return ws
}

// Evictor sets an evictor: the operator then keeps every element and
// applies the window function to what the evictor leaves at each firing.
func (ws WindowedStream[K, T, W]) Evictor(e window.Evictor) WindowedStream[K, T, W] {
	ws.evictor = e
	if e == nil {
		ws.errs = append(ws.errs, fmt.Errorf("evictor is nil"))
	}
	return ws
}

// AllowedLateness keeps event-time windows for d after their end: late
// elements within it are added and fire the window again. It must not be
// negative; it is ignored (with a warning) for processing-time windows.
func (ws WindowedStream[K, T, W]) AllowedLateness(d time.Duration) WindowedStream[K, T, W] {
	ws.lateness = ws.ks.ds.env.millis("allowed lateness", d)
	if d < 0 {
		ws.errs = append(ws.errs, fmt.Errorf("allowed lateness must not be negative, got %v", d))
	}
	return ws
}

// SideOutputLateData sends elements that arrive too late for all their
// windows (and are late themselves) to the side output tag, with their
// original timestamps; read them with SideOutput on the result.
func (ws WindowedStream[K, T, W]) SideOutputLateData(tag OutputTag[T]) WindowedStream[K, T, W] {
	ws.lateTag, ws.hasLateTag = tag.id, true
	if tag.id == "" {
		ws.errs = append(ws.errs, fmt.Errorf("late side output tag id must not be empty"))
	}
	return ws
}

// WindowFunction is applied to all elements of a window at each firing
// (Flink's WindowFunction).
type WindowFunction[K comparable, IN, OUT any, W window.Window] interface {
	Apply(key K, w W, elements []IN, out Collector[OUT]) error
}

// windowFunc adapts a function to a WindowFunction (ApplyFunc).
type windowFunc[K comparable, IN, OUT any, W window.Window] func(key K, w W, elements []IN, out Collector[OUT]) error

func (f windowFunc[K, IN, OUT, W]) Apply(key K, w W, elements []IN, out Collector[OUT]) error {
	return f(key, w, elements, out)
}

// ProcessWindowContext is the context of a ProcessWindowFunction call.
type ProcessWindowContext[W window.Window] interface {
	// Window returns the window being fired.
	Window() W
	// CurrentWatermark returns the operator's current watermark.
	CurrentWatermark() int64
	// CurrentProcessingTime returns the processing-time clock in ms.
	CurrentProcessingTime() int64
	// WindowState is state of the current key and window (not available
	// with merging assigners); clear it in Clear.
	WindowState() window.StateStore
	// GlobalState is state of the current key, across windows.
	GlobalState() window.StateStore
	// SideOutputContext lets the function emit to side outputs with
	// Output(ctx, tag, v), at the window's max timestamp.
	SideOutputContext
}

// ProcessWindowFunction processes the elements of a window with a context
// (Flink's ProcessWindowFunction). If it also implements
// ProcessWindowClearer, Clear is called when a window is cleaned up.
type ProcessWindowFunction[K comparable, IN, OUT any, W window.Window] interface {
	Process(key K, ctx ProcessWindowContext[W], elements []IN, out Collector[OUT]) error
}

// ProcessWindowClearer is implemented by process window functions that keep
// per-window state, to clear it when the window is cleaned up.
type ProcessWindowClearer[W window.Window] interface {
	Clear(ctx ProcessWindowContext[W]) error
}

// processWindowFunc adapts a function to a ProcessWindowFunction
// (ProcessWindowFunc and friends).
type processWindowFunc[K comparable, IN, OUT any, W window.Window] func(key K, ctx ProcessWindowContext[W], elements []IN, out Collector[OUT]) error

func (f processWindowFunc[K, IN, OUT, W]) Process(key K, ctx ProcessWindowContext[W], elements []IN, out Collector[OUT]) error {
	return f(key, ctx, elements, out)
}
