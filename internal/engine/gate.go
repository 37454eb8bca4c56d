package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/weirstream/weir/internal/watermark"
)

// Kinds of control elements carried in a batch between records.
const (
	ctrlWatermark uint8 = iota + 1
	ctrlStatus
	ctrlEnd
	ctrlBarrier
)

// ctrl is a control element placed in a batch before the record at pos.
// A barrier carries its checkpoint id in wm, the checkpoint's start time
// (processing time at the source task, milliseconds) in ts, and whether it
// may run unaligned in unalignable.
type ctrl struct {
	pos         int
	kind        uint8
	idle        bool
	unalignable bool
	wm          int64
	ts          int64
}

// Gate is one logical input of a task head: it merges C channels (all
// producer subtasks of every edge into this input) through Flink's status
// watermark valve and feeds the head. It is a deterministic step machine:
// the task (or a test harness) calls Records, Watermark, Status and End with
// a channel index.
type Gate[T any] struct {
	sink   Input[T]
	valve  *watermark.Valve
	ended  []bool
	nEnded int
	events []watermark.Event
	in     *atomicCounter
	wm     *atomicCounter // the valve's output, published for metrics
	idle   atomic.Bool    // the valve's output status, published for metrics
	io     *IOCounters    // the task's, nil when not counted
	size   int64          // bytes per record (metrics.go)
	align  *Aligner       // nil without checkpointing
	index  int            // the gate's index within its task
	// rec holds the channel state recorded for an unaligned checkpoint, by
	// channel (nil entries: nothing recorded).
	rec []*chanRecording
	// edges is the gate's channel layout by edge (channel_state.go).
	edges []gateEdge[T]
	// capt is the input capture in progress (capture.go), nil when off:
	// one atomic load per batch.
	capt  atomic.Pointer[gateCapture[T]]
	keyFn func(*T) string // renders a record's key for captures
}

// SetAligner makes the gate report barriers and ends to a task's aligner.
func (g *Gate[T]) SetAligner(a *Aligner, index int) {
	g.align, g.index = a, index
	a.addChannels(index, len(g.ended))
	a.addGate(index, g)
}

// NewGate returns a gate over the given number of channels feeding sink.
func NewGate[T any](channels int, sink Input[T]) *Gate[T] {
	g := &Gate[T]{sink: sink, valve: watermark.NewValve(channels), ended: make([]bool, channels), in: new(atomicCounter), wm: new(atomicCounter), size: recordSize[T]()}
	g.wm.Store(watermark.Min)
	return g
}

// Channels returns the number of channels.
func (g *Gate[T]) Channels() int { return len(g.ended) }

// Watermark returns the gate's current output watermark; safe to call from
// any goroutine.
func (g *Gate[T]) Watermark() int64 { return g.wm.Load() }

// RecordsIn returns the number of records that passed the gate.
func (g *Gate[T]) RecordsIn() int64 { return g.in.Load() }

// Idle reports whether the gate's output status is idle; safe to call
// from any goroutine.
func (g *Gate[T]) Idle() bool { return g.idle.Load() }

// countInto makes the gate add the records and bytes it passes to io.
func (g *Gate[T]) countInto(io *IOCounters) { g.io = io }

// Records delivers records of one channel.
func (g *Gate[T]) Records(ch int, recs []Record[T]) error {
	if len(recs) == 0 {
		return nil
	}
	g.in.Add(int64(len(recs)))
	if g.io != nil {
		g.io.RecordsIn.Add(int64(len(recs)))
		g.io.BytesIn.Add(int64(len(recs)) * g.size)
	}
	if g.align != nil && g.align.recording(g.index, ch) {
		g.record(ch, inflight[T]{Recs: recs})
	}
	return g.sink.ProcessBatch(recs)
}

// WatermarkOn delivers a watermark of one channel.
func (g *Gate[T]) WatermarkOn(ch int, wm int64) error {
	if g.align != nil && g.align.recording(g.index, ch) {
		g.record(ch, inflight[T]{WM: wm, IsWM: true})
	}
	g.events = g.valve.Watermark(ch, wm, g.events[:0])
	return g.dispatch()
}

// Status delivers an idle/active status of one channel.
func (g *Gate[T]) Status(ch int, idle bool) error {
	g.events = g.valve.Status(ch, idle, g.events[:0])
	return g.dispatch()
}

// End marks one channel finished; when all are, the sink's input ends.
func (g *Gate[T]) End(ch int) error {
	if ch < 0 || ch >= len(g.ended) {
		return fmt.Errorf("runtime: end on unknown channel %d", ch)
	}
	if g.ended[ch] {
		return nil
	}
	g.ended[ch] = true
	g.nEnded++
	if g.nEnded == len(g.ended) {
		return g.sink.EndInput()
	}
	return nil
}

// Ended reports whether every channel has ended.
func (g *Gate[T]) Ended() bool { return g.nEnded == len(g.ended) }

