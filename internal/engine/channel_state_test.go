package engine

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
)

func TestChannelStateRestoreLayouts(t *testing.T) {
	blob := func(sub, par int, edges ...EdgeChannels) OperatorSnapshot {
		chans := 0
		for _, e := range edges {
			chans += e.Channels
		}
		cs, err := encodeChannelState(7, sub, par, []GateChannelState{{Channels: chans, Data: map[int][]byte{0: {1}}, Edges: edges}})
		if err != nil {
			t.Fatal(err)
		}
		return OperatorSnapshot{UID: "op", ChannelState: cs}
	}
	legacy := func(sub, par, chans int) OperatorSnapshot { // written before Edges existed
		cs, err := encodeChannelState(7, sub, par, []GateChannelState{{Channels: chans, Data: map[int][]byte{0: {1}}}})
		if err != nil {
			t.Fatal(err)
		}
		return OperatorSnapshot{UID: "op", ChannelState: cs}
	}
	gates := func(edges ...EdgeChannels) []channelStateGate {
		chans := 0
		for _, e := range edges {
			chans += e.Channels
		}
		g := NewGate[string](chans, &sink[string]{})
		for _, e := range edges {
			g.addEdge(e, nil)
		}
		return []channelStateGate{g}
	}
	hash := func(n int) EdgeChannels { return EdgeChannels{Partition: PartitionHash, Channels: n} }
	bcast := func(n int) EdgeChannels { return EdgeChannels{Partition: PartitionBroadcast, Channels: n} }
	for _, c := range []struct {
		name  string
		old   []OperatorSnapshot
		sub   int
		par   int
		gates []channelStateGate
		want  string // "" for no error
	}{
		{"same layout", []OperatorSnapshot{blob(0, 2, hash(2)), blob(1, 2, hash(2))}, 1, 2, gates(hash(2)), ""},
		{"other parallelism", []OperatorSnapshot{blob(0, 2, hash(2))}, 0, 3, gates(hash(2)), ""},
		{"upstream rescaled", []OperatorSnapshot{blob(0, 1, hash(2))}, 0, 1, gates(hash(3)), ""},
		{"legacy upstream rescaled", []OperatorSnapshot{legacy(0, 1, 2)}, 0, 1, gates(hash(3)), ""},
		{"inputs changed", []OperatorSnapshot{blob(0, 1, hash(2))}, 0, 1, append(gates(hash(2)), gates(hash(1))...), "for 1 inputs, the operator has 2"},
		{"union changed", []OperatorSnapshot{blob(0, 1, hash(2))}, 0, 2, gates(hash(2), hash(2)), "from 1 unioned streams, now it has 2"},
		{"broadcast became hash", []OperatorSnapshot{blob(0, 1, bcast(2))}, 0, 2, gates(hash(2)), "partitioned BROADCAST, now it is HASH"},
		{"damaged", []OperatorSnapshot{blob(0, 2, hash(2)), blob(1, 3, hash(2))}, 0, 2, gates(hash(2)), "damaged"},
		{"no channel state", []OperatorSnapshot{{UID: "op", State: []byte{1}}}, 0, 5, gates(hash(2)), ""},
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

// replayLog is a channelStateGate that logs what a restore replays onto it.
// Each recorded channel's data is two bytes: old subtask, old channel.
type replayLog struct {
	edges []EdgeChannels
	got   []string
}

func (r *replayLog) Channels() int {
	n := 0
	for _, e := range r.edges {
		n += e.Channels
	}
	return n
}
func (r *replayLog) takeChannelState() GateChannelState { return GateChannelState{} }
func (r *replayLog) dropChannelState()                  {}
func (r *replayLog) probeChannelState() error           { return nil }
func (r *replayLog) addEdge(EdgeChannels, any)          {}
func (r *replayLog) layout() []EdgeChannels             { return r.edges }
func (r *replayLog) replayChannel(ch int, data []byte, how replayMode) error {
	mode := "as recorded"
	if how.rescaled {
		mode = fmt.Sprintf("edge %d owner %d", how.edge, how.owner)
	}
	r.got = append(r.got, fmt.Sprintf("old %d/%d -> ch %d (%s)", data[0], data[1], ch, mode))
	return nil
}

// TestChannelStateRescaleAssignment checks which old subtask's channels
// each new subtask replays, onto which channel, for each partitioning.
func TestChannelStateRescaleAssignment(t *testing.T) {
	// old builds the snapshots of oldPar subtasks whose gate had the given
	// edges, every channel holding data.
	old := func(oldPar int, edges ...EdgeChannels) []OperatorSnapshot {
		var out []OperatorSnapshot
		for sub := range oldPar {
			gs := GateChannelState{Data: map[int][]byte{}, Edges: edges}
			for _, e := range edges {
				for range e.Channels {
					gs.Data[gs.Channels] = []byte{byte(sub), byte(gs.Channels)}
					gs.Channels++
				}
			}
			cs, err := encodeChannelState(3, sub, oldPar, []GateChannelState{gs})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, OperatorSnapshot{UID: "op", ChannelState: cs})
		}
		return out
	}
	e := func(p Partitioning, n int) EdgeChannels { return EdgeChannels{Partition: p, Channels: n} }
	// rs is a rescale edge of n channels of the consumer, from producers.
	rs := func(n, producers int) EdgeChannels {
		return EdgeChannels{Partition: PartitionRescale, Channels: n, Producers: producers}
	}
	for _, c := range []struct {
		name string
		old  []OperatorSnapshot
		par  int
		now  []EdgeChannels
		want [][]string // by new subtask
	}{
		{"same layout replays its own subtask as recorded", old(2, e(PartitionHash, 2)), 2, []EdgeChannels{e(PartitionHash, 2)}, [][]string{
			{"old 0/0 -> ch 0 (as recorded)", "old 0/1 -> ch 1 (as recorded)"},
			{"old 1/0 -> ch 0 (as recorded)", "old 1/1 -> ch 1 (as recorded)"},
		}},
		{"hash 2->3: every old subtask, filtered by owner", old(2, e(PartitionHash, 2)), 3, []EdgeChannels{e(PartitionHash, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 1 (edge 0 owner 0)", "old 1/0 -> ch 0 (edge 0 owner 0)", "old 1/1 -> ch 1 (edge 0 owner 0)"},
			{"old 0/0 -> ch 0 (edge 0 owner 1)", "old 0/1 -> ch 1 (edge 0 owner 1)", "old 1/0 -> ch 0 (edge 0 owner 1)", "old 1/1 -> ch 1 (edge 0 owner 1)"},
			{"old 0/0 -> ch 0 (edge 0 owner 2)", "old 0/1 -> ch 1 (edge 0 owner 2)", "old 1/0 -> ch 0 (edge 0 owner 2)", "old 1/1 -> ch 1 (edge 0 owner 2)"},
		}},
		{"hash, upstream 3->2 at the same parallelism", old(1, e(PartitionHash, 3)), 1, []EdgeChannels{e(PartitionHash, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 1 (edge 0 owner 0)", "old 0/2 -> ch 0 (edge 0 owner 0)"},
		}},
		{"rebalance 3->2: round robin", old(3, e(PartitionRebalance, 2)), 2, []EdgeChannels{e(PartitionRebalance, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 1 (edge 0 owner 0)", "old 2/0 -> ch 0 (edge 0 owner 0)", "old 2/1 -> ch 1 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)", "old 1/1 -> ch 1 (edge 0 owner 1)"},
		}},
		{"forward 2->3", old(2, e(PartitionForward, 1)), 3, []EdgeChannels{e(PartitionForward, 1)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)"},
			nil,
		}},
		{"forward 2 became rebalance from 3 producers", old(2, e(PartitionForward, 1)), 2, []EdgeChannels{e(PartitionRebalance, 3)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)"},
		}},
		{"broadcast 2->3: the old subtask whose broadcast state it restores", old(2, e(PartitionBroadcast, 2)), 3, []EdgeChannels{e(PartitionBroadcast, 1)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)", "old 1/1 -> ch 0 (edge 0 owner 1)"},
			{"old 0/0 -> ch 0 (edge 0 owner 2)", "old 0/1 -> ch 0 (edge 0 owner 2)"},
		}},
		{"broadcast 3->1", old(3, e(PartitionBroadcast, 1)), 1, []EdgeChannels{e(PartitionBroadcast, 1)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)"},
		}},
		{"union of hash and rebalance 2->3", old(2, e(PartitionHash, 2), e(PartitionRebalance, 1)), 3, []EdgeChannels{e(PartitionHash, 2), e(PartitionRebalance, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 1 (edge 0 owner 0)", "old 1/0 -> ch 0 (edge 0 owner 0)", "old 1/1 -> ch 1 (edge 0 owner 0)", "old 0/2 -> ch 2 (edge 1 owner 0)"},
			{"old 0/0 -> ch 0 (edge 0 owner 1)", "old 0/1 -> ch 1 (edge 0 owner 1)", "old 1/0 -> ch 0 (edge 0 owner 1)", "old 1/1 -> ch 1 (edge 0 owner 1)", "old 1/2 -> ch 2 (edge 1 owner 1)"},
			{"old 0/0 -> ch 0 (edge 0 owner 2)", "old 0/1 -> ch 1 (edge 0 owner 2)", "old 1/0 -> ch 0 (edge 0 owner 2)", "old 1/1 -> ch 1 (edge 0 owner 2)"},
		}},
		{"custom 2->3: every old subtask, filtered by owner", old(2, e(PartitionCustom, 1)), 3, []EdgeChannels{e(PartitionCustom, 1)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 1/0 -> ch 0 (edge 0 owner 0)"},
			{"old 0/0 -> ch 0 (edge 0 owner 1)", "old 1/0 -> ch 0 (edge 0 owner 1)"},
			{"old 0/0 -> ch 0 (edge 0 owner 2)", "old 1/0 -> ch 0 (edge 0 owner 2)"},
		}},
		{"shuffle 3->2: round robin", old(3, e(PartitionShuffle, 1)), 2, []EdgeChannels{e(PartitionShuffle, 1)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 2/0 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)"},
		}},
		{"rescale, both parallelisms unchanged: as recorded", old(2, rs(2, 4)), 2, []EdgeChannels{rs(2, 4)}, [][]string{
			{"old 0/0 -> ch 0 (as recorded)", "old 0/1 -> ch 1 (as recorded)"},
			{"old 1/0 -> ch 0 (as recorded)", "old 1/1 -> ch 1 (as recorded)"},
		}},
		{"rescale, upstream 4->2 at the same parallelism: round robin", old(2, rs(2, 4)), 2, []EdgeChannels{rs(1, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)", "old 1/1 -> ch 0 (edge 0 owner 1)"},
		}},
		{"rescale, upstream 2->4 with one channel each before and after: rescaled", old(4, rs(1, 2)), 4, []EdgeChannels{rs(1, 4)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)"},
			{"old 2/0 -> ch 0 (edge 0 owner 2)"},
			{"old 3/0 -> ch 0 (edge 0 owner 3)"},
		}},
		{"rescale 2->3: round robin", old(2, rs(1, 2)), 3, []EdgeChannels{rs(1, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)"},
			{"old 1/0 -> ch 0 (edge 0 owner 1)"},
			nil,
		}},
		{"global 2->1", old(2, e(PartitionGlobal, 2)), 1, []EdgeChannels{e(PartitionGlobal, 2)}, [][]string{
			{"old 0/0 -> ch 0 (edge 0 owner 0)", "old 0/1 -> ch 1 (edge 0 owner 0)", "old 1/0 -> ch 0 (edge 0 owner 0)", "old 1/1 -> ch 1 (edge 0 owner 0)"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for sub := range c.par {
				g := &replayLog{edges: c.now}
				replay, err := restoreChannelState(c.old, "op", sub, c.par, []channelStateGate{g})
				if err != nil {
					t.Fatal(err)
				}
				if replay != nil {
					if err := replay(); err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(g.got, c.want[sub]) {
					t.Errorf("new subtask %d replays\n  %s\nwant\n  %s", sub, strings.Join(g.got, "\n  "), strings.Join(c.want[sub], "\n  "))
				}
			}
		})
	}
}

