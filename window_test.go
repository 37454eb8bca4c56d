package weir_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// wev is a keyed window test element.
type wev struct {
	K string
	V int64
}

func wms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func sumWev(a, b wev) wev { return wev{a.K, a.V + b.V} }

var wlate = weir.NewOutputTag[wev]("late")

// wlines renders harness events as sorted lines (one step's multiset).
func wlines(evs []weirtest.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case weirtest.KindRecord:
			out = append(out, fmt.Sprintf("out %v@%d", e.Value, e.TS))
		case weirtest.KindSide:
			out = append(out, fmt.Sprintf("side %v@%d", e.Value, e.TS))
		case weirtest.KindWatermark:
			out = append(out, fmt.Sprintf("wm %d", e.TS))
		}
	}
	slices.Sort(out)
	return out
}

// oracle is a brute-force model of a time-window operator with the
// event-time trigger and a sum: every (key, window) is tracked on its own,
// following the rules of the reference (§3.2, §3.5, §3.9).
type oracle struct {
	assign   func(ts int64) []window.TimeWindow
	lateness int64
	wm       int64
	sums     map[okw]int64
}

type okw struct {
	k string
	w window.TimeWindow
}

func (o *oracle) cleanup(w window.TimeWindow) int64 { return w.MaxTimestamp() + o.lateness }

func (o *oracle) record(k string, ts, v int64) []string {
	var out []string
	skipped := true
	for _, w := range o.assign(ts) {
		if o.cleanup(w) <= o.wm {
			continue
		}
		skipped = false
		o.sums[okw{k, w}] += v
		if w.MaxTimestamp() <= o.wm {
			out = append(out, fmt.Sprintf("out {%s %d}@%d", k, o.sums[okw{k, w}], w.MaxTimestamp()))
		}
	}
	if skipped && ts+o.lateness <= o.wm {
		out = append(out, fmt.Sprintf("side {%s %d}@%d", k, v, ts))
	}
	slices.Sort(out)
	return out
}

func (o *oracle) watermark(wm int64) []string {
	var out []string
	for kw, sum := range o.sums {
		if m := kw.w.MaxTimestamp(); m > o.wm && m <= wm {
			out = append(out, fmt.Sprintf("out {%s %d}@%d", kw.k, sum, m))
		}
	}
	for kw := range o.sums {
		if o.cleanup(kw.w) <= wm {
			delete(o.sums, kw)
		}
	}
	o.wm = wm
	out = append(out, fmt.Sprintf("wm %d", wm))
	slices.Sort(out)
	return out
}

// TestWindowAgainstOracle holds the window operator (tumbling and sliding
// event-time windows, Reduce with the default trigger: the sliced path for
// sliding windows; and with an explicit EventTimeTrigger: the per-window
// path) against the brute-force oracle, on random out-of-order input with
// random watermarks, allowed lateness and the late side output.
func TestWindowAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sliding := rapid.Bool().Draw(t, "sliding")
		size := rapid.Int64Range(1, 12).Draw(t, "size")
		slide := size
		if sliding {
			slide = rapid.Int64Range(1, 12).Draw(t, "slide")
		}
		offset := rapid.Int64Range(-(slide-1), slide-1).Draw(t, "offset")
		lateness := rapid.Int64Range(0, 6).Draw(t, "lateness")
		explicit := rapid.Bool().Draw(t, "explicitTrigger")
		var a window.Assigner[window.TimeWindow]
		if sliding {
			a = window.SlidingEventTime(wms(size), wms(slide)).WithOffset(wms(offset))
		} else {
			a = window.TumblingEventTime(wms(size)).WithOffset(wms(offset))
		}
		h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[wev] {
			ws := weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }), a).
				AllowedLateness(wms(lateness)).SideOutputLateData(wlate)
			if explicit {
				ws = ws.Trigger(window.EventTimeTrigger())
			}
			return weir.Reduce(ws, sumWev)
		}, weirtest.SideOutputs(wlate))
		if err != nil {
			t.Fatal(err)
		}
		o := &oracle{lateness: lateness, wm: math.MinInt64, sums: map[okw]int64{},
			assign: func(ts int64) []window.TimeWindow {
				ws, _ := a.AssignWindows(ts, nil, nil)
				return ws
			}}
		wm := int64(-30)
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			var want []string
			if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("kind%d", i)) == 0 {
				wm += rapid.Int64Range(1, 8).Draw(t, fmt.Sprintf("wm%d", i))
				if err := h.ProcessWatermark(wm); err != nil {
					t.Fatal(err)
				}
				want = o.watermark(wm)
			} else {
				k := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, fmt.Sprintf("key%d", i))
				ts := rapid.Int64Range(wm-10, wm+15).Draw(t, fmt.Sprintf("ts%d", i))
				v := rapid.Int64Range(1, 100).Draw(t, fmt.Sprintf("v%d", i))
				if err := h.ProcessElement(wev{k, v}, ts); err != nil {
					t.Fatal(err)
				}
				want = o.record(k, ts, v)
			}
			if got := wlines(h.TakeEvents()); !slices.Equal(got, want) {
				t.Fatalf("step %d: got %v, want %v", i, got, want)
			}
		}
		if err := h.EndInput(); err != nil {
			t.Fatal(err)
		}
		if got, want := wlines(h.TakeEvents()), o.watermark(math.MaxInt64); !slices.Equal(got, want) {
			t.Fatalf("end: got %v, want %v", got, want)
		}
	})
}

