package engine

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// Channel state is the in-flight data of an unaligned checkpoint: for each
// input channel that had not delivered barrier n when the task took its
// snapshot, every record and watermark that arrived on it after the snapshot
// and before its barrier. The task processes those elements as usual and
// also records them; a restore replays them into the task, channel by
// channel in arrival order, before any new input, as Flink's recovered
// input channels do.
//
// Elements are recorded as they arrive (gob-encoded at once, so a value the
// operator changes later is stored as it was). Watermarks are recorded
// because they travel between the records (Flink's StreamElementSerializer
// writes them into the same buffers, and its recovery deserializer replays
// them); watermark statuses are not: after a restore every producer starts
// active and announces idleness again, and a replayed IDLE could leave a
// channel idle that its restored producer never reactivates.
//
// Only the input side is recorded: a task forwards barrier n after flushing
// its outputs, so the records it had produced are in the consumer's inbox
// ahead of the barrier and the consumer records them as its own input
// channel state. (Flink also persists the producer's queued output buffers,
// which the barrier overtakes; the cut is the same.)

// inflight is one recorded element of an input channel: a run of records or
// a watermark.
type inflight[T any] struct {
	Recs []Record[T]
	WM   int64
	IsWM bool
}

// chanRecording is one channel's recorded elements: a gob stream.
type chanRecording struct {
	buf bytes.Buffer
	enc *gob.Encoder
}

// GateChannelState is the channel state of one input gate: the number of
// channels it had, how they were split over the edges into the gate, and
// each recording channel's gob stream of elements.
type GateChannelState struct {
	Channels int
	Data     map[int][]byte
	// Edges lists the gate's edges in the order their channels follow
	// one another (a union has several); nil in checkpoints written before
	// it was recorded, which are read as one edge of Channels channels.
	Edges []EdgeChannels
}

// EdgeChannels is one edge into a gate: its partitioning and the number
// of channels it gives the consumer (its producers' parallelism, 1 for
// forward, the producers of its subset for rescale).
type EdgeChannels struct {
	Partition Partitioning
	Channels  int
	// Producers is the producers' parallelism of a rescale edge, whose
	// channels of one consumer depend on it (and on the consumers'); 0 for
	// every other edge.
	Producers int
}

// taskChannelState is what a task stores as the ChannelState of its head
// operator's snapshot.
type taskChannelState struct {
	Checkpoint  int64
	Subtask     int
	Parallelism int
	Gates       []GateChannelState
}

// channelStateGate is a gate as the aligner and the restore see it.
type channelStateGate interface {
	Channels() int
	takeChannelState() GateChannelState
	dropChannelState()
	replayChannel(ch int, data []byte, how replayMode) error
	probeChannelState() error
	addEdge(e EdgeChannels, route any)
	layout() []EdgeChannels
}

// gateEdge is one edge into a gate as a restore needs it.
type gateEdge[T any] struct {
	EdgeChannels
	// route maps a record of a hash edge to the consumer subtask that owns
	// its key group (the exchange's routing), nil for other edges.
	route func(*T) int
}

// addEdge appends an edge to the gate's layout; route is the exchange's
// func(*T) int for a hash or custom edge, else nil.
func (g *Gate[T]) addEdge(e EdgeChannels, route any) {
	r, ok := route.(func(*T) int)
	if !ok && route != nil {
		panic(fmt.Sprintf("runtime: %v edge routing %T for a gate of %T records", e.Partition, route, *new(T)))
	}
	g.edges = append(g.edges, gateEdge[T]{e, r})
}

// layout returns the gate's edges; a gate built without them (a test) is
// one edge over all its channels.
func (g *Gate[T]) layout() []EdgeChannels {
	if len(g.edges) == 0 {
		return []EdgeChannels{{Partition: PartitionDefault, Channels: len(g.ended)}}
	}
	l := make([]EdgeChannels, len(g.edges))
	for i, e := range g.edges {
		l[i] = e.EdgeChannels
	}
	return l
}

// replayMode says how a recorded channel is replayed: as recorded
// (watermarks included), or for a rescaled restore, records only and, on a
// hash edge, only those whose key group the subtask owns.
type replayMode struct {
	rescaled bool
	edge     int // the gate's edge the channel belongs to (rescaled)
	owner    int // the subtask replaying (rescaled)
}

// record appends an element to a channel's recording; if it cannot be
// encoded, the checkpoint is declined.
func (g *Gate[T]) record(ch int, e inflight[T]) {
	if g.rec == nil {
		g.rec = make([]*chanRecording, len(g.ended))
	}
	r := g.rec[ch]
	if r == nil {
		r = &chanRecording{}
		r.enc = gob.NewEncoder(&r.buf)
		g.rec[ch] = r
	}
	if err := r.enc.Encode(&e); err != nil {
		g.align.decline(fmt.Errorf("checkpoint %d: input %d channel %d: in-flight records of type %s cannot be stored as channel state (unaligned checkpoints need gob-encodable records): %w",
			g.align.Current(), g.index+1, ch, reflect.TypeFor[T](), err))
	}
}

