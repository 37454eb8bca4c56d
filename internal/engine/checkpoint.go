package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// OperatorSnapshot is the state of one operator in one subtask at a
// checkpoint: keyed state by key group (so key groups can move to other
// subtasks on rescale) and the operator's own state.
type OperatorSnapshot struct {
	UID string
	// Kind and Name are the operator's kind (Node.Operator) and name, set
	// when the job assembles a checkpoint; a snapshot read from a store
	// written before kinds were recorded has no Kind.
	Kind, Name string
	KeyGroups  map[int][]byte
	State      []byte
	// ChannelState is the in-flight input data of an unaligned checkpoint,
	// set on the snapshot of a task's head operator (an entry with only
	// this field when the head has no state of its own). It is restored by
	// the runtime, not by the operator; see channel_state.go.
	ChannelState []byte
	// KeyedFiles is keyed state that a state backend keeps as files
	// rather than in KeyGroups (the Pebble backend's incremental
	// checkpoints), opaque to the runtime; the checkpoint store and the
	// operator know its type. KeyGroups then hold the rest of each key
	// group's snapshot (timers).
	KeyedFiles any
}

// Snapshotter is implemented by operators with state. SnapshotState runs
// on the task goroutine when the task is aligned on a barrier, after every
// output has been flushed.
type Snapshotter interface {
	SnapshotState(id int64) (OperatorSnapshot, error)
}

// AsyncSnapshotter is implemented by operators whose snapshots have an
// asynchronous part (Flink's SnapshotStrategy with an
// AsyncSnapshotCallable). At the barrier the task calls SnapshotStateAsync
// on its goroutine, after every output has been flushed: the synchronous
// part, which takes a consistent view of the state as cheaply as it can
// (copy-on-write, a copy of small structures). The task then forwards the
// barrier and goes on processing while the returned AsyncSnapshot encodes
// the view on another goroutine; the task acknowledges the checkpoint
// when every asynchronous part of its operators has finished. Operators
// that only implement Snapshotter are snapshotted synchronously, as before;
// SnapshotState stays the synchronous form of the same snapshot.
type AsyncSnapshotter interface {
	Snapshotter
	SnapshotStateAsync(id int64) (AsyncSnapshot, error)
}

// AsyncSnapshot is the asynchronous part of an operator's snapshot. The
// task calls it exactly once, on a goroutine of its own (or on the task
// goroutine at once when the task is driven step by step, without Run),
// concurrently with the operator's processing: it may only read what the
// synchronous part prepared. ctx ends when the checkpoint is abandoned (a
// newer barrier, a declined checkpoint) or the task stops; the function
// then returns promptly with an error, and in every case releases what the
// synchronous part holds. An error declines the checkpoint; the job goes
// on (tolerable checkpoint failures apply), as Flink declines a checkpoint
// whose AsyncCheckpointRunnable fails.
type AsyncSnapshot func(ctx context.Context) (OperatorSnapshot, error)

// CheckpointListener is implemented by operators that act when a
// checkpoint completes (two-phase-commit sinks commit then).
type CheckpointListener interface {
	NotifyCheckpointComplete(id int64) error
}

// Restored is the state an operator restores from: the key groups of its
// range, taken from every old subtask, and the operator state of the old
// subtask with the same index (or index mod the old parallelism).
type Restored struct {
	KeyGroups map[int][]byte
	State     []byte
	// All holds the operator state of every old subtask (sources take the
	// positions of the splits they now own from it).
	All [][]byte
	// KeyedFiles holds the KeyedFiles of every old subtask that has any;
	// the operator takes the key groups of its range from them.
	KeyedFiles []any
}

// TaskAck is a task's report of a checkpoint.
type TaskAck struct {
	ID      int64
	Task    string
	Subtask int
	Ops     []OperatorSnapshot
	Err     error
	// Vertex is the UID of the task's head operator.
	Vertex string
	// Stats are the task's timings of the checkpoint.
	Stats AckStats
}

// barrierWriter is an exchange writer as the task sees it.
type barrierWriter interface {
	Flush() error
	Barrier(b Barrier) error
	// SetContext sets the context whose end releases a blocked send.
	SetContext(ctx context.Context)
	// SetActivity sets the clock to pause while a send waits for credit
	// (the task's input-activity clock).
	SetActivity(c *clock.Pausable)
}

type namedSnapshotter struct {
	uid string
	s   Snapshotter
}

// AddSnapshotter registers an operator to snapshot at checkpoints.
func (t *Task) AddSnapshotter(uid string, s Snapshotter) {
	t.snaps = append(t.snaps, namedSnapshotter{uid, s})
}

