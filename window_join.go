package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/windowing"
	"github.com/weirstream/weir/window"
)

// Tagged is an element of either input of a window join or coGroup, as
// Flink's TaggedUnion: both inputs are tagged, unioned, keyed and windowed
// together, so the window operator sees one stream (one watermark valve
// over the channels of both inputs).
type Tagged[A, B any] struct {
	IsLeft bool
	Left   A
	Right  B
}

// JoinedWindows are two keyed streams windowed together for Join, FlatJoin
// or CoGroup.
type JoinedWindows[K comparable, A, B any, W window.Window] struct {
	ws WindowedStream[K, Tagged[A, B], W]
}

// WindowJoin windows two keyed streams together (Flink's
// a.join(b).where(ka).equalTo(kb).window(assigner), and coGroup): records
// of both with equal keys in the same window meet at the window's firing.
func WindowJoin[K comparable, A, B any, W window.Window](left KeyedStream[K, A], right KeyedStream[K, B], assigner window.Assigner[W]) JoinedWindows[K, A, B, W] {
	env := left.ds.env
	l := Map(left.ds, func(a A) Tagged[A, B] { return Tagged[A, B]{IsLeft: true, Left: a} }).Name("Join(tag left)")
	r := Map(right.ds, func(b B) Tagged[A, B] { return Tagged[A, B]{Right: b} }).Name("Join(tag right)")
	if right.ds.env != env {
		env.fail(fmt.Errorf("window join: streams belong to different environments"))
	}
	ka, kb := left.key, right.key
	keyed := KeyBy(Union(l, r), func(t Tagged[A, B]) K {
		if t.IsLeft {
			return ka(t.Left)
		}
		return kb(t.Right)
	})
	return JoinedWindows[K, A, B, W]{ws: Window(keyed, assigner)}
}

// Trigger sets the trigger of the joined windows.
func (j JoinedWindows[K, A, B, W]) Trigger(t window.Trigger) JoinedWindows[K, A, B, W] {
	j.ws = j.ws.Trigger(t)
	return j
}

// Evictor sets the evictor of the joined windows.
func (j JoinedWindows[K, A, B, W]) Evictor(e window.Evictor) JoinedWindows[K, A, B, W] {
	j.ws = j.ws.Evictor(e)
	return j
}

// AllowedLateness keeps windows for late elements; a late firing emits the
// whole window again (as Flink: its window contents are not purged).
func (j JoinedWindows[K, A, B, W]) AllowedLateness(d time.Duration) JoinedWindows[K, A, B, W] {
	j.ws = j.ws.AllowedLateness(d)
	return j
}

// CoGroupFunction is called once per key and window firing with both
// sides' elements in arrival order; one side may be empty.
type CoGroupFunction[K comparable, A, B, OUT any, W window.Window] func(key K, w W, left []A, right []B, out Collector[OUT]) error

// CoGroup calls fn once per key and firing with both sides' elements (even
// when one side is empty). Results carry the window's max timestamp.
func CoGroup[K comparable, A, B, OUT any, W window.Window](j JoinedWindows[K, A, B, W], fn CoGroupFunction[K, A, B, OUT, W]) DataStream[OUT] {
	if fn == nil {
		j.ws.ks.ds.env.fail(fmt.Errorf("operator %q: %w", "CoGroup", nilFnError("coGroup function")))
	}
	return Apply(j.ws, windowFunc[K, Tagged[A, B], OUT, W](func(key K, w W, elems []Tagged[A, B], out Collector[OUT]) error {
		ls, rs := windowing.Split(elems, func(e Tagged[A, B]) (bool, A, B) { return e.IsLeft, e.Left, e.Right })
		return fn(key, w, ls, rs, out)
	})).Name("CoGroup")
}

// FlatJoin calls fn for every (left, right) pair of a key and window, the
// left elements in arrival order outside, the right ones inside, at the
// window's firing; fn may emit any number of records.
func FlatJoin[K comparable, A, B, OUT any, W window.Window](j JoinedWindows[K, A, B, W], fn func(a A, b B, out Collector[OUT]) error) DataStream[OUT] {
	if fn == nil {
		j.ws.ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Join", nilFnError("join function")))
	}
	return CoGroup(j, CoGroupFunction[K, A, B, OUT, W](func(_ K, _ W, ls []A, rs []B, out Collector[OUT]) error {
		return windowing.Cross(ls, rs, out, fn)
	})).Name("Join")
}

// Join emits fn(left, right) for every pair of a key and window (an inner
// join: a window with one side empty emits nothing).
func Join[K comparable, A, B, OUT any, W window.Window](j JoinedWindows[K, A, B, W], fn func(a A, b B) OUT) DataStream[OUT] {
	if fn == nil {
		j.ws.ks.ds.env.fail(fmt.Errorf("operator %q: %w", "Join", nilFnError("join function")))
	}
	return FlatJoin(j, func(a A, b B, out Collector[OUT]) error {
		out.Collect(fn(a, b))
		return nil
	})
}
