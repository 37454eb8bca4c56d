package watermark

import "testing"

func TestEmitterRules(t *testing.T) {
	var got []Event
	e := NewEmitter(func(ev Event) { got = append(got, ev) })
	if e.Last() != Min || e.Idle() {
		t.Fatal("bad initial state")
	}
	e.EmitWatermark(Min) // not above Min
	e.MarkActive()       // already active
	e.EmitWatermark(5)
	e.EmitWatermark(5)
	e.EmitWatermark(4)
	e.MarkIdle()
	e.MarkIdle()
	e.EmitWatermark(5) // not advancing: stays idle
	e.EmitWatermark(6) // advancing: ACTIVE first
	e.MarkIdle()
	e.MarkActive()
	e.MarkActive()
	want := []Event{wmEv(5), idleEv, activeEv, wmEv(6), idleEv, activeEv}
	if !sameEvents(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if e.Last() != 6 || e.Idle() {
		t.Fatalf("Last %d Idle %v", e.Last(), e.Idle())
	}
	mustPanic(t, "nil callback", func() { NewEmitter(nil) })
}

func TestEventString(t *testing.T) {
	for ev, want := range map[Event]string{
		wmEv(-3): "wm -3", idleEv: "status idle", activeEv: "status active",
	} {
		if ev.String() != want {
			t.Fatalf("%#v.String() = %q, want %q", ev, ev.String(), want)
		}
	}
}
