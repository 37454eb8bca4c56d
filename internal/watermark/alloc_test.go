package watermark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

func TestValveWatermarkNoAllocs(t *testing.T) {
	v := NewValve(4)
	out := make([]Event, 0, 4)
	w := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		w++
		for ch := range 4 {
			out = v.Watermark(ch, w+int64(ch), out[:0])
		}
	})
	if allocs != 0 {
		t.Fatalf("Valve.Watermark: %v allocs per run", allocs)
	}
	if v.Output() != w {
		t.Fatalf("output %d, want %d", v.Output(), w)
	}
}

func TestValveStatusNoAllocs(t *testing.T) {
	v := NewValve(3)
	out := make([]Event, 0, 4)
	w := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		w += 3
		for ch := range 3 {
			out = v.Watermark(ch, w+int64(ch), out[:0])
		}
		for ch := range 3 {
			out = v.Status(ch, true, out[:0])
		}
		for ch := range 3 {
			out = v.Status(ch, false, out[:0])
		}
	})
	if allocs != 0 {
		t.Fatalf("Valve.Status: %v allocs per run", allocs)
	}
}

func TestSteadyStateNoAllocs(t *testing.T) {
	c := NewCombiner(2)
	n := 0
	em := NewEmitter(func(Event) { n++ })
	clk := clock.NewManual(0)
	g := WithIdleness(BoundedOutOfOrderness[int](time.Second), time.Second, clk)
	m := NewMultiplexer(em)
	a, b := m.Register("a"), m.Register("b")
	da := m.Deferred("a")
	ts := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		ts += 10
		c.Watermark(0, ts)
		c.Watermark(1, ts)
		c.Status(1, true)
		c.Status(1, false)
		g.OnEvent(1, ts, a)
		g.OnPeriodicEmit(a)
		b.EmitWatermark(ts)
		b.MarkIdle()
		b.MarkActive()
		da.EmitWatermark(ts + 1)
		m.OnPeriodicEmit()
	})
	if allocs != 0 {
		t.Fatalf("steady state: %v allocs per run", allocs)
	}
	if n == 0 {
		t.Fatal("nothing emitted")
	}
}