func (g *Gate[T]) takeChannelState() GateChannelState {
	s := GateChannelState{Channels: len(g.ended), Edges: g.layout()}
	for ch, r := range g.rec {
		if r == nil {
			continue
		}
		if s.Data == nil {
			s.Data = map[int][]byte{}
		}
		s.Data[ch] = bytes.Clone(r.buf.Bytes())
	}
	g.rec = nil
	return s
}

func (g *Gate[T]) dropChannelState() { g.rec = nil }

// replayChannel feeds a channel's recorded elements back into the gate.
// A rescaled replay skips watermarks and, on a hash edge, records another
// subtask owns (see restoreChannelState).
func (g *Gate[T]) replayChannel(ch int, data []byte, how replayMode) error {
	if ch < 0 || ch >= len(g.ended) {
		return fmt.Errorf("channel state of input %d names channel %d of %d", g.index+1, ch, len(g.ended))
	}
	var route func(*T) int
	if how.rescaled && how.edge < len(g.edges) {
		route = g.edges[how.edge].route
	}
	dec := gob.NewDecoder(bytes.NewReader(data))
	for {
		var e inflight[T]
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("channel state of input %d channel %d: %w", g.index+1, ch, err)
		}
		var err error
		switch {
		case e.IsWM && how.rescaled:
		case e.IsWM:
			err = g.WatermarkOn(ch, e.WM)
		case route != nil:
			keep := e.Recs[:0]
			for i := range e.Recs {
				if route(&e.Recs[i].Value) == how.owner {
					keep = append(keep, e.Recs[i])
				}
			}
			err = g.Records(ch, keep)
		default:
			err = g.Records(ch, e.Recs)
		}
		if err != nil {
			return err
		}
	}
}

// probeChannelState checks that the gate's records can be gob-encoded.
func (g *Gate[T]) probeChannelState() error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&inflight[T]{Recs: make([]Record[T], 1)}); err != nil {
		return fmt.Errorf("unaligned checkpoints store in-flight records, and records of type %s cannot be gob-encoded: %w", reflect.TypeFor[T](), err)
	}
	return nil
}

// encodeChannelState returns the ChannelState bytes of a task's snapshot,
// or nil when no channel recorded anything.
func encodeChannelState(id int64, sub, par int, gates []GateChannelState) ([]byte, error) {
	empty := true
	for _, g := range gates {
		if len(g.Data) > 0 {
			empty = false
		}
	}
	if empty {
		return nil, nil
	}
	return encodeGob(taskChannelState{Checkpoint: id, Subtask: sub, Parallelism: par, Gates: gates})
}

