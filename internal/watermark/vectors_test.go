package watermark

import (
	"testing"
	"time"
)

// V10: StatusWatermarkValve with 3 channels.
func TestVectorV10(t *testing.T) {
	type row struct {
		ch   int
		kind stepKind
		wm   int64
		want []Event
	}
	rows := []row{
		{0, kWM, 5, nil},
		{1, kWM, 7, nil},
		{2, kWM, 3, []Event{wmEv(3)}},
		{2, kWM, 2, nil},
		{2, kIdle, 0, []Event{wmEv(5)}},
		{0, kWM, 6, []Event{wmEv(6)}},
		{2, kActive, 0, nil},
		{2, kWM, 4, nil},
		{2, kWM, 8, nil},
		{0, kWM, 9, []Event{wmEv(7)}},
		{0, kIdle, 0, nil},
		{1, kIdle, 0, []Event{wmEv(8)}},
		{2, kIdle, 0, []Event{wmEv(9), idleEv}},
		{1, kWM, 10, nil},
		{1, kActive, 0, []Event{activeEv}},
		{1, kWM, 10, []Event{wmEv(10)}},
	}
	v := NewValve(3)
	if v.Output() != Min || v.Idle() {
		t.Fatalf("initial state: output %d idle %v", v.Output(), v.Idle())
	}
	out := make([]Event, 0, 4)
	for i, r := range rows {
		out = out[:0]
		switch r.kind {
		case kWM:
			out = v.Watermark(r.ch, r.wm, out)
		case kIdle:
			out = v.Status(r.ch, true, out)
		case kActive:
			out = v.Status(r.ch, false, out)
		}
		if !sameEvents(out, r.want) {
			t.Fatalf("V10 row %d: got %v, want %v", i+1, out, r.want)
		}
	}
}

// V11: two-input combined watermark, fed straight into the combiner
// (processWatermark1/2, processWatermarkStatus1/2), with the output model;
// Flink 2.2's rows (FLINK-38454 changed row 9).
func TestVectorV11(t *testing.T) {
	type row struct {
		in       int
		kind     stepKind
		wm       int64
		combined int64
		fired    []int64 // processWatermark calls (timers fire up to these)
		want     []Event // what the output lets through
	}
	rows := []row{
		{0, kWM, 5, Min, nil, nil},
		{1, kWM, 3, 3, []int64{3}, []Event{wmEv(3)}},
		{1, kIdle, 0, 5, []int64{5}, []Event{wmEv(5)}},
		{0, kWM, 4, 5, nil, nil},
		{1, kActive, 0, 5, nil, nil},
		{1, kWM, 7, 5, nil, nil},
		{0, kWM, 9, 7, []int64{7}, []Event{wmEv(7)}},
		{0, kIdle, 0, 7, nil, nil},
		{1, kIdle, 0, 9, []int64{9}, []Event{wmEv(9), idleEv}}, // Flink 2.2: all idle flushes the highest (FLINK-38454)
		{0, kActive, 0, 9, nil, []Event{activeEv}},
	}
	c := NewCombiner(2)
	var o outModel
	for i, r := range rows {
		o.got = o.got[:0]
		var fired []int64
		process := func(w int64) { fired = append(fired, w); o.watermark(w) }
		switch r.kind {
		case kWM:
			if c.Watermark(r.in, r.wm) {
				process(c.Combined())
			}
		default:
			wasIdle := c.Idle()
			if c.Status(r.in, r.kind == kIdle) {
				process(c.Combined())
			}
			if wasIdle != c.Idle() {
				o.status(c.Idle())
			}
		}
		if c.Combined() != r.combined {
			t.Fatalf("V11 row %d: combined %d, want %d", i+1, c.Combined(), r.combined)
		}
		if !equalInts(fired, r.fired) {
			t.Fatalf("V11 row %d: processWatermark %v, want %v", i+1, fired, r.fired)
		}
		if !sameEvents(o.got, r.want) {
			t.Fatalf("V11 row %d: output %v, want %v", i+1, o.got, r.want)
		}
	}
	if c.Inputs() != 2 {
		t.Fatalf("Inputs() = %d", c.Inputs())
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// V12: BoundedOutOfOrderness(3) with one periodic tick after each element.
func TestVectorV12(t *testing.T) {
	var got []Event
	em := NewEmitter(func(e Event) { got = append(got, e) })
	g := BoundedOutOfOrderness[string](3 * time.Millisecond)

	tick := func(want ...Event) {
		t.Helper()
		got = got[:0]
		g.OnPeriodicEmit(em)
		if !sameEvents(got, want) {
			t.Fatalf("tick: got %v, want %v", got, want)
		}
	}
	event := func(ts int64) {
		t.Helper()
		got = got[:0]
		g.OnEvent("x", ts, em)
		if len(got) != 0 {
			t.Fatalf("OnEvent(%d) emitted %v", ts, got)
		}
	}

	tick() // MIN, suppressed
	event(10)
	tick(wmEv(6))
	event(7)
	tick() // 6 again, suppressed
	event(15)
	tick(wmEv(11))
	event(12)
	tick()                // 11 again, suppressed
	tick()                // finish(): one last onPeriodicEmit, 11, suppressed
	em.EmitWatermark(Max) // end of input: the task emits MAX
	if !sameEvents(got, []Event{wmEv(Max)}) {
		t.Fatalf("end of input: got %v", got)
	}
	if em.Last() != Max {
		t.Fatalf("Last() = %d", em.Last())
	}
}

// The generator's own outputs, before the emitter's dedup.
type recOutput struct{ evs []Event }

func (r *recOutput) EmitWatermark(w int64) { r.evs = append(r.evs, WatermarkEvent(w)) }
func (r *recOutput) MarkIdle()             { r.evs = append(r.evs, StatusEvent(true)) }
func (r *recOutput) MarkActive()           { r.evs = append(r.evs, StatusEvent(false)) }

func TestGeneratorsRaw(t *testing.T) {
	var r recOutput
	g := BoundedOutOfOrderness[int](3 * time.Millisecond)
	g.OnPeriodicEmit(&r)
	g.OnEvent(0, 10, &r)
	g.OnEvent(0, 7, &r)
	g.OnPeriodicEmit(&r)
	if want := []Event{wmEv(Min), wmEv(6)}; !sameEvents(r.evs, want) {
		t.Fatalf("bounded: got %v, want %v", r.evs, want)
	}

	// Sub-millisecond parts of the bound are truncated, as Duration.toMillis.
	r.evs = nil
	g = BoundedOutOfOrderness[int](3*time.Millisecond + 999*time.Microsecond)
	g.OnEvent(0, 10, &r)
	g.OnPeriodicEmit(&r)
	if want := []Event{wmEv(6)}; !sameEvents(r.evs, want) {
		t.Fatalf("bounded 3.999ms: got %v, want %v", r.evs, want)
	}

	// An event at Min does not underflow.
	r.evs = nil
	g = BoundedOutOfOrderness[int](time.Hour)
	g.OnEvent(0, Min, &r)
	g.OnPeriodicEmit(&r)
	if want := []Event{wmEv(Min)}; !sameEvents(r.evs, want) {
		t.Fatalf("bounded event at Min: got %v, want %v", r.evs, want)
	}

	r.evs = nil
	m := Monotonous[int]()
	m.OnPeriodicEmit(&r)
	m.OnEvent(0, 100, &r)
	m.OnPeriodicEmit(&r)
	m.OnEvent(0, 50, &r)
	m.OnPeriodicEmit(&r)
	if want := []Event{wmEv(Min), wmEv(99), wmEv(99)}; !sameEvents(r.evs, want) {
		t.Fatalf("monotonous: got %v, want %v", r.evs, want)
	}

	r.evs = nil
	n := None[int]()
	n.OnEvent(0, 100, &r)
	n.OnPeriodicEmit(&r)
	if len(r.evs) != 0 {
		t.Fatalf("none emitted %v", r.evs)
	}

	mustPanic(t, "negative bound", func() { BoundedOutOfOrderness[int](-time.Millisecond) })
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", name)
		}
	}()
	f()
}