// avgAgg is an AggregateFunction with a non-trivial accumulator.
type avgAgg struct{}

type avgAcc struct{ Sum, N int64 }

func (avgAgg) CreateAccumulator() avgAcc  { return avgAcc{} }
func (avgAgg) Add(v wev, a avgAcc) avgAcc { return avgAcc{a.Sum + v.V, a.N + 1} }
func (avgAgg) GetResult(a avgAcc) string  { return fmt.Sprintf("%d/%d", a.Sum, a.N) }
func (avgAgg) Merge(a, b avgAcc) avgAcc   { return avgAcc{a.Sum + b.Sum, a.N + b.N} }
func (avgAgg) String() string             { return "avg" }

// TestSlicedMatchesPerWindow runs Aggregate on sliding windows through the
// sliced path (default trigger) and the per-window path (explicit
// EventTimeTrigger) side by side on random input: every step must emit the
// same multiset.
func TestSlicedMatchesPerWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slide := rapid.Int64Range(1, 6).Draw(t, "slide")
		size := rapid.Int64Range(slide+1, 30).Draw(t, "size")
		offset := rapid.Int64Range(-(slide-1), slide-1).Draw(t, "offset")
		lateness := rapid.Int64Range(0, 8).Draw(t, "lateness")
		mk := func(explicit bool) *weirtest.OneInput[wev, string] {
			h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[string] {
				ws := weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }),
					window.SlidingEventTime(wms(size), wms(slide)).WithOffset(wms(offset))).
					AllowedLateness(wms(lateness)).SideOutputLateData(wlate)
				if explicit {
					ws = ws.Trigger(window.EventTimeTrigger())
				}
				return weir.Aggregate(ws, avgAgg{})
			}, weirtest.SideOutputs(wlate))
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		sliced, perWindow := mk(false), mk(true)
		wm := int64(0)
		for i := range rapid.IntRange(1, 80).Draw(t, "steps") {
			if rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("kind%d", i)) == 0 {
				wm += rapid.Int64Range(1, 10).Draw(t, fmt.Sprintf("wm%d", i))
				_ = sliced.ProcessWatermark(wm)
				_ = perWindow.ProcessWatermark(wm)
			} else {
				e := wev{rapid.SampledFrom([]string{"a", "b"}).Draw(t, fmt.Sprintf("k%d", i)), rapid.Int64Range(0, 9).Draw(t, fmt.Sprintf("v%d", i))}
				ts := rapid.Int64Range(wm-size-lateness, wm+2*size).Draw(t, fmt.Sprintf("ts%d", i))
				_ = sliced.ProcessElement(e, ts)
				_ = perWindow.ProcessElement(e, ts)
			}
			if a, b := wlines(sliced.TakeEvents()), wlines(perWindow.TakeEvents()); !slices.Equal(a, b) {
				t.Fatalf("step %d: sliced %v, per-window %v", i, a, b)
			}
		}
		_ = sliced.EndInput()
		_ = perWindow.EndInput()
		if a, b := wlines(sliced.TakeEvents()), wlines(perWindow.TakeEvents()); !slices.Equal(a, b) {
			t.Fatalf("end: sliced %v, per-window %v", a, b)
		}
	})
}

// pwf lists a window's elements and counts its firings in window state and
// the key's firings in global state.
type pwf struct{}

