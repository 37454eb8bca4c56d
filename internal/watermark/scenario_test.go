package watermark

import "testing"

// The steps of /work/shared/conformance/watermarks/two-inputs.scn, by hand.
var twoInputsScn = []step{
	{line: "1 wm 5", in: 0, kind: kWM, wm: 5},
	{line: "2 wm 3", in: 1, kind: kWM, wm: 3, want: []Event{wmEv(3)}},
	{line: "2 idle", in: 1, kind: kIdle, want: []Event{wmEv(5)}},
	{line: "1 wm 4", in: 0, kind: kWM, wm: 4},
	{line: "2 active", in: 1, kind: kActive},
	{line: "2 wm 7", in: 1, kind: kWM, wm: 7},
	{line: "1 wm 9", in: 0, kind: kWM, wm: 9, want: []Event{wmEv(7)}},
	{line: "1 idle", in: 0, kind: kIdle},
	{line: "2 idle", in: 1, kind: kIdle, want: []Event{wmEv(9), idleEv}},
	{line: "1 active", in: 0, kind: kActive, want: []Event{activeEv}},
}

// The steps of /work/shared/conformance/watermarks/valve-three-channels.scn.
var valveThreeChannelsScn = []step{
	{line: "1.0 wm 5", ch: 0, kind: kWM, wm: 5},
	{line: "1.1 wm 7", ch: 1, kind: kWM, wm: 7},
	{line: "1.2 wm 3", ch: 2, kind: kWM, wm: 3, want: []Event{wmEv(3)}},
	{line: "1.2 wm 2", ch: 2, kind: kWM, wm: 2},
	{line: "1.2 idle", ch: 2, kind: kIdle, want: []Event{wmEv(5)}},
	{line: "1.0 wm 6", ch: 0, kind: kWM, wm: 6, want: []Event{wmEv(6)}},
	{line: "1.2 active", ch: 2, kind: kActive},
	{line: "1.2 wm 4", ch: 2, kind: kWM, wm: 4},
	{line: "1.2 wm 8", ch: 2, kind: kWM, wm: 8},
	{line: "1.0 wm 9", ch: 0, kind: kWM, wm: 9, want: []Event{wmEv(7)}},
	{line: "1.0 idle", ch: 0, kind: kIdle},
	{line: "1.1 idle", ch: 1, kind: kIdle, want: []Event{wmEv(8)}},
	{line: "1.2 idle", ch: 2, kind: kIdle, want: []Event{wmEv(9), idleEv}},
	{line: "1.1 wm 10", ch: 1, kind: kWM, wm: 10},
	{line: "1.1 active", ch: 1, kind: kActive, want: []Event{activeEv}},
	{line: "1.1 wm 10", ch: 1, kind: kWM, wm: 10, want: []Event{wmEv(10)}},
}

func runScenario(t *testing.T, op *operator, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := op.feed(s); !sameEvents(got, s.want) {
			t.Fatalf("step %d %q: got %v, want %v", i+1, s.line, got, s.want)
		}
	}
}

func TestScenarioTwoInputs(t *testing.T) {
	op := newOperator(2, 1)
	runScenario(t, op, twoInputsScn)
	// On "2 idle" (both idle) the combined watermark rose to 9 (Flink 2.2,
	// FLINK-38454), timers up to 9 fired, and 9 went out before the idle
	// status; "1 active" changes only the status.
	if got := op.comb.Combined(); got != 9 {
		t.Fatalf("combined = %d, want 9", got)
	}
	if last := op.fired[len(op.fired)-1]; last != 9 {
		t.Fatalf("last processWatermark = %d, want 9", last)
	}
	if op.comb.Idle() || op.out.idle {
		t.Fatal("operator should be active at the end")
	}
}

func TestScenarioValveThreeChannels(t *testing.T) {
	// Through the runner's operator (valve -> one-input combiner -> output).
	runScenario(t, newOperator(1, 3), valveThreeChannelsScn)

	// And straight from the valve, as a one-input operator forwards it.
	v := NewValve(3)
	var out []Event
	for i, s := range valveThreeChannelsScn {
		out = out[:0]
		switch s.kind {
		case kWM:
			out = v.Watermark(s.ch, s.wm, out)
		case kIdle:
			out = v.Status(s.ch, true, out)
		case kActive:
			out = v.Status(s.ch, false, out)
		}
		if !sameEvents(out, s.want) {
			t.Fatalf("valve step %d %q: got %v, want %v", i+1, s.line, out, s.want)
		}
	}
	if v.Output() != 10 || v.Idle() || v.Channels() != 3 {
		t.Fatalf("final valve state: output %d idle %v channels %d", v.Output(), v.Idle(), v.Channels())
	}
}