func (g *Gate[T]) dispatch() error {
	for _, e := range g.events {
		var err error
		if cp := g.capt.Load(); cp != nil && !cp.twoInput {
			cp.c.Output(e)
		}
		if e.IsStatus {
			g.idle.Store(e.Idle)
			err = g.sink.ProcessStatus(e.Idle)
		} else {
			g.wm.Store(e.Watermark)
			err = g.sink.ProcessWatermark(e.Watermark)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deliver feeds one whole batch from channel ch.
func (g *Gate[T]) deliver(ch int, recs []Record[T], ctrls []ctrl) error {
	_, _, _, err := g.deliverFrom(ch, recs, ctrls, 0, 0)
	return err
}

// deliverFrom feeds a batch from channel ch starting at record r and
// control element c: record runs and the control elements between them.
// When a barrier blocks the channel (exactly-once alignment) it stops right
// after the barrier and returns the position to resume from.
func (g *Gate[T]) deliverFrom(ch int, recs []Record[T], ctrls []ctrl, r, c int) (int, int, bool, error) {
	cp := g.capt.Load()
	for ; c < len(ctrls); c++ {
		x := ctrls[c]
		if cp != nil {
			cp.records(ch, recs[r:x.pos])
			cp.control(ch, x)
		}
		if err := g.Records(ch, recs[r:x.pos]); err != nil {
			return r, c, false, err
		}
		r = x.pos
		var err error
		switch x.kind {
		case ctrlWatermark:
			err = g.WatermarkOn(ch, x.wm)
		case ctrlStatus:
			err = g.Status(ch, x.idle)
		case ctrlEnd:
			err = g.End(ch)
			if err == nil && g.align != nil {
				err = g.align.channelEnded(g.index, ch)
			}
		case ctrlBarrier:
			if g.align != nil {
				block, err := g.align.barrier(g.index, ch, Barrier{ID: x.wm, Timestamp: x.ts, Unalignable: x.unalignable})
				if err != nil {
					return r, c, false, err
				}
				if block {
					return r, c + 1, true, nil
				}
			}
		}
		if err != nil {
			return r, c, false, err
		}
	}
	if cp != nil {
		cp.records(ch, recs[r:])
	}
	return len(recs), len(ctrls), false, g.Records(ch, recs[r:])
}

// TwoInputAdapter presents a TwoInput operator as two Inputs and combines
// their watermarks and statuses as Flink's AbstractStreamOperator does.
type TwoInputAdapter[A, B any] struct {
	op    TwoInput[A, B]
	comb  *watermark.Combiner
	ended [2]bool
	capt  atomic.Pointer[Capturer] // input capture in progress (capture.go)
}

// NewTwoInputAdapter wraps op.
func NewTwoInputAdapter[A, B any](op TwoInput[A, B]) *TwoInputAdapter[A, B] {
	return &TwoInputAdapter[A, B]{op: op, comb: watermark.NewCombiner(2)}
}

// First returns the Input of the first stream.
func (a *TwoInputAdapter[A, B]) First() Input[A] {
	return side[A]{a: a.common(), idx: 0, batch: a.op.ProcessBatch1}
}

// Second returns the Input of the second stream.
func (a *TwoInputAdapter[A, B]) Second() Input[B] {
	return side[B]{a: a.common(), idx: 1, batch: a.op.ProcessBatch2}
}

// Combined returns the combined watermark.
func (a *TwoInputAdapter[A, B]) Combined() int64 { return a.comb.Combined() }

func (a *TwoInputAdapter[A, B]) common() *combineState {
	return &combineState{comb: a.comb, op: a.op, ended: &a.ended, end: [2]func() error{a.op.EndInput1, a.op.EndInput2}, capt: &a.capt}
}

type controlSink interface {
	ProcessWatermark(wm int64) error
	ProcessStatus(idle bool) error
}

type combineState struct {
	comb  *watermark.Combiner
	op    controlSink
	ended *[2]bool
	end   [2]func() error
	capt  *atomic.Pointer[Capturer]
}

// captured reports an event the operator is given to a capture in
// progress.
func (c *combineState) captured(e watermark.Event) {
	if cp := c.capt.Load(); cp != nil {
		(*cp).Output(e)
	}
}

type side[T any] struct {
	a     *combineState
	idx   int
	batch func([]Record[T]) error
}

func (s side[T]) ProcessBatch(recs []Record[T]) error { return s.batch(recs) }

func (s side[T]) ProcessWatermark(wm int64) error {
	if s.a.comb.Watermark(s.idx, wm) {
		s.a.captured(watermark.Event{Watermark: s.a.comb.Combined()})
		return s.a.op.ProcessWatermark(s.a.comb.Combined())
	}
	return nil
}

func (s side[T]) ProcessStatus(idle bool) error {
	wasIdle := s.a.comb.Idle()
	if s.a.comb.Status(s.idx, idle) {
		s.a.captured(watermark.Event{Watermark: s.a.comb.Combined()})
		if err := s.a.op.ProcessWatermark(s.a.comb.Combined()); err != nil {
			return err
		}
	}
	if wasIdle != s.a.comb.Idle() {
		s.a.captured(watermark.Event{IsStatus: true, Idle: s.a.comb.Idle()})
		return s.a.op.ProcessStatus(s.a.comb.Idle())
	}
	return nil
}

func (s side[T]) EndInput() error {
	if s.a.ended[s.idx] {
		return nil
	}
	s.a.ended[s.idx] = true
	return s.a.end[s.idx]()
}
