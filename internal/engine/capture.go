package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/watermark"
)

// Input capture (`weir record`): what one subtask's head operator is given,
// recorded on the task goroutine while a Capturer is set, for a scenario
// file. Off, it costs one atomic load per delivered batch (Gate.capt).

// Capturer receives a subtask's input. Every call is on the task
// goroutine.
type Capturer interface {
	// Begin is told, when the capture starts, each input's channels and
	// their current watermarks and idleness.
	Begin(inputs []CaptureInput)
	// Record, Watermark and Status report an element of channel ch of
	// input (0 or 1) at processing time now.
	Record(input, ch int, key, value string, ts, now int64)
	Watermark(input, ch int, wm, now int64)
	Status(input, ch int, idle bool, now int64)
	// Output reports a watermark or status the operator was given (after
	// the channel valves and, for two inputs, the combiner).
	Output(e watermark.Event)
}

// CaptureInput is the state of one input when a capture starts.
type CaptureInput struct {
	Channels   int
	Watermarks []int64
	Idle       []bool
}

// gateCapture is a gate's capture in progress.
type gateCapture[T any] struct {
	c        Capturer
	input    int
	key      func(*T) string
	now      func() int64
	twoInput bool
}

func (cp *gateCapture[T]) records(ch int, recs []Record[T]) {
	if len(recs) == 0 {
		return
	}
	now := cp.now()
	for i := range recs {
		k := "-"
		if cp.key != nil {
			k = cp.key(&recs[i].Value)
		}
		cp.c.Record(cp.input, ch, k, fmt.Sprint(recs[i].Value), recs[i].TS, now)
	}
}

func (cp *gateCapture[T]) control(ch int, x ctrl) {
	switch x.kind {
	case ctrlWatermark:
		cp.c.Watermark(cp.input, ch, x.wm, cp.now())
	case ctrlStatus:
		cp.c.Status(cp.input, ch, x.idle, cp.now())
	}
}

// capturable is the part of a gate that captures take.
type capturable interface {
	setKey(f any)
	startCapture(c Capturer, input int, now func() int64) CaptureInput
	stopCapture()
}

// setKey sets the gate's key renderer (the first keyBy edge's).
func (g *Gate[T]) setKey(f any) {
	if k, ok := f.(func(*T) string); ok && g.keyFn == nil {
		g.keyFn = k
	}
}

func (g *Gate[T]) startCapture(c Capturer, input int, now func() int64) CaptureInput {
	in := CaptureInput{Channels: len(g.ended)}
	for ch := range g.ended {
		wm, idle := g.valve.ChannelState(ch)
		in.Watermarks = append(in.Watermarks, wm)
		in.Idle = append(in.Idle, idle)
	}
	sd, two := g.sink.(side[T])
	if two {
		sd.a.capt.Store(&c)
	}
	g.capt.Store(&gateCapture[T]{c: c, input: input, key: g.keyFn, now: now, twoInput: two})
	return in
}

func (g *Gate[T]) stopCapture() {
	g.capt.Store(nil)
	if sd, ok := g.sink.(side[T]); ok {
		sd.a.capt.Store(nil)
	}
}

// taskCapture marks a task's capture in progress.
type taskCapture struct{ c Capturer }

// onTaskMsg runs a function on the task goroutine.
type onTaskMsg struct{ f func() error }

func (m onTaskMsg) process() error { return m.f() }

// onTask runs f on the task goroutine (through its inbox) and waits for it.
func (t *Task) onTask(ctx context.Context, f func() error) error {
	if t.Finished() {
		return errors.New("the subtask has finished")
	}
	done := make(chan error, 1)
	m := onTaskMsg{func() error { done <- f(); return nil }}
	select {
	case t.inbox <- m:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrNoInputs is returned when a capture is asked of a task without
// network inputs (a source).
var ErrNoInputs = errors.New("the subtask has no inputs to capture (a source)")

// StartCapture starts capturing the task's inputs into c, from its next
// step on; c.Begin is called first. One capture at a time.
func (t *Task) StartCapture(ctx context.Context, c Capturer) error {
	if len(t.gates) == 0 {
		return ErrNoInputs
	}
	return t.onTask(ctx, func() error {
		if t.capture != nil {
			return errors.New("a capture of this subtask is in progress")
		}
		t.capture = &taskCapture{c}
		var ins []CaptureInput
		for i, g := range t.gates {
			ins = append(ins, g.startCapture(c, i, t.clk.NowMillis))
		}
		c.Begin(ins)
		return nil
	})
}

// StopCapture ends the capture in progress; c gets no call after it.
func (t *Task) StopCapture(ctx context.Context) error {
	stop := func() error {
		for _, g := range t.gates {
			g.stopCapture()
		}
		t.capture = nil
		return nil
	}
	err := t.onTask(ctx, stop)
	if err != nil && t.Finished() {
		// The task's loop has ended: nothing calls the capturer any more.
		return nil
	}
	return err
}
