package clock

import "testing"

func TestPausable(t *testing.T) {
	m := NewManual(1000)
	p := NewPausable(m)
	split := NewPausable(p)
	if p.NowMillis() != 1000 || split.NowMillis() != 1000 {
		t.Fatal("a new clock reads its base")
	}
	m.Advance(100)
	p.Pause()
	p.Pause() // nested
	m.Advance(50)
	if p.NowMillis() != 1100 || split.NowMillis() != 1100 {
		t.Fatalf("paused: %d %d, want 1100", p.NowMillis(), split.NowMillis())
	}
	p.Resume()
	m.Advance(10)
	if p.NowMillis() != 1100 || !p.Paused() {
		t.Fatal("one Resume of two pauses must not restart the clock")
	}
	p.Resume()
	m.Advance(40)
	// 100 ms ran, 60 ms were paused, 40 ran again.
	if p.NowMillis() != 1140 || split.NowMillis() != 1140 {
		t.Fatalf("resumed: %d %d, want 1140", p.NowMillis(), split.NowMillis())
	}
	split.Pause()
	m.Advance(30)
	p.Pause() // the base stops while the split clock is paused too
	m.Advance(20)
	p.Resume()
	split.Resume()
	if p.NowMillis() != 1170 {
		t.Fatalf("base: %d, want 1170", p.NowMillis())
	}
	if split.NowMillis() != 1140 {
		t.Fatalf("split: %d, want 1140 (paused for all 50 ms)", split.NowMillis())
	}
	split.Resume() // unmatched: ignored
	m.Advance(5)
	if split.NowMillis() != 1145 {
		t.Fatalf("split: %d, want 1145", split.NowMillis())
	}
}
