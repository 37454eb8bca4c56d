package weir_test

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

var expiredTag = weir.NewOutputTag[string]("expired")

// joinFn is a KeyedCoProcessFunction for the harness: input 1 (orders)
// waits in ValueState for input 2 (payments) until ts+5 in event time;
// a payment for a waiting order emits the pair, otherwise it is reported
// as unmatched; an order that expires goes to expiredTag.
type joinFn struct {
	order state.ValueState[string]
}

func (f *joinFn) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	f.order, err = weir.GetValueState(ctx, state.Value[string]("order"))
	return err
}

func (f *joinFn) ProcessElement1(v hv, ctx weir.KeyedContext[string], _ weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	f.order.Update(v.V)
	ctx.TimerService().RegisterEventTimeTimer(ts + 5)
	return nil
}

func (f *joinFn) ProcessElement2(v hv, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	o, ok := f.order.Value()
	if !ok {
		out.Collect(fmt.Sprintf("unmatched %s/%s", ctx.CurrentKey(), v.V))
		return nil
	}
	f.order.Clear()
	out.Collect(fmt.Sprintf("paid %s/%s/%s", ctx.CurrentKey(), o, v.V))
	return nil
}

func (f *joinFn) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	if o, ok := f.order.Value(); ok {
		f.order.Clear()
		weir.Output(ctx, expiredTag, fmt.Sprintf("expired %s/%s wm=%d", ctx.CurrentKey(), o, ctx.CurrentWatermark()))
	}
	return nil
}

func newJoinHarness(t *testing.T, opts ...weirtest.Option) *weirtest.TwoInput[hv, hv, string] {
	t.Helper()
	key := func(v hv) string { return v.K }
	h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[hv]) weir.DataStream[string] {
		return weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(a, key), weir.KeyBy(b, key)), &joinFn{})
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestHarnessKeyedCoProcessFunction checks state shared by both inputs per
// key, timers on the combined watermark (V11 of the Flink reference: the
// minimum over non-idle inputs, never backwards) and side outputs from
// timers, which carry the timer's time.
func TestHarnessKeyedCoProcessFunction(t *testing.T) {
	h := newJoinHarness(t, weirtest.SideOutputs(expiredTag))
	ok(t, h.ProcessElement1(0, hv{"o1", "book"}, 1))
	ok(t, h.ProcessElement1(0, hv{"o2", "pen"}, 2))
	ok(t, h.ProcessElement1(0, hv{"o3", "ink"}, 4))
	ok(t, h.ProcessElement2(0, hv{"o1", "$5"}, 3))
	ok(t, h.ProcessElement2(0, hv{"o9", "$1"}, 3))
	wantEvents(t, "elements", h.TakeEvents(), "paid o1/book/$5@3", "unmatched o9/$1@3")

	ok(t, h.ProcessWatermark1(0, 5))
	wantEvents(t, "in1 wm 5", h.TakeEvents()) // input 2 is still at MIN
	ok(t, h.ProcessWatermark2(0, 3))
	wantEvents(t, "in2 wm 3", h.TakeEvents(), "wm 3")
	// Input 2 idle: the combined watermark follows input 1 (5) and the
	// timer of o1 (6, but o1 was paid) does not fire yet; o2's at 7 neither.
	ok(t, h.SetIdle2(0, true))
	wantEvents(t, "in2 idle", h.TakeEvents(), "wm 5")
	ok(t, h.ProcessWatermark1(0, 4))
	wantEvents(t, "in1 wm 4", h.TakeEvents())
	// Input 2 active again at 3 < 5: no regression.
	ok(t, h.SetIdle2(0, false))
	wantEvents(t, "in2 active", h.TakeEvents())
	ok(t, h.ProcessWatermark2(0, 7))
	wantEvents(t, "in2 wm 7", h.TakeEvents()) // min(5, 7) is not above 5
	// min(9, 7) = 7: o1's timer at 6 finds it paid; o2 expires at 7.
	ok(t, h.ProcessWatermark1(0, 9))
	wantEvents(t, "in1 wm 9", h.TakeEvents(), "side expired expired o2/pen wm=7@7", "wm 7")
	// Both idle: the combined watermark first moves to the highest input
	// watermark, 9 (Flink 2.2, FLINK-38454), firing o3's timer and going out
	// before the operator announces idle (V11, rows 9 and 10); input 1
	// active again changes only the status.
	ok(t, h.SetIdle1(0, true))
	wantEvents(t, "in1 idle", h.TakeEvents())
	ok(t, h.SetIdle2(0, true))
	wantEvents(t, "in2 idle", h.TakeEvents(), "side expired expired o3/ink wm=9@9", "wm 9", "status idle")
	ok(t, h.SetIdle1(0, false))
	wantEvents(t, "in1 active", h.TakeEvents(), "status active")
	ok(t, h.ProcessWatermark1(0, 10))
	wantEvents(t, "in1 wm 10", h.TakeEvents(), "wm 10")
	ok(t, h.ProcessElement1(0, hv{"o4", "cup"}, 20))
	ok(t, h.EndInput())
	wantEvents(t, "end", h.TakeEvents(), fmt.Sprintf("side expired expired o4/cup wm=%d@25", weir.MaxWatermark), fmt.Sprintf("wm %d", weir.MaxWatermark))
	ok(t, h.Close())
}