// TestChannelStateRescaleUnevenConsumers: the consumers of a rescale edge
// from 3 producers to 2 read 1 and 2 channels; restored with both
// parallelisms unchanged each replays its own channels as recorded,
// watermarks included, although the two layouts differ.
func TestChannelStateRescaleUnevenConsumers(t *testing.T) {
	layout := func(sub int) []EdgeChannels {
		r := RescaleProducers(sub, 3, 2)
		return []EdgeChannels{{Partition: PartitionRescale, Channels: r[1] - r[0], Producers: 3}}
	}
	var old []OperatorSnapshot
	for sub := range 2 {
		gs := GateChannelState{Data: map[int][]byte{}, Edges: layout(sub)}
		for ch := range layout(sub)[0].Channels {
			gs.Data[ch] = []byte{byte(sub), byte(ch)}
			gs.Channels++
		}
		cs, err := encodeChannelState(3, sub, 2, []GateChannelState{gs})
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, OperatorSnapshot{UID: "op", ChannelState: cs})
	}
	want := [][]string{
		{"old 0/0 -> ch 0 (as recorded)"},
		{"old 1/0 -> ch 0 (as recorded)", "old 1/1 -> ch 1 (as recorded)"},
	}
	for sub := range 2 {
		g := &replayLog{edges: layout(sub)}
		replay, err := restoreChannelState(old, "op", sub, 2, []channelStateGate{g})
		if err != nil {
			t.Fatal(err)
		}
		if err := replay(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.got, want[sub]) {
			t.Errorf("subtask %d replays %v, want %v", sub, g.got, want[sub])
		}
	}
}

