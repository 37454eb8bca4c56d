package watermark

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
)

// TestMaxTimestampOnlyStandsForOnEvent: for bounded out-of-orderness, with
// and without idleness, feeding each batch of events by OnEvent or by one
// OnMaxTimestamp with its largest timestamp emits the same watermarks and
// statuses at every tick.
func TestMaxTimestampOnlyStandsForOnEvent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		delay := time.Duration(rapid.IntRange(0, 5).Draw(t, "delay")) * time.Millisecond
		idle := rapid.Bool().Draw(t, "idleness")
		clkA, clkB := clock.NewManual(0), clock.NewManual(0)
		a, b := BoundedOutOfOrderness[string](delay), BoundedOutOfOrderness[string](delay)
		if idle {
			a, b = WithIdleness(a, 300*time.Millisecond, clkA), WithIdleness(b, 300*time.Millisecond, clkB)
		}
		m := AsMaxTimestampOnly(b)
		if m == nil {
			t.Fatal("not MaxTimestampOnly")
		}
		var gotA, gotB []Event
		emA := NewEmitter(func(e Event) { gotA = append(gotA, e) })
		emB := NewEmitter(func(e Event) { gotB = append(gotB, e) })
		now := int64(0)
		for range rapid.IntRange(1, 30).Draw(t, "ticks") {
			batch := rapid.SliceOfN(rapid.Int64Range(-50, 500), 0, 8).Draw(t, "batch")
			for _, ts := range batch {
				a.OnEvent("e", ts, emA)
			}
			if len(batch) > 0 {
				mx := batch[0]
				for _, ts := range batch {
					mx = max(mx, ts)
				}
				m.OnMaxTimestamp(mx)
			}
			now += rapid.Int64Range(0, 250).Draw(t, "step")
			clkA.Set(now)
			clkB.Set(now)
			a.OnPeriodicEmit(emA)
			b.OnPeriodicEmit(emB)
			if !sameEvents(gotA, gotB) {
				t.Fatalf("OnEvent gave %v, OnMaxTimestamp %v", gotA, gotB)
			}
		}
	})
}

// A generator that looks at the events is not MaxTimestampOnly, nor is
// idleness around it.
func TestMaxTimestampOnlyNotClaimed(t *testing.T) {
	g := &countingGen{clk: clock.NewManual(0)}
	if AsMaxTimestampOnly[int](g) != nil || AsMaxTimestampOnly(WithIdleness[int](g, time.Second, g.clk)) != nil {
		t.Fatal("a generator that sees events claimed MaxTimestampOnly")
	}
	if AsMaxTimestampOnly(None[int]()) == nil || AsMaxTimestampOnly(Monotonous[int]()) == nil {
		t.Fatal("built-in periodic generators do not claim MaxTimestampOnly")
	}
}