// restoreChannelState finds the channel state for subtask sub (of par)
// among the snapshots of a task's head operator and returns a function
// that replays it, or nil when there is none.
//
// A gate whose layout did not change (same parallelism, same channels per
// edge, and for a rescale edge the same producer parallelism) replays its
// own old subtask's channels as recorded, watermarks included. Any other
// gate is rescaled, as Flink's SubtaskStateMapper and RecordFilter do it,
// edge by edge (the new edge decides):
//
//   - hash: every new subtask reads the channels of every old subtask and
//     keeps the records whose key group it owns now (the exchange's
//     routing), so each record is replayed exactly once, by its key's
//     subtask (Flink: RANGE plus filtering).
//   - custom (PartitionCustom): the same, keeping the records the user's
//     partitioner routes to the subtask at the new parallelism, which
//     needs a deterministic partitioner (Flink: FULL plus filtering; Flink
//     also disables unaligned checkpoints on such edges, which Weir does
//     not).
//   - broadcast: new subtask k replays old subtask k mod oldPar, whose
//     broadcast state it also restores (newBroadcastStore), so state and
//     in-flight data come from the same cut; every old subtask saw the same
//     stream, so nothing is lost and no subtask sees a record twice.
//     (Flink runs broadcast inputs aligned instead.)
//   - forward, rebalance, shuffle, rescale, global and external inputs: a
//     record may go to any subtask, so old subtask j goes whole to new
//     subtask j mod par (Flink: ROUND_ROBIN; a global edge's data is all at
//     old subtask 0, which goes to new subtask 0). A rescale edge's
//     channels per subtask depend on both parallelisms (RescaleProducers),
//     so its layout also records the producers' parallelism: a change of
//     the upstream parallelism alone rescales the gate even where the
//     channel counts stay the same, since a channel then speaks for
//     another producer. (Flink runs pointwise edges, forward and rescale,
//     aligned unless unaligned checkpoints are forced; Weir records their
//     in-flight data as for any edge.)
//
// Old channel c of an edge (its producer) is replayed onto the edge's
// channel c mod its new channel count; channels are replayed one after
// the other, each in recorded order, all before any new input.
//
// A rescaled gate does not replay watermarks. Channels no longer map one
// to one, so an old channel's watermark would speak for a new channel that
// also carries other old channels' records (Flink keeps one watermark per
// virtual channel and emits their minimum for that reason). Dropping them
// cannot make a record late: watermarks are not part of a snapshot, so the
// restored operator's event time starts at the minimum and no watermark
// reaches it before every replayed record was processed; after the replay
// its watermarks come from the restored producers, which derive them
// again from their own restored input, as after any restore. A dropped
// watermark only delays timers until the producers catch up.
func restoreChannelState(old []OperatorSnapshot, name string, sub, par int, gates []channelStateGate) (func() error, error) {
	var olds []*taskChannelState
	oldPar := 0
	for _, o := range old {
		if len(o.ChannelState) == 0 {
			continue
		}
		s := new(taskChannelState)
		if err := decodeGob(o.ChannelState, s); err != nil {
			return nil, fmt.Errorf("operator %q: reading channel state: %w", name, err)
		}
		if oldPar == 0 {
			oldPar = s.Parallelism
		}
		if s.Parallelism != oldPar || s.Subtask < 0 || s.Subtask >= s.Parallelism {
			return nil, fmt.Errorf("operator %q: checkpoint %d holds channel state of subtask %d of %d beside subtasks of %d; the checkpoint is damaged",
				name, s.Checkpoint, s.Subtask, s.Parallelism, oldPar)
		}
		if len(s.Gates) != len(gates) {
			return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data for %d inputs, the operator has %d", name, s.Checkpoint, len(s.Gates), len(gates))
		}
		olds = append(olds, s)
	}
	if len(olds) == 0 {
		return nil, nil
	}
	bySub := map[int]*taskChannelState{}
	for _, s := range olds {
		bySub[s.Subtask] = s
	}
	type step struct {
		g    channelStateGate
		ch   int
		data []byte
		how  replayMode
	}
	var steps []step
	for i, g := range gates {
		now := g.layout()
		oldLayout := func(s *taskChannelState) []EdgeChannels {
			gs := s.Gates[i]
			if len(gs.Edges) > 0 {
				return gs.Edges
			}
			return []EdgeChannels{{Partition: PartitionDefault, Channels: gs.Channels}}
		}
		// At the same parallelism a subtask replays only its own old
		// subtask's channels (every edge routes as before); they keep
		// their watermarks if its layout is unchanged. Subtasks of one
		// gate may differ in layout (a rescale edge), so the own old
		// subtask's is the one to compare.
		same := oldPar == par
		if s := bySub[sub]; same && s != nil && len(s.Gates[i].Data) > 0 && !sameChannels(oldLayout(s), now) {
			same = false
		}
		if same {
			if s := bySub[sub]; s != nil {
				for ch := range s.Gates[i].Channels {
					if data, ok := s.Gates[i].Data[ch]; ok {
						steps = append(steps, step{g, ch, data, replayMode{}})
					}
				}
			}
			continue
		}
		for _, s := range olds {
			if len(s.Gates[i].Data) == 0 {
				continue
			}
			ol := oldLayout(s)
			if len(ol) != len(now) {
				return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data of input %d from %d unioned streams, now it has %d; restore with the old job graph",
					name, s.Checkpoint, i+1, len(ol), len(now))
			}
			for e := range ol {
				wasB, isB := ol[e].Partition == PartitionBroadcast, now[e].Partition == PartitionBroadcast
				if wasB != isB && ol[e].Partition != PartitionDefault {
					return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data of input %d stream %d partitioned %s, now it is %s; in-flight data cannot move between broadcast and other partitionings",
						name, s.Checkpoint, i+1, e+1, ol[e].Partition, now[e].Partition)
				}
			}
		}
		newOff := 0
		for e, ne := range now {
			var from []int // old subtasks to read, ascending
			switch ne.Partition {
			case PartitionHash, PartitionCustom:
				for j := range oldPar {
					from = append(from, j)
				}
			case PartitionBroadcast:
				from = []int{sub % oldPar}
			default:
				for j := sub; j < oldPar; j += par {
					from = append(from, j)
				}
			}
			for _, j := range from {
				s := bySub[j]
				if s == nil {
					continue
				}
				ol := oldLayout(s)
				if len(ol) != len(now) {
					continue // no data for this gate (checked above)
				}
				oldOff := 0
				for _, x := range ol[:e] {
					oldOff += x.Channels
				}
				for c := range ol[e].Channels {
					if data, ok := s.Gates[i].Data[oldOff+c]; ok {
						steps = append(steps, step{g, newOff + c%ne.Channels, data, replayMode{rescaled: true, edge: e, owner: sub}})
					}
				}
			}
			newOff += ne.Channels
		}
	}
	if len(steps) == 0 {
		return nil, nil
	}
	return func() error {
		for _, st := range steps {
			if err := st.g.replayChannel(st.ch, st.data, st.how); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// sameChannels reports whether two gate layouts have the same channels
// per edge.
func sameChannels(a, b []EdgeChannels) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Channels != b[i].Channels || a[i].Producers != b[i].Producers {
			return false
		}
	}
	return true
}