// TestChannelStateRescaleKeyGroupFilter restores the in-flight records of
// two old subtasks of a hash-partitioned gate at parallelism 3 (and 1):
// every record is replayed exactly once, by the subtask that owns its key
// group under the new parallelism, each old channel's records in their
// recorded order; watermarks are not replayed. The same layout replays
// watermarks as before.
func TestChannelStateRescaleKeyGroupFilter(t *testing.T) {
	const maxP = 128
	route := func(par int) func(*int64) int {
		return func(v *int64) int {
			return keygroup.OperatorIndex(keygroup.Of(keygroup.HashInt64(*v%50), maxP), par, maxP)
		}
	}
	encode := func(es ...inflight[int64]) []byte {
		var b bytes.Buffer
		enc := gob.NewEncoder(&b)
		for _, e := range es {
			if err := enc.Encode(&e); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	// Old parallelism 2, 2 producers: old subtask s, channel c holds values
	// 1000*s + 100*c + i of the key groups s owned at parallelism 2, with a
	// watermark in between.
	var old []OperatorSnapshot
	var all []int64
	for s := range 2 {
		gs := GateChannelState{Channels: 2, Data: map[int][]byte{}, Edges: []EdgeChannels{{Partition: PartitionHash, Channels: 2}}}
		for c := range 2 {
			var a, b []Record[int64]
			for i := range int64(60) {
				v := int64(1000*s+100*c) + i
				if route(2)(&v) != s {
					continue
				}
				all = append(all, v)
				if i < 30 {
					a = append(a, Record[int64]{Value: v, TS: v})
				} else {
					b = append(b, Record[int64]{Value: v, TS: v})
				}
			}
			gs.Data[c] = encode(inflight[int64]{Recs: a}, inflight[int64]{WM: 5000, IsWM: true}, inflight[int64]{Recs: b})
		}
		cs, err := encodeChannelState(9, s, 2, []GateChannelState{gs})
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, OperatorSnapshot{UID: "op", ChannelState: cs})
	}
	for _, par := range []int{3, 1, 2} {
		var got []int64
		for sub := range par {
			s := &sink[int64]{}
			g := NewGate[int64](2, s)
			g.addEdge(EdgeChannels{Partition: PartitionHash, Channels: 2}, route(par))
			replay, err := restoreChannelState(old, "op", sub, par, []channelStateGate{g})
			if err != nil {
				t.Fatal(err)
			}
			if replay == nil {
				t.Fatalf("parallelism %d subtask %d: nothing to replay", par, sub)
			}
			if err := replay(); err != nil {
				t.Fatal(err)
			}
			last := map[int64]int64{} // old subtask*10+channel -> last value
			for _, r := range s.recs {
				if o := route(par)(&r.Value); o != sub {
					t.Errorf("parallelism %d: subtask %d replayed %d, which subtask %d owns", par, sub, r.Value, o)
				}
				from := r.Value / 100
				if p, ok := last[from]; ok && r.Value <= p {
					t.Errorf("parallelism %d subtask %d: %d after %d: a channel's order was not kept", par, sub, r.Value, p)
				}
				last[from] = r.Value
				got = append(got, r.Value)
			}
			switch {
			case par != 2 && len(s.wms) > 0:
				t.Errorf("parallelism %d subtask %d: a rescaled replay emitted watermarks %v", par, sub, s.wms)
			case par == 2 && !slices.Equal(s.wms, []int64{5000}):
				t.Errorf("same layout, subtask %d: watermarks %v, want the recorded 5000", sub, s.wms)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(all))
		if !slices.Equal(got, want) {
			t.Errorf("parallelism %d: replayed %d records, want each of the %d once", par, len(got), len(want))
		}
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
