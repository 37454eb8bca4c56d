package weir_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

// hv is a keyed harness record.
type hv struct{ K, V string }

func (v hv) String() string { return v.K + v.V }

// collectFn is a KeyedProcessFunction for the harness tests: on-time
// elements are added to a list and register an event-time timer at ts+10
// and a processing-time timer at now+100; late elements (ts <= watermark)
// go to lateTag. An event-time timer emits and clears the key's list (key
// "chain" also registers the next millisecond, up to 37); a processing-time
// timer emits "pt KEY" on the main output and on ptTag.
type collectFn struct {
	list state.ListState[string]
}

func (f *collectFn) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	f.list, err = weir.GetListState(ctx, state.List[string]("elements"))
	return err
}

func (f *collectFn) ProcessElement(v hv, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	if ts <= ctx.CurrentWatermark() {
		weir.Output(ctx, lateTag, fmt.Sprintf("late %v", v))
		return nil
	}
	f.list.Add(v.V)
	ctx.TimerService().RegisterEventTimeTimer(ts + 10)
	ctx.TimerService().RegisterProcessingTimeTimer(ctx.CurrentProcessingTime() + 100)
	return nil
}

func (f *collectFn) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	if ctx.TimeDomain() == weir.ProcessingTime {
		out.Collect("pt " + ctx.CurrentKey())
		weir.Output(ctx, ptTag, "pt "+ctx.CurrentKey())
		return nil
	}
	out.Collect(fmt.Sprintf("%s:%s", ctx.CurrentKey(), strings.Join(f.list.Get(), ",")))
	f.list.Clear()
	if ctx.CurrentKey() == "chain" && ts < 37 {
		ctx.TimerService().RegisterEventTimeTimer(ts + 1)
	}
	return nil
}