// TestHarnessTwoInputChannels uses two channels on input 1: its watermark
// is the minimum of both before the two inputs are combined.
func TestHarnessTwoInputChannels(t *testing.T) {
	h := newJoinHarness(t, weirtest.Channels(2, 1))
	ok(t, h.ProcessElement1(1, hv{"o1", "book"}, 1))
	ok(t, h.ProcessWatermark2(0, 100))
	ok(t, h.ProcessWatermark1(0, 50))
	wantEvents(t, "in1 ch0 50", h.TakeEvents())
	ok(t, h.ProcessWatermark1(1, 20))
	wantEvents(t, "in1 ch1 20", h.TakeEvents(), "wm 20")
	ok(t, h.ProcessElement2(0, hv{"o1", "$5"}, 30))
	wantEvents(t, "late payment", h.TakeEvents(), "unmatched o1/$5@30")
	if err := h.ProcessElement2(1, hv{"x", "y"}, 1); err == nil {
		t.Fatal("a record on channel 1 of input 2 (one channel) was accepted")
	}
}

// wmCo reports the watermark a non-keyed co-process function sees.
type wmCo struct{}

func (wmCo) ProcessElement1(v string, ctx weir.Context, out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("1:%s wm=%d", v, ctx.CurrentWatermark()))
	return nil
}

func (wmCo) ProcessElement2(v string, ctx weir.Context, out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("2:%s wm=%d", v, ctx.CurrentWatermark()))
	return nil
}

// TestHarnessCoProcessWatermark: a non-keyed co-process function sees the
// minimum of its inputs' watermarks.
func TestHarnessCoProcessWatermark(t *testing.T) {
	h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[string]) weir.DataStream[string] {
		return weir.CoProcess(weir.Connect(a, b), wmCo{})
	})
	ok(t, err)
	defer h.Close()
	ok(t, h.ProcessWatermark1(0, 10))
	ok(t, h.ProcessElement2(0, "x", 1))
	ok(t, h.ProcessWatermark2(0, 5))
	ok(t, h.ProcessElement1(0, "y", 2))
	ok(t, h.ProcessWatermark2(0, 50))
	ok(t, h.ProcessElement1(0, "z", 3))
	wantEvents(t, "all", h.TakeEvents(), fmt.Sprintf("2:x wm=%d@1", weir.MinWatermark), "wm 5", "1:y wm=5@2", "wm 10", "1:z wm=10@3")
}
