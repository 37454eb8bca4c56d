package runtime

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
// channels it had, and each recording channel's gob stream of elements.
type GateChannelState struct {
	Channels int
	Data     map[int][]byte
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
	replayChannel(ch int, data []byte) error
	probeChannelState() error
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
	s := GateChannelState{Channels: len(g.ended)}
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
func (g *Gate[T]) replayChannel(ch int, data []byte) error {
	if ch < 0 || ch >= len(g.ended) {
		return fmt.Errorf("channel state of input %d names channel %d of %d", g.index+1, ch, len(g.ended))
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
		if e.IsWM {
			err = g.WatermarkOn(ch, e.WM)
		} else {
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

// restoreChannelState finds the channel state of subtask sub among the
// snapshots of a task's head operator and returns a function that replays
// it, or nil when there is none. Channel state is restored only at the
// parallelism and channel layout it was taken with: Flink redistributes
// in-flight data on rescale, Weir refuses with an error instead.
func restoreChannelState(old []OperatorSnapshot, name string, sub, par int, gates []channelStateGate) (func() error, error) {
	var mine *taskChannelState
	for _, o := range old {
		if len(o.ChannelState) == 0 {
			continue
		}
		var s taskChannelState
		if err := decodeGob(o.ChannelState, &s); err != nil {
			return nil, fmt.Errorf("operator %q: reading channel state: %w", name, err)
		}
		if s.Parallelism != par {
			return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data of an unaligned checkpoint taken at parallelism %d; restoring it at parallelism %d is not supported (restore at the old parallelism, or rescale from an aligned checkpoint)",
				name, s.Checkpoint, s.Parallelism, par)
		}
		if s.Subtask == sub {
			mine = &s
		}
	}
	if mine == nil {
		return nil, nil
	}
	if len(mine.Gates) != len(gates) {
		return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data for %d inputs, the operator has %d", name, mine.Checkpoint, len(mine.Gates), len(gates))
	}
	for i, gs := range mine.Gates {
		if len(gs.Data) > 0 && gs.Channels != gates[i].Channels() {
			return nil, fmt.Errorf("operator %q: checkpoint %d holds in-flight data of input %d with %d channels, now it has %d (an upstream operator changed parallelism); unaligned channel state cannot be redistributed",
				name, mine.Checkpoint, i+1, gs.Channels, gates[i].Channels())
		}
	}
	return func() error {
		for i, gs := range mine.Gates {
			for ch := range gs.Channels {
				if data, ok := gs.Data[ch]; ok {
					if err := gates[i].replayChannel(ch, data); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}, nil
}