// AddListener registers an operator to notify of completed checkpoints.
func (t *Task) AddListener(l CheckpointListener) { t.listeners = append(t.listeners, l) }

// SetAcks sets where the task reports its checkpoints.
func (t *Task) SetAcks(acks chan<- TaskAck) { t.acks = acks }

// Barrier is a checkpoint barrier as tasks forward it.
type Barrier struct {
	ID int64
	// Timestamp is the checkpoint's start time: processing time at the
	// source task when it took its snapshot, in milliseconds.
	Timestamp int64
	// Unalignable is set for periodic checkpoints, which may run unaligned
	// when unaligned checkpoints are enabled; savepoints are always
	// aligned, as in Flink.
	Unalignable bool
}

// Checkpoint snapshots every operator of the task for checkpoint id,
// reports the snapshots and forwards barrier id on every output (a source
// task when the coordinator triggers it). The barrier is unalignable when
// id was triggered with Trigger (a periodic checkpoint), aligned otherwise
// (a savepoint).
//
// A task whose input has ended may be triggered directly by the
// coordinator while a barrier of the same checkpoint already reached it;
// a checkpoint it has snapshotted already is then ignored.
func (t *Task) Checkpoint(id int64) error {
	if id <= t.lastSnap {
		return nil
	}
	b := Barrier{ID: id, Timestamp: t.clk.NowMillis(), Unalignable: t.periodic.Load() == id}
	if err := t.snapshot(b); err != nil {
		return err
	}
	if err := t.acknowledge(id, nil); err != nil {
		return err
	}
	return t.forward(b)
}