// Two quirks of StatusWatermarkValve that follow from its rules: an idle
// channel that comes back above the last output while no other channel is
// aligned makes the minimum over aligned channels exceed the last output
// without anything being emitted. The valve recomputes only on the next
// watermark, or when a channel holding the last output goes idle.
func TestValveQuirks(t *testing.T) {
	type row struct {
		ch   int
		kind stepKind
		wm   int64
		want []Event
	}
	prefix := []row{
		{0, kWM, 5, nil},
		{1, kWM, 10, nil},
		{2, kWM, 20, []Event{wmEv(5)}},
		{2, kIdle, 0, nil},               // 20 != 5: no recomputation
		{0, kIdle, 0, []Event{wmEv(10)}}, // 5 held the output: min over ch1
		{0, kActive, 0, nil},             // 5 < 10: unaligned
		{1, kIdle, 0, nil},               // held the output, but no channel is aligned
		{2, kActive, 0, nil},             // 20 >= 10: aligned, yet nothing is emitted
	}
	cases := map[string][]row{
		// ch0 goes idle; its 5 is not the last output (10), so the min over the
		// aligned channels (ch2 at 20) is not looked at.
		"idle of a non-holding channel": {{0, kIdle, 0, nil}},
		// Then ch2 goes idle last; its 20 is not the last output, so there is
		// no flush: the valve turns idle with output 10.
		"no flush when the last channel did not hold the output": {
			{0, kIdle, 0, nil},
			{2, kIdle, 0, []Event{idleEv}},
		},
		// Any accepted watermark recomputes the minimum.
		"next watermark releases it": {{0, kWM, 6, []Event{wmEv(20)}}},
		// A rejected one does not.
		"rejected watermark does not": {{2, kWM, 20, nil}, {0, kWM, 5, nil}},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			v := NewValve(3)
			var out []Event
			for i, r := range append(append([]row(nil), prefix...), rows...) {
				out = out[:0]
				switch r.kind {
				case kWM:
					out = v.Watermark(r.ch, r.wm, out)
				case kIdle:
					out = v.Status(r.ch, true, out)
				case kActive:
					out = v.Status(r.ch, false, out)
				}
				if !sameEvents(out, r.want) {
					t.Fatalf("row %d: got %v, want %v", i+1, out, r.want)
				}
			}
		})
	}
}