func (pwf) Process(key string, ctx weir.ProcessWindowContext[window.TimeWindow], elems []wev, out weir.Collector[string]) error {
	ws, err := window.GetValueState(ctx.WindowState(), state.Value[int64]("fires"))
	if err != nil {
		return err
	}
	gs, err := window.GetReducingState(ctx.GlobalState(), state.Reducing("total", func(a, b int64) int64 { return a + b }))
	if err != nil {
		return err
	}
	n, _ := ws.Value()
	ws.Update(n + 1)
	gs.Add(1)
	total, _ := gs.Get()
	vals := make([]string, len(elems))
	for i, e := range elems {
		vals[i] = fmt.Sprint(e.V)
	}
	out.Collect(fmt.Sprintf("%s %v [%s] fire=%d total=%d wm=%d", key, ctx.Window(), strings.Join(vals, ","), n+1, total, ctx.CurrentWatermark()))
	return nil
}

func (pwf) Clear(ctx weir.ProcessWindowContext[window.TimeWindow]) error {
	ws, err := window.GetValueState(ctx.WindowState(), state.Value[int64]("fires"))
	if err != nil {
		return err
	}
	ws.Clear()
	return nil
}

func recs[T any](t *testing.T, h *weirtest.OneInput[wev, T]) []string {
	t.Helper()
	var out []string
	for _, e := range h.TakeEvents() {
		if e.Kind == weirtest.KindRecord {
			out = append(out, fmt.Sprintf("%v@%d", e.Value, e.TS))
		}
	}
	return out
}

func TestProcessWindowStateAndLateFiring(t *testing.T) {
	h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[string] {
		ws := weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }), window.TumblingEventTime(wms(10))).AllowedLateness(wms(5))
		return weir.ProcessWindow(ws, pwf{})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = h.ProcessElement(wev{"a", 1}, 3)
	_ = h.ProcessElement(wev{"a", 2}, 12)
	_ = h.ProcessWatermark(9)
	_ = h.ProcessElement(wev{"a", 3}, 5) // late but allowed: fires again
	_ = h.ProcessWatermark(20)
	want := []string{"a 0,10 [1] fire=1 total=1 wm=9@9", "a 0,10 [1,3] fire=2 total=2 wm=9@9", "a 10,20 [2] fire=1 total=3 wm=20@19"}
	if got := recs(t, h); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestCountWindows(t *testing.T) {
	h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[wev] {
		return weir.Reduce(weir.CountWindow(weir.KeyBy(in, func(e wev) string { return e.K }), 3), sumWev)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		_ = h.ProcessElement(wev{"k", int64(i + 1)}, int64(i))
	}
	_ = h.EndInput()
	// V16: [1,2,3] and [4,5,6] at the maximum timestamp; 7 is never emitted.
	if got, want := recs(t, h), []string{"{k 6}@9223372036854775807", "{k 15}@9223372036854775807"}; !slices.Equal(got, want) {
		t.Fatalf("countWindow(3): %v, want %v", got, want)
	}
	// countWindow(3, 2): evictor keeps the last 3, fires every 2.
	h2, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[string] {
		ws := weir.CountWindow(weir.KeyBy(in, func(e wev) string { return e.K }), 3, 2)
		return weir.ApplyFunc(ws,
			func(k string, _ window.GlobalWindow, es []wev, out weir.Collector[string]) error {
				var vs []string
				for _, e := range es {
					vs = append(vs, fmt.Sprint(e.V))
				}
				out.Collect(strings.Join(vs, ","))
				return nil
			})
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		_ = h2.ProcessElement(wev{"k", int64(i + 1)}, int64(i))
	}
	m := int64(math.MaxInt64)
	want := []string{fmt.Sprintf("1,2@%d", m), fmt.Sprintf("2,3,4@%d", m), fmt.Sprintf("4,5,6@%d", m)}
	if got := recs(t, h2); !slices.Equal(got, want) {
		t.Fatalf("countWindow(3,2): %v, want %v", got, want)
	}
}

