package watermark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// countingGen records the calls WithIdleness forwards to the wrapped generator.
type countingGen struct {
	events   int
	periodic []int64 // clock time of each forwarded OnPeriodicEmit
	clk      clock.Clock
	wm       int64
}

func (g *countingGen) OnEvent(_ int, ts int64, _ Output) { g.events++; g.wm = ts }
func (g *countingGen) OnPeriodicEmit(out Output) {
	g.periodic = append(g.periodic, g.clk.NowMillis())
	out.EmitWatermark(g.wm)
}

// §5.1: interval 200 ms, timeout 1000 ms, last event just before the tick at
// 100 -> quiet tick at 300 -> idle at the tick at 1500.
func TestIdlenessTiming(t *testing.T) {
	clk := clock.NewManual(0)
	inner := &countingGen{clk: clk}
	g := WithIdleness[int](inner, 1000*time.Millisecond, clk)
	var got []Event
	em := NewEmitter(func(e Event) { got = append(got, e) })

	clk.Set(99)
	g.OnEvent(0, 5, em)
	if inner.events != 1 {
		t.Fatal("event not forwarded")
	}
	idleAt := int64(-1)
	for now := int64(100); now <= 2500; now += 200 {
		clk.Set(now)
		before := len(got)
		g.OnPeriodicEmit(em)
		for _, e := range got[before:] {
			if e == idleEv {
				if idleAt >= 0 {
					t.Fatalf("second IDLE at %d", now)
				}
				idleAt = now
			}
		}
	}
	if idleAt != 1500 {
		t.Fatalf("idle at %d, want 1500 (events %v)", idleAt, got)
	}
	// The wrapped generator ran at every tick before idleness, not after.
	var want []int64
	for now := int64(100); now < 1500; now += 200 {
		want = append(want, now)
	}
	if !equalInts(inner.periodic, want) {
		t.Fatalf("wrapped OnPeriodicEmit at %v, want %v", inner.periodic, want)
	}
	if want := []Event{wmEv(5), idleEv}; !sameEvents(got, want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}

	// An event alone does not make the output active; the next advancing
	// watermark does, at the next tick (activity since the last tick).
	got = got[:0]
	g.OnEvent(0, 9, em)
	if len(got) != 0 || !em.Idle() {
		t.Fatalf("event while idle emitted %v (idle %v)", got, em.Idle())
	}
	clk.Set(2700)
	g.OnPeriodicEmit(em)
	if want := []Event{activeEv, wmEv(9)}; !sameEvents(got, want) {
		t.Fatalf("after resume: got %v, want %v", got, want)
	}

	// After the resume the rule starts over: quiet tick at 2900, idle at the
	// first tick strictly more than 1000 later (4100).
	got = got[:0]
	idleAt = -1
	for now := int64(2900); now <= 4500; now += 200 {
		clk.Set(now)
		g.OnPeriodicEmit(em)
		if idleAt < 0 && len(got) > 0 && got[len(got)-1] == idleEv {
			idleAt = now
		}
	}
	if idleAt != 4100 {
		t.Fatalf("second idleness at %d, want 4100", idleAt)
	}
}

// The boundary is strict, and a stream that never sees an event goes idle too.
func TestIdlenessStrictAndNoEvents(t *testing.T) {
	clk := clock.NewManual(0)
	var r recOutput
	g := WithIdleness(None[int](), time.Second, clk)

	g.OnPeriodicEmit(&r) // t=0: first quiet tick starts the timer (a start of 0 is valid)
	clk.Set(1000)
	g.OnPeriodicEmit(&r) // 1000 - 0 = 1000, not > 1000
	if len(r.evs) != 0 {
		t.Fatalf("idle too early: %v", r.evs)
	}
	clk.Set(1001)
	g.OnPeriodicEmit(&r)
	if want := []Event{idleEv}; !sameEvents(r.evs, want) {
		t.Fatalf("at 1001: got %v, want %v", r.evs, want)
	}
	clk.Set(5000)
	g.OnPeriodicEmit(&r)
	if len(r.evs) != 1 {
		t.Fatalf("MarkIdle repeated: %v", r.evs)
	}
	// Activity between two ticks resets the timer.
	g.OnEvent(0, 1, &r)
	clk.Set(5200)
	g.OnPeriodicEmit(&r) // activity: reset, not idle
	clk.Set(5400)
	g.OnPeriodicEmit(&r) // first quiet tick: start = 5400
	clk.Set(6400)
	g.OnPeriodicEmit(&r) // 1000, not idle
	if len(r.evs) != 1 {
		t.Fatalf("idle again too early: %v", r.evs)
	}
	clk.Set(6401)
	g.OnPeriodicEmit(&r)
	if want := []Event{idleEv, idleEv}; !sameEvents(r.evs, want) {
		t.Fatalf("got %v, want %v", r.evs, want)
	}

	mustPanic(t, "zero timeout", func() { WithIdleness(None[int](), 0, clk) })
	mustPanic(t, "negative timeout", func() { WithIdleness(None[int](), -time.Second, clk) })
}
