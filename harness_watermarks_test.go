package weir_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

func newAssignerHarness(t *testing.T, s weir.WatermarkStrategy[int64]) *weirtest.OneInput[int64, int64] {
	t.Helper()
	h, err := weirtest.NewOneInput(func(in weir.DataStream[int64]) weir.DataStream[int64] {
		return weir.AssignTimestampsAndWatermarks(in, s.WithTimestampAssigner(func(v int64, _ int64) int64 { return v }))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestHarnessBoundedOutOfOrdernessV12 checks the exact watermarks that
// ForBoundedOutOfOrderness(3 ms) emits with one periodic tick (every 200 ms
// of the harness clock) after each element: vector V12 of the Flink
// reference, emitted 6, 11, MAX.
func TestHarnessBoundedOutOfOrdernessV12(t *testing.T) {
	h := newAssignerHarness(t, weir.ForBoundedOutOfOrderness[int64](3*time.Millisecond))
	ok(t, h.SetProcessingTime(200))
	wantEvents(t, "no event yet", h.TakeEvents()) // MIN is suppressed
	at := int64(200)
	for _, s := range []struct {
		ts   int64
		want []string
	}{
		{10, []string{"10@10", "wm 6"}},
		{7, []string{"7@7"}}, // 6 again: suppressed
		{15, []string{"15@15", "wm 11"}},
		{12, []string{"12@12"}},
	} {
		ok(t, h.ProcessElement(s.ts, weir.NoTimestamp))
		at += 200
		ok(t, h.SetProcessingTime(at))
		wantEvents(t, fmt.Sprintf("event %d and a tick", s.ts), h.TakeEvents(), s.want...)
	}
	ok(t, h.EndInput())
	wantEvents(t, "end", h.TakeEvents(), fmt.Sprintf("wm %d", weir.MaxWatermark))
}

// TestHarnessPeriodicTicksFollowTheClock checks that ticks run every 200 ms
// of processing time (not at other times), one per interval even when the
// clock jumps.
func TestHarnessPeriodicTicksFollowTheClock(t *testing.T) {
	h := newAssignerHarness(t, weir.ForMonotonousTimestamps[int64]())
	ok(t, h.ProcessElement(10, weir.NoTimestamp))
	ok(t, h.SetProcessingTime(199))
	wantEvents(t, "before the first tick", h.TakeEvents(), "10@10")
	ok(t, h.SetProcessingTime(200))
	wantEvents(t, "first tick", h.TakeEvents(), "wm 9")
	ok(t, h.ProcessElement(20, weir.NoTimestamp))
	ok(t, h.ProcessElement(30, weir.NoTimestamp))
	ok(t, h.SetProcessingTime(1000))
	wantEvents(t, "jump", h.TakeEvents(), "20@20", "30@30", "wm 29")
}

// TestHarnessWithIdleness checks Flink's idleness timing (§5.1 of the
// reference) with a 200 ms interval and a 1000 ms timeout: the first quiet
// tick (400) starts the timer; 1400 - 400 = 1000 is not above the timeout;
// the tick at 1600 marks the stream idle. A new event alone does not make
// it active; the next advancing watermark does, preceded by status ACTIVE.
func TestHarnessWithIdleness(t *testing.T) {
	h := newAssignerHarness(t, weir.ForBoundedOutOfOrderness[int64](0).WithIdleness(time.Second))
	ok(t, h.ProcessElement(100, weir.NoTimestamp))
	ok(t, h.SetProcessingTime(200))
	wantEvents(t, "tick 200", h.TakeEvents(), "100@100", "wm 99")
	for at := int64(400); at <= 1400; at += 200 {
		ok(t, h.SetProcessingTime(at))
		wantEvents(t, fmt.Sprintf("tick %d", at), h.TakeEvents())
	}
	ok(t, h.SetProcessingTime(1600))
	wantEvents(t, "tick 1600", h.TakeEvents(), "status idle")
	ok(t, h.SetProcessingTime(1800))
	wantEvents(t, "tick 1800", h.TakeEvents())
	ok(t, h.ProcessElement(50, weir.NoTimestamp)) // not advancing
	wantEvents(t, "event while idle", h.TakeEvents(), "50@50")
	ok(t, h.SetProcessingTime(2000))
	wantEvents(t, "tick 2000", h.TakeEvents())
	ok(t, h.ProcessElement(300, weir.NoTimestamp))
	ok(t, h.SetProcessingTime(2200))
	wantEvents(t, "tick 2200", h.TakeEvents(), "300@300", "status active", "wm 299")
}