func newCollectHarness(t *testing.T, opts ...weirtest.Option) *weirtest.OneInput[hv, string] {
	t.Helper()
	h, err := weirtest.NewOneInput(func(in weir.DataStream[hv]) weir.DataStream[string] {
		return weir.Process(weir.KeyBy(in, func(v hv) string { return v.K }), &collectFn{})
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantEvents compares harness events by their String form.
func wantEvents(t *testing.T, step string, got []weirtest.Event, want ...string) {
	t.Helper()
	var g []string
	for _, e := range got {
		g = append(g, e.String())
	}
	if !slices.Equal(g, want) {
		t.Fatalf("%s: events\n  %s\nwant\n  %s", step, strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestHarnessKeyedProcessFunction(t *testing.T) {
	h := newCollectHarness(t, weirtest.SideOutputs(lateTag, ptTag))

	ok(t, h.ProcessElement(hv{"a", "1"}, 5))
	ok(t, h.ProcessElement(hv{"b", "1"}, 7))
	ok(t, h.ProcessElement(hv{"a", "2"}, 8))
	wantEvents(t, "elements", h.TakeEvents())

	// Timers fire before the watermark that fires them is forwarded.
	ok(t, h.ProcessWatermark(14))
	wantEvents(t, "wm 14", h.TakeEvents(), "wm 14")
	ok(t, h.ProcessWatermark(15))
	wantEvents(t, "wm 15", h.TakeEvents(), "a:1,2@15", "wm 15")

	// A late element goes to the side output with its own timestamp.
	ok(t, h.ProcessElement(hv{"a", "3"}, 12))
	late := h.Events()
	wantEvents(t, "late", h.TakeEvents(), "side late late a3@12")
	if got := weirtest.SideOutputOf(late, lateTag); len(got) != 1 || got[0].Value != "late a3" || got[0].TS != 12 {
		t.Errorf("late side output: %v", got)
	}

	// Several timers fire in timestamp order; an older watermark is ignored.
	ok(t, h.ProcessWatermark(20))
	wantEvents(t, "wm 20", h.TakeEvents(), "b:1@17", "a:@18", "wm 20")
	ok(t, h.ProcessWatermark(19))
	wantEvents(t, "wm 19", h.TakeEvents())

	// Timers registered while firing, due by the watermark, fire in the
	// same advance.
	ok(t, h.ProcessElement(hv{"chain", "x"}, 25))
	ok(t, h.ProcessWatermark(40))
	wantEvents(t, "wm 40", h.TakeEvents(), "chain:x@35", "chain:@36", "chain:@37", "wm 40")

	// Processing-time timers: every element registered one at 100.
	ok(t, h.SetProcessingTime(99))
	wantEvents(t, "pt 99", h.TakeEvents())
	ok(t, h.SetProcessingTime(100))
	ev := h.TakeEvents()
	main, side := []string{}, []string{}
	for _, e := range ev {
		switch e.Kind {
		case weirtest.KindRecord:
			if e.TS != weir.NoTimestamp {
				t.Errorf("processing-time timer output %v has a timestamp", e)
			}
			main = append(main, e.Value.(string))
		case weirtest.KindSide:
			side = append(side, e.Value.(string))
		default:
			t.Errorf("unexpected event %v", e)
		}
	}
	slices.Sort(main)
	if want := []string{"pt a", "pt b", "pt chain"}; !slices.Equal(main, want) || !slices.Equal(sorted(side), want) {
		t.Fatalf("pt 100: main %v, side %v; want %v on both", main, side, want)
	}
	for _, r := range weirtest.SideOutputOf(ev, ptTag) {
		if r.TS != 100 {
			t.Errorf("side output %v of a processing-time timer: want the timer time 100", r)
		}
	}
	if got := h.ProcessingTime(); got != 100 {
		t.Errorf("ProcessingTime() = %d", got)
	}

	// The end of input fires the remaining event-time timers before MAX.
	ok(t, h.ProcessElement(hv{"d", "1"}, 50))
	ok(t, h.EndInput())
	wantEvents(t, "end", h.TakeEvents(), "d:1@60", fmt.Sprintf("wm %d", weir.MaxWatermark))
	ok(t, h.Close())
}

// TestHarnessChannelsValve drives a keyed operator over two input channels:
// the operator's watermark is the minimum over active channels (V10 of
// the Flink reference, in part).
func TestHarnessChannelsValve(t *testing.T) {
	h := newCollectHarness(t, weirtest.Channels(2, 0))
	ok(t, h.ProcessElementOn(0, hv{"a", "1"}, 1))
	ok(t, h.ProcessElementOn(1, hv{"b", "1"}, 2))
	ok(t, h.ProcessWatermarkOn(0, 30))
	wantEvents(t, "ch0 30", h.TakeEvents())
	ok(t, h.ProcessWatermarkOn(1, 11))
	wantEvents(t, "ch1 11", h.TakeEvents(), "a:1@11", "wm 11")
	// Channel 1 idle: the watermark follows channel 0.
	ok(t, h.SetIdle(1, true))
	wantEvents(t, "ch1 idle", h.TakeEvents(), "b:1@12", "wm 30")
	// Channel 1 active again below the output: it does not hold it back.
	ok(t, h.SetIdle(1, false))
	ok(t, h.ProcessWatermarkOn(0, 40))
	wantEvents(t, "ch1 active, ch0 40", h.TakeEvents(), "wm 40")
	// Both idle: the status goes idle; then active again.
	ok(t, h.SetIdle(0, true))
	ok(t, h.SetIdle(1, true))
	wantEvents(t, "all idle", h.TakeEvents(), "status idle")
	ok(t, h.SetIdle(0, false))
	wantEvents(t, "active", h.TakeEvents(), "status active")
	if err := h.ProcessElementOn(2, hv{"x", "1"}, 1); err == nil {
		t.Fatal("a record on channel 2 of 2 was accepted")
	}
}

// TestHarnessProcessStream drives a non-keyed process function.
func TestHarnessProcessStream(t *testing.T) {
	h, err := weirtest.NewOneInput(func(in weir.DataStream[int64]) weir.DataStream[int64] {
		return weir.ProcessStreamFunc(in, splitOddEven)
	}, weirtest.SideOutputs(oddTag))
	ok(t, err)
	defer h.Close()
	ok(t, h.ProcessElement(1, 10))
	ok(t, h.ProcessElement(2, 20))
	ok(t, h.ProcessWatermark(25))
	wantEvents(t, "all", h.TakeEvents(), "side odd 1@10", "20@20", "wm 25")
	if got := h.Output(); len(got) != 0 {
		t.Fatalf("Output after TakeEvents: %v", got)
	}
	ok(t, h.ProcessElement(4, 30))
	if got := h.Output(); len(got) != 1 || got[0].Value != 40 || got[0].TS != 30 {
		t.Fatalf("Output = %v", got)
	}
}

// TestHarnessRunsMultiTaskPlans checks that the harness drives a pipeline
// of several tasks (here a keyed process after a rebalance and a keyBy) on
// the caller's goroutine: what one task emits reaches the next within the
// same step, watermarks included.
func TestHarnessRunsMultiTaskPlans(t *testing.T) {
	h, err := weirtest.NewOneInput(func(in weir.DataStream[int64]) weir.DataStream[int64] {
		doubled := weir.Map(weir.Rebalance(weir.Map(in, func(v int64) int64 { return v })), func(v int64) int64 { return 2 * v })
		return weir.ProcessFunc(weir.KeyBy(doubled, func(v int64) int64 { return v % 2 }),
			func(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
				out.Collect(v + 1)
				return nil
			})
	})
	ok(t, err)
	defer h.Close()
	ok(t, h.ProcessElement(3, 10))
	ok(t, h.ProcessWatermark(12))
	wantEvents(t, "pipeline", h.TakeEvents(), "7@10", "wm 12")
}

// timerOps registers an event-time timer at each element's timestamp (or
// deletes it, for value "del"); key "pt" instead registers processing-time
// timers now+10 that re-register the next millisecond up to 13.
type timerOps struct{}

func (timerOps) ProcessElement(v hv, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	switch {
	case v.K == "pt":
		ctx.TimerService().RegisterProcessingTimeTimer(ctx.CurrentProcessingTime() + 10)
	case v.V == "del":
		ctx.TimerService().DeleteEventTimeTimer(ts)
	default:
		ctx.TimerService().RegisterEventTimeTimer(ts)
	}
	return nil
}

func (timerOps) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	if ctx.TimeDomain() == weir.ProcessingTime {
		out.Collect(fmt.Sprintf("pt %d now=%d", ts, ctx.CurrentProcessingTime()))
		if ts < 13 {
			ctx.TimerService().RegisterProcessingTimeTimer(ts + 1)
		}
		return nil
	}
	out.Collect(fmt.Sprintf("%s wm=%d", ctx.CurrentKey(), ctx.CurrentWatermark()))
	return nil
}

func newTimerOpsHarness(t *testing.T) *weirtest.OneInput[hv, string] {
	t.Helper()
	h, err := weirtest.NewOneInput(func(in weir.DataStream[hv]) weir.DataStream[string] {
		return weir.Process(weir.KeyBy(in, func(v hv) string { return v.K }), timerOps{})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestHarnessEventTimerRules: a timer at or before the current watermark
// does not fire at once but at the next advancing watermark; a deleted
// timer does not fire; timers see the new watermark.
func TestHarnessEventTimerRules(t *testing.T) {
	h := newTimerOpsHarness(t)
	ok(t, h.ProcessWatermark(20))
	ok(t, h.ProcessElement(hv{"a", ""}, 10)) // in the past
	ok(t, h.ProcessElement(hv{"b", ""}, 20)) // at the watermark
	ok(t, h.ProcessElement(hv{"c", ""}, 30))
	ok(t, h.ProcessElement(hv{"d", ""}, 25))
	ok(t, h.ProcessElement(hv{"d", "del"}, 25))
	ok(t, h.ProcessElement(hv{"e", "del"}, 99)) // deleting a missing timer
	wantEvents(t, "registered", h.TakeEvents(), "wm 20")
	ok(t, h.ProcessWatermark(20))
	wantEvents(t, "same watermark", h.TakeEvents())
	ok(t, h.ProcessWatermark(21))
	wantEvents(t, "wm 21", h.TakeEvents(), "a wm=21@10", "b wm=21@20", "wm 21")
	ok(t, h.ProcessWatermark(40))
	wantEvents(t, "wm 40", h.TakeEvents(), "c wm=40@30", "wm 40")
}

// TestHarnessProcessingTimerChain: processing-time timers registered while
// firing and due by then fire in the same advance, in order.
func TestHarnessProcessingTimerChain(t *testing.T) {
	h := newTimerOpsHarness(t)
	ok(t, h.ProcessElement(hv{"pt", ""}, 1))
	ok(t, h.SetProcessingTime(20))
	no := fmt.Sprint(weir.NoTimestamp)
	wantEvents(t, "at 20", h.TakeEvents(), "pt 10 now=20@"+no, "pt 11 now=20@"+no, "pt 12 now=20@"+no, "pt 13 now=20@"+no)
	ok(t, h.SetProcessingTime(10)) // the clock never goes back
	if got := h.ProcessingTime(); got != 20 {
		t.Fatalf("ProcessingTime after setting it back: %d", got)
	}
}
