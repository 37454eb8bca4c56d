package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// Asynchronous snapshots (Flink's AsyncCheckpointRunnable). A task whose
// operators returned asynchronous parts at the barrier runs them on one
// goroutine per checkpoint, in chain order, while the task goes on
// processing; that goroutine acknowledges the checkpoint once they are
// done and, for an unaligned checkpoint, once the task handed over the
// channel state (acknowledge). A failing part declines the checkpoint.
// The goroutine ends when the checkpoint is abandoned (abortCheckpoint,
// or the next barrier: the coordinator has at most one checkpoint in
// flight) or the task stops; Run waits for it.

// asyncPart is the asynchronous part of one operator's snapshot: the
// operator's place in the acknowledgement and the function.
type asyncPart struct {
	index int
	uid   string
	run   AsyncSnapshot
}

// call runs the part, turning a panic into an error.
func (p asyncPart) call(ctx context.Context) (snap OperatorSnapshot, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			err = fmt.Errorf("operator %s: panic in the asynchronous part of its snapshot: %w\n%s", p.uid, e, debug.Stack())
		}
	}()
	snap, err = p.run(ctx)
	if err != nil {
		err = fmt.Errorf("operator %s: asynchronous part of its snapshot: %w", p.uid, err)
	}
	snap.UID = p.uid
	return snap, err
}

// releaseParts calls parts that will not run with an ended context, so
// that they release what their synchronous parts hold.
func releaseParts(parts []asyncPart) {
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range parts {
		p.call(ctx) //nolint:errcheck // the error is ctx's
	}
}

// asyncCheckpoint is the asynchronous part of a task's checkpoint in
// flight.
type asyncCheckpoint struct {
	id       int64
	cancel   context.CancelFunc
	done     chan struct{}
	channels chan ackTail // the encoded channel state and alignment timing, from acknowledge
}

// startAsync runs parts on a new goroutine and acknowledges checkpoint
// ack.ID with ack.Ops, completed by the parts, when they are done and the
// task has handed over the channel state.
func (t *Task) startAsync(ack *TaskAck, parts []asyncPart) {
	ctx, cancel := context.WithCancel(t.ctx)
	a := &asyncCheckpoint{id: ack.ID, cancel: cancel, done: make(chan struct{}), channels: make(chan ackTail, 1)}
	t.async = a
	ops := append([]OperatorSnapshot(nil), ack.Ops...)
	id := ack.ID
	stats := ack.Stats
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(a.done)
		defer cancel()
		start := time.Now()
		var err error
		for i, p := range parts {
			var snap OperatorSnapshot
			if snap, err = p.call(ctx); err != nil {
				releaseParts(parts[i+1:])
				break
			}
			ops[p.index] = snap
		}
		stats.Async = time.Since(start)
		t.Metrics.CheckpointAsyncNanos.Add(int64(stats.Async))
		if ctx.Err() != nil {
			return // abandoned, or the task stopped
		}
		if err != nil {
			t.sendAck(ctx, TaskAck{ID: id, Task: t.Name, Subtask: t.Subtask, Vertex: t.Vertex, Err: fmt.Errorf("checkpoint %d: %w", id, err)})
			return
		}
		var tail ackTail
		select {
		case tail = <-a.channels:
		case <-ctx.Done():
			return
		}
		stats.addTail(tail.stats)
		t.sendAck(ctx, TaskAck{ID: id, Task: t.Name, Subtask: t.Subtask, Vertex: t.Vertex, Ops: t.withChannelState(ops, tail.channels), Stats: stats})
	}()
}

// sendAck reports an acknowledgement from an asynchronous part.
func (t *Task) sendAck(ctx context.Context, ack TaskAck) {
	if t.acks == nil {
		return
	}
	select {
	case t.acks <- ack:
	case <-ctx.Done():
	}
}

// stopAsync cancels the asynchronous part in flight, if any, and waits
// for it to end.
func (t *Task) stopAsync() {
	if a := t.async; a != nil {
		a.cancel()
		<-a.done
		t.async = nil
	}
}

// finishAsync waits, when the task has finished its input, for the
// asynchronous part in flight to acknowledge; one still waiting for its
// channel state (which will not come) is cancelled.
func (t *Task) finishAsync() {
	a := t.async
	if a == nil {
		return
	}
	if t.pending != nil && t.pending.ID == a.id {
		a.cancel()
	}
	<-a.done
	t.async = nil
}

// withChannelState returns ops with the encoded channel state cs (if
// any) set on the head operator's snapshot, which is added if needed.
func (t *Task) withChannelState(ops []OperatorSnapshot, cs []byte) []OperatorSnapshot {
	if cs == nil {
		return ops
	}
	i := 0
	for i < len(ops) && ops[i].UID != t.headUID {
		i++
	}
	if i == len(ops) {
		ops = append(ops, OperatorSnapshot{UID: t.headUID})
	}
	ops[i].ChannelState = cs
	return ops
}
