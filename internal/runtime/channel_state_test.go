package runtime

import (
	"strings"
	"testing"
)

func TestChannelStateRestoreRefusesOtherLayouts(t *testing.T) {
	blob := func(sub, par, chans int) OperatorSnapshot {
		cs, err := encodeChannelState(7, sub, par, []GateChannelState{{Channels: chans, Data: map[int][]byte{0: {1}}}})
		if err != nil {
			t.Fatal(err)
		}
		return OperatorSnapshot{UID: "op", ChannelState: cs}
	}
	gates := func(chans int) []channelStateGate {
		return []channelStateGate{NewGate[string](chans, &sink[string]{})}
	}
	for _, c := range []struct {
		name  string
		old   []OperatorSnapshot
		sub   int
		par   int
		gates []channelStateGate
		want  string // "" for no error
	}{
		{"same layout", []OperatorSnapshot{blob(0, 2, 2), blob(1, 2, 2)}, 1, 2, gates(2), ""},
		{"other parallelism", []OperatorSnapshot{blob(0, 2, 2)}, 0, 3, gates(2), "taken at parallelism 2; restoring it at parallelism 3 is not supported"},
		{"upstream rescaled", []OperatorSnapshot{blob(0, 1, 2)}, 0, 1, gates(3), "input 1 with 2 channels, now it has 3"},
		{"inputs changed", []OperatorSnapshot{blob(0, 1, 2)}, 0, 1, append(gates(2), gates(1)...), "for 1 inputs, the operator has 2"},
		{"no channel state", []OperatorSnapshot{{UID: "op", State: []byte{1}}}, 0, 5, gates(2), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := restoreChannelState(c.old, "join", c.sub, c.par, c.gates)
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"join"`)):
				t.Fatalf("err %v, want one naming the operator and saying %q", err, c.want)
			}
		})
	}
}

type unregistered struct{ X int }

// A value the probe could not foresee (an unregistered type behind an
// interface) declines the checkpoint, naming it, the channel and the type;
// the record is processed, the job goes on, and the checkpoint's later
// barriers are ignored.
func TestChannelStateUnencodableValueDeclines(t *testing.T) {
	s := &sink[any]{}
	g := NewGate[any](2, s)
	var acked []int64
	var declined []error
	a := NewAlignerWith(AlignerConfig{ExactlyOnce: true, Unaligned: true,
		Snapshot: func(Barrier) error { return nil },
		Complete: func(id int64, _ []GateChannelState) error { acked = append(acked, id); return nil },
		Decline:  func(id int64, err error) { declined = append(declined, err) },
	})
	g.SetAligner(a, 0)
	if err := g.probeChannelState(); err != nil {
		t.Fatalf("probe of an interface type: %v", err)
	}
	if _, err := a.barrier(0, 0, Barrier{ID: 3, Unalignable: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.Records(1, []Record[any]{{Value: unregistered{1}}}); err != nil {
		t.Fatal(err)
	}
	if len(declined) != 1 || !strings.Contains(declined[0].Error(), "checkpoint 3") || !strings.Contains(declined[0].Error(), "channel 1") || !strings.Contains(declined[0].Error(), "interface") {
		t.Fatalf("declined %v", declined)
	}
	if len(s.recs) != 1 || a.Current() != -1 || a.recording(0, 1) {
		t.Fatalf("processed %d records, current %d, recording %v", len(s.recs), a.Current(), a.recording(0, 1))
	}
	if _, err := a.barrier(0, 1, Barrier{ID: 3, Unalignable: true}); err != nil || len(acked) != 0 {
		t.Fatalf("late barrier of the declined checkpoint: err %v, acked %v", err, acked)
	}
	if _, err := a.barrier(0, 0, Barrier{ID: 4, Unalignable: true}); err != nil || a.Current() != 4 {
		t.Fatalf("next checkpoint: err %v, current %d", err, a.Current())
	}
}

func TestChannelStateProbeRejectsUnencodableTypes(t *testing.T) {
	type hidden struct{ x int }
	if err := NewGate[hidden](1, &sink[hidden]{}).probeChannelState(); err == nil || !strings.Contains(err.Error(), "hidden") {
		t.Fatalf("err %v", err)
	}
	if err := NewGate[*struct{ A int }](1, &sink[*struct{ A int }]{}).probeChannelState(); err != nil {
		t.Fatalf("pointer records: %v", err)
	}
}
