package runtime

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
)

// OperatorSnapshot is the state of one operator in one subtask at a
// checkpoint: keyed state by key group (so key groups can move to other
// subtasks on rescale) and the operator's own state.
type OperatorSnapshot struct {
	UID       string
	KeyGroups map[int][]byte
	State     []byte
}

// Snapshotter is implemented by operators with state. SnapshotState runs
// on the task goroutine when the task is aligned on a barrier, after every
// output has been flushed.
type Snapshotter interface {
	SnapshotState(id int64) (OperatorSnapshot, error)
}

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
}

// TaskAck is a task's report of a checkpoint.
type TaskAck struct {
	ID      int64
	Task    string
	Subtask int
	Ops     []OperatorSnapshot
	Err     error
}

// barrierWriter is an exchange writer as the task sees it.
type barrierWriter interface {
	Flush() error
	Barrier(id int64) error
	// SetContext sets the context whose end releases a blocked send.
	SetContext(ctx context.Context)
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

// Checkpoint snapshots every operator of the task for checkpoint id,
// reports the snapshots, and forwards barrier id on every output.
func (t *Task) Checkpoint(id int64) error {
	if err := t.Flush(); err != nil {
		return err
	}
	ack := TaskAck{ID: id, Task: t.Name, Subtask: t.Subtask}
	for _, s := range t.snaps {
		t.curOp = s.uid
		var snap OperatorSnapshot
		err := t.guard(func() error {
			var err error
			snap, err = s.s.SnapshotState(id)
			return err
		})
		if err != nil {
			t.curOp = ""
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		snap.UID = s.uid
		ack.Ops = append(ack.Ops, snap)
	}
	t.curOp = ""
	if t.acks != nil {
		select {
		case t.acks <- ack:
		default:
			return fmt.Errorf("checkpoint %d: the coordinator is not accepting acknowledgements", id)
		}
	}
	for _, w := range t.writers {
		if err := w.Barrier(id); err != nil {
			return err
		}
	}
	return nil
}

// NotifyComplete tells the task's listeners that checkpoint id completed.
func (t *Task) NotifyComplete(id int64) error {
	for _, l := range t.listeners {
		if err := t.guard(func() error { return l.NotifyCheckpointComplete(id) }); err != nil {
			return err
		}
	}
	return t.Flush()
}

// Aligner returns the task's barrier aligner (nil for source tasks or
// without checkpointing).
func (t *Task) Aligner() *Aligner { return t.aligner }

// IsSource reports whether the task starts with a source.
func (t *Task) IsSource() bool { return t.source }

// Finished reports whether the task's loop has ended.
func (t *Task) Finished() bool { return t.finished.Load() }

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
