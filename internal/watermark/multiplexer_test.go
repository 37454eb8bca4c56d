package watermark

import "testing"

func newMux() (*Multiplexer, *[]Event) {
	got := new([]Event)
	em := NewEmitter(func(e Event) { *got = append(*got, e) })
	return NewMultiplexer(em), got
}

func expect(t *testing.T, got *[]Event, want ...Event) {
	t.Helper()
	if !sameEvents(*got, want) {
		t.Fatalf("got %v, want %v", *got, want)
	}
	*got = (*got)[:0]
}

func TestMultiplexerImmediate(t *testing.T) {
	m, got := newMux()
	a := m.Register("a")
	b := m.Register("b")
	if m.Splits() != 2 || m.Immediate("a") != a {
		t.Fatal("registration")
	}

	a.EmitWatermark(10)
	expect(t, got) // b still at Min
	b.EmitWatermark(7)
	expect(t, got, wmEv(7))
	b.EmitWatermark(12)
	expect(t, got, wmEv(10))
	a.EmitWatermark(9) // regression of a split: ignored
	expect(t, got)
	if m.Combined() != 10 {
		t.Fatalf("combined %d", m.Combined())
	}

	// b idle: the min over the non-idle splits is a's 10, nothing new.
	b.MarkIdle()
	expect(t, got)
	// a idle too: all idle -> the combined watermark flushes to the highest
	// split watermark, b's 12 (Flink 2.2, FLINK-38454), then the underlying
	// output is marked idle.
	a.MarkIdle()
	expect(t, got, wmEv(12), idleEv)
	if !m.Idle() {
		t.Fatal("multiplexer should be idle")
	}
	// MarkActive does not reach the underlying output; the next advancing
	// combined watermark does.
	a.MarkActive()
	expect(t, got)
	a.EmitWatermark(11) // below the flushed 12: nothing advances
	expect(t, got)
	a.EmitWatermark(13)
	expect(t, got, activeEv, wmEv(13))

	// A new split starts at Min and holds the combined watermark (it does not
	// regress) until it catches up.
	c := m.Register("c")
	a.EmitWatermark(20)
	expect(t, got)
	c.EmitWatermark(15)
	expect(t, got, wmEv(15))
	// Unregistering the lagging split combines only on the next update.
	m.Unregister("c")
	m.Unregister("nope")
	expect(t, got)
	m.OnPeriodicEmit()
	expect(t, got, wmEv(20))
	if m.Splits() != 2 {
		t.Fatalf("splits %d", m.Splits())
	}

	mustPanic(t, "double register", func() { m.Register("a") })
	mustPanic(t, "unknown deferred", func() { m.Deferred("c") })
	mustPanic(t, "nil underlying", func() { NewMultiplexer(nil) })
}

func TestMultiplexerNoSplits(t *testing.T) {
	m, got := newMux()
	m.OnPeriodicEmit()
	expect(t, got)
	a := m.Register("a")
	a.MarkIdle()
	expect(t, got, idleEv)
	m.Unregister("a")
	m.OnPeriodicEmit() // no splits: nothing is recomputed or emitted
	expect(t, got)
	if !m.Idle() {
		t.Fatal("idle flag is left as it was when there are no splits")
	}
}

// Flink's sources emit periodic watermarks to the deferred outputs and
// combine once per tick; immediate outputs would show intermediate values.
func TestMultiplexerDeferredVsImmediate(t *testing.T) {
	tick := func(m *Multiplexer, a, b Output, wa, wb int64, deferred bool) {
		a.EmitWatermark(wa)
		b.EmitWatermark(wb)
		if deferred {
			m.OnPeriodicEmit()
		}
	}
	for _, deferred := range []bool{true, false} {
		m, got := newMux()
		ia, ib := m.Register("a"), m.Register("b")
		a, b := ia, ib
		if deferred {
			a, b = m.Deferred("a"), m.Deferred("b")
		}
		tick(m, a, b, 5, 8, deferred)
		expect(t, got, wmEv(5))
		tick(m, a, b, 10, 20, deferred)
		if deferred {
			expect(t, got, wmEv(10))
		} else {
			expect(t, got, wmEv(8), wmEv(10))
		}
		// Both splits go idle in one tick.
		a.MarkIdle()
		b.MarkIdle()
		if deferred {
			m.OnPeriodicEmit()
		}
		// Either way both are idle at the end: the highest split watermark,
		// 20, is flushed before the idle status (FLINK-38454).
		expect(t, got, wmEv(20), idleEv)
	}
}