// snapshot flushes the task, snapshots every operator for the barrier's
// checkpoint and keeps the snapshots until acknowledge. The synchronous
// parts run now; the asynchronous parts start on a goroutine of their own
// (see asyncCheckpoint), or run now when the task is driven step by step.
func (t *Task) snapshot(b Barrier) error {
	start := time.Now()
	defer func() {
		t.Metrics.CheckpointSyncNanos.Add(int64(time.Since(start)))
		t.Metrics.Checkpoints.Add(1)
	}()
	id := b.ID
	// An asynchronous part still running belongs to a checkpoint that the
	// coordinator has completed (its acknowledgement is out) or abandoned:
	// it has at most one in flight.
	t.stopAsync()
	if err := t.Flush(); err != nil {
		return err
	}
	t.lastSnap = max(t.lastSnap, id)
	if t.inputEnded.Load() && t.finalFrom == 0 {
		t.finalFrom = id
	}
	ack := &TaskAck{ID: id, Task: t.Name, Subtask: t.Subtask, Vertex: t.Vertex}
	var parts []asyncPart
	for _, s := range t.snaps {
		t.curOp = s.uid
		var snap OperatorSnapshot
		var async AsyncSnapshot
		err := t.guard(func() error {
			var err error
			if as, ok := s.s.(AsyncSnapshotter); ok {
				async, err = as.SnapshotStateAsync(id)
				return err
			}
			snap, err = s.s.SnapshotState(id)
			return err
		})
		if err != nil {
			t.curOp = ""
			releaseParts(parts)
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		if async != nil {
			parts = append(parts, asyncPart{index: len(ack.Ops), uid: s.uid, run: async})
		}
		snap.UID = s.uid
		ack.Ops = append(ack.Ops, snap)
	}
	t.curOp = ""
	t.pending = ack
	ack.Stats.Sync = time.Since(start)
	if len(parts) == 0 {
		return nil
	}
	if t.ctx == nil {
		// Driven step by step: the asynchronous parts run now.
		for i, p := range parts {
			snap, err := p.call(context.Background())
			if err != nil {
				t.pending = nil
				releaseParts(parts[i+1:])
				return fmt.Errorf("checkpoint %d: %w", id, err)
			}
			ack.Ops[p.index] = snap
		}
		ack.Stats.Sync = time.Since(start)
		return nil
	}
	t.startAsync(ack, parts)
	return nil
}

// forward sends the barrier on every output; not once the task's input
// has ended: its outputs have ended too, and the tasks downstream no
// longer wait for barriers on ended channels.
func (t *Task) forward(b Barrier) error {
	if t.inputEnded.Load() {
		return t.Flush()
	}
	for _, w := range t.writers {
		if err := w.Barrier(b); err != nil {
			return err
		}
	}
	return nil
}

// acknowledge reports checkpoint id, whose snapshot was taken, with the
// channel state an unaligned checkpoint recorded.
func (t *Task) acknowledge(id int64, channels []GateChannelState) error {
	ack := t.pending
	if ack == nil || ack.ID != id {
		return fmt.Errorf("checkpoint %d: acknowledged without a snapshot", id)
	}
	t.pending = nil
	cs, err := encodeChannelState(id, t.Subtask, t.parallelism, channels)
	if err != nil {
		return fmt.Errorf("checkpoint %d: encoding channel state: %w", id, err)
	}
	tail := ackTail{channels: cs, stats: t.alignStats(id, len(cs))}
	if a := t.async; a != nil && a.id == id {
		// The asynchronous part acknowledges once it is done.
		a.channels <- tail
		return nil
	}
	ack.Ops = t.withChannelState(ack.Ops, cs)
	ack.Stats.addTail(tail.stats)
	if t.acks != nil {
		select {
		case t.acks <- *ack:
		default:
			return fmt.Errorf("checkpoint %d: the coordinator is not accepting acknowledgements", id)
		}
	}
	return nil
}

// newAligner returns the task's barrier aligner for a checkpoint
// configuration.
func (t *Task) newAligner(cc *CheckpointConfig) *Aligner {
	return NewAlignerWith(AlignerConfig{
		ExactlyOnce: cc.ExactlyOnce, Unaligned: cc.Unaligned, AlignedTimeout: cc.AlignedTimeout,
		Time: t, Snapshot: t.snapshot, Forward: t.forward, Complete: t.acknowledge, Abort: t.abortCheckpoint,
		Decline: t.declineCheckpoint,
	})
}

// declineCheckpoint drops the snapshot of checkpoint id and reports the
// checkpoint as failed at this task.
func (t *Task) declineCheckpoint(id int64, err error) {
	t.abortCheckpoint(id)
	if t.acks != nil {
		select {
		case t.acks <- TaskAck{ID: id, Task: t.Name, Subtask: t.Subtask, Vertex: t.Vertex, Err: err}:
		default:
		}
	}
}

// abortCheckpoint drops the snapshot of checkpoint id, which a newer
// barrier cut short before it could be acknowledged, and cancels its
// asynchronous part.
func (t *Task) abortCheckpoint(id int64) {
	if t.pending != nil && t.pending.ID == id {
		t.pending = nil
	}
	if a := t.async; a != nil && a.id == id {
		a.cancel()
	}
}

// ReplayChannelState feeds the in-flight data restored from an unaligned
// checkpoint into the task (Run does it after opening the operators, before
// any new input) and flushes. It does nothing the second time.
func (t *Task) ReplayChannelState() error {
	f := t.replay
	t.replay = nil
	if f == nil {
		return nil
	}
	return t.Do(f)
}

// NotifyComplete tells the task's listeners that checkpoint id completed.
// A task waiting for its final checkpoint may then finish.
func (t *Task) NotifyComplete(id int64) error {
	for _, l := range t.listeners {
		if err := t.guard(func() error { return l.NotifyCheckpointComplete(id) }); err != nil {
			return err
		}
	}
	if t.finalFrom > 0 && id >= t.finalFrom {
		t.finalDone.Store(true)
	}
	return t.Flush()
}

// Aligner returns the task's barrier aligner (nil for source tasks or
// without checkpointing).
func (t *Task) Aligner() *Aligner { return t.aligner }

// IsSource reports whether the task starts with a source.
func (t *Task) IsSource() bool { return t.source }

// Finished reports whether the task's loop has ended, normally or not
// (see Stopped).
func (t *Task) Finished() bool { return t.finished.Load() }

// Stopped reports whether the task's loop ended with an error: it failed
// or was cancelled before the end of its input.
func (t *Task) Stopped() bool { return t.stopped.Load() }

type triggerMsg struct {
	t  *Task
	id int64
}

func (m triggerMsg) process() error { return m.t.Checkpoint(m.id) }

type notifyMsg struct {
	t  *Task
	id int64
}

func (m notifyMsg) process() error { return m.t.NotifyComplete(m.id) }

// Trigger asks a source task to take checkpoint id; it returns false if
// the task's inbox is full.
func (t *Task) Trigger(id int64) bool {
	t.periodic.Store(id)
	select {
	case t.inbox <- triggerMsg{t, id}:
		return true
	default:
		return false
	}
}

// Notify queues the completion of checkpoint id; false if the inbox is full.
func (t *Task) Notify(id int64) bool {
	select {
	case t.inbox <- notifyMsg{t, id}:
		return true
	default:
		return false
	}
}

func encodeGob(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decodeGob(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}