func TestEvictorsAndCombinations(t *testing.T) {
	// A time evictor keeping 3 ms before the function, on Reduce.
	h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[wev] {
		ws := weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }), window.TumblingEventTime(wms(10))).
			Evictor(window.TimeEvictor(wms(3)))
		return weir.Reduce(ws, sumWev)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{1, 4, 6, 7} {
		_ = h.ProcessElement(wev{"k", ts}, ts)
	}
	_ = h.ProcessWatermark(9)
	if got := recs(t, h); !slices.Equal(got, []string{"{k 13}@9"}) { // max 7, cutoff 4: 6+7
		t.Fatalf("time evictor: %v", got)
	}
	// Reduce and Aggregate with a process function, on WindowAll.
	h2, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[string] {
		ws := weir.WindowAll(in, window.TumblingEventTime(wms(10)))
		return weir.AggregateWithProcessFunc(ws, avgAgg{},
			func(_ weir.NoKey, ctx weir.ProcessWindowContext[window.TimeWindow], r []string, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%v %s", ctx.Window(), r[0]))
				return nil
			})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = h2.ProcessElement(wev{"a", 4}, 1)
	_ = h2.ProcessElement(wev{"b", 6}, 2)
	_ = h2.ProcessWatermark(10)
	if got := recs(t, h2); !slices.Equal(got, []string{"0,10 10/2@9"}) {
		t.Fatalf("windowAll aggregate+process: %v", got)
	}
	h3, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[string] {
		ws := weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }), window.EventTimeSessions(wms(3)))
		return weir.ReduceWithProcessFunc(ws, sumWev,
			func(k string, ctx weir.ProcessWindowContext[window.TimeWindow], r []wev, out weir.Collector[string]) error {
				if _, err := ctx.WindowState().Int64Reducing(state.Reducing("x", func(a, b int64) int64 { return a })); err == nil {
					return fmt.Errorf("window state must be refused on merging windows")
				}
				out.Collect(fmt.Sprintf("%s %v %d", k, ctx.Window(), r[0].V))
				return nil
			})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = h3.ProcessElement(wev{"a", 1}, 1)
	_ = h3.ProcessElement(wev{"a", 2}, 3)
	if err := h3.ProcessWatermark(10); err != nil {
		t.Fatal(err)
	}
	if got := recs(t, h3); !slices.Equal(got, []string{"a 1,6 3@5"}) {
		t.Fatalf("session reduce+process: %v", got)
	}
}

func TestWindowBuildErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev]
		want  string
	}{
		{"size 0", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.TumblingEventTime(0)), sumWev)
		}, "size must be positive"},
		{"slide 0", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.SlidingEventTime(wms(10), 0)), sumWev)
		}, "slide > 0"},
		{"offset", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.TumblingEventTime(wms(10)).WithOffset(wms(-10))), sumWev)
		}, "|offset| < size"},
		{"gap", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.EventTimeSessions(0)), sumWev)
		}, "gap must be positive"},
		{"count n", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.TumblingEventTime(wms(10))).Trigger(window.CountTrigger(0)), sumWev)
		}, "n > 0"},
		{"lateness", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.TumblingEventTime(wms(10))).AllowedLateness(-time.Second), sumWev)
		}, "must not be negative"},
		{"nil reduce", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.TumblingEventTime(wms(10))), nil)
		}, "window function is nil"},
		{"never trigger on sessions", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.EventTimeSessions(wms(3))).Trigger(window.NeverTrigger()), sumWev)
		}, "does not support merging"},
		{"dynamic gap type", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.Window(ks, window.DynamicEventTimeSessions(func(int) time.Duration { return time.Second })), sumWev)
		}, "reads elements of type int"},
		{"count window size", func(ks weir.KeyedStream[string, wev]) weir.DataStream[wev] {
			return weir.Reduce(weir.CountWindow(ks, 0), sumWev)
		}, "count window size must be positive"},
	}
	for _, c := range cases {
		env := weir.NewEnvironment(weir.WithParallelism(1))
		ks := weir.KeyBy(weir.FromSlice(env, []wev{{"a", 1}}), func(e wev) string { return e.K })
		c.build(ks)
		err := env.Err()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Window(") {
			t.Errorf("%s: error %v, want one naming the operator and containing %q", c.name, err, c.want)
		}
	}
	// Allowed lateness on processing-time windows is ignored, not an error.
	env := weir.NewEnvironment(weir.WithParallelism(1))
	ks := weir.KeyBy(weir.FromSlice(env, []wev{{"a", 1}}), func(e wev) string { return e.K })
	weir.Reduce(weir.Window(ks, window.TumblingProcessingTime(wms(10))).AllowedLateness(time.Second), sumWev)
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDynamicSessions(t *testing.T) {
	h, err := weirtest.NewOneInput(func(in weir.DataStream[wev]) weir.DataStream[wev] {
		a := window.DynamicEventTimeSessions(func(e wev) time.Duration { return wms(e.V) })
		return weir.Reduce(weir.Window(weir.KeyBy(in, func(e wev) string { return e.K }), a), sumWev)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = h.ProcessElement(wev{"k", 5}, 0)  // [0,5)
	_ = h.ProcessElement(wev{"k", 2}, 5)  // [5,7) touches: [0,7)
	_ = h.ProcessElement(wev{"k", 1}, 20) // [20,21)
	_ = h.EndInput()
	if got := recs(t, h); !slices.Equal(got, []string{"{k 7}@6", "{k 1}@20"}) {
		t.Fatalf("dynamic sessions: %v", got)
	}
}
