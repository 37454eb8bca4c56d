// Package twophase is the operator of a two-phase-commit sink: one
// transaction per checkpoint interval, pre-committed at the barrier,
// committed when the checkpoint completes, restored transactions committed
// again on open.
package twophase

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/weirstream/weir/internal/engine"
)

// Sink is the sink the operator writes through (weir.TwoPhaseCommitSink).
type Sink[T, TXN any] interface {
	BeginTransaction(subtask int) (TXN, error)
	Write(txn TXN, v T, ts int64) error
	PreCommit(txn TXN) error
	Commit(txn TXN) error
	Abort(txn TXN) error
}

// Subtasks is implemented by sinks that hold resources per subtask
// (weir.TwoPhaseCommitSubtasks).
type Subtasks interface {
	OpenSubtask(subtask, parallelism int) error
	CloseSubtask(subtask int) error
}

// New returns the operator of subtask of a sink named name; restored is
// what the checkpoint restored (nil if none), checkpointed whether the job
// checkpoints.
func New[T, TXN any](sink Sink[T, TXN], name string, subtask, parallelism int, restored *engine.Restored, checkpointed bool) *Op[T, TXN] {
	return &Op[T, TXN]{name: name, subtask: subtask, sink: sink, restore: restored, par: parallelism, checkpointed: checkpointed}
}

// pendingTxn is a pre-committed transaction waiting for checkpoint
// Checkpoint to complete.
type pendingTxn[TXN any] struct {
	Checkpoint int64
	Txn        TXN
}

// Op is the operator of one subtask of a two-phase-commit sink.
type Op[T, TXN any] struct {
	name    string
	subtask int
	sink    Sink[T, TXN]
	cur     TXN
	open    bool
	pending []pendingTxn[TXN]
	restore *engine.Restored
	par     int
	opened  bool // OpenSubtask ran
	// checkpointed: the job checkpoints, so the transaction open at the
	// end of input is pre-committed by the final checkpoint and committed
	// when it completes; ended: the input has ended.
	checkpointed bool
	ended        bool
}

func (o *Op[T, TXN]) begin() error {
	t, err := o.sink.BeginTransaction(o.subtask)
	if err != nil {
		return err
	}
	o.cur, o.open = t, true
	return nil
}

// Open commits the transactions pre-committed in the restored checkpoint
// (this subtask's, and those of old subtasks that no longer exist), then
// begins a transaction.
func (o *Op[T, TXN]) Open() (err error) {
	if o.restore != nil {
		for i, data := range o.restore.All {
			if i%o.par != o.subtask || len(data) == 0 {
				continue
			}
			var pend []pendingTxn[TXN]
			if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&pend); err != nil {
				return fmt.Errorf("restoring pending transactions: %w", err)
			}
			for _, p := range pend {
				if err := o.sink.Commit(p.Txn); err != nil {
					return fmt.Errorf("committing a restored transaction: %w", err)
				}
			}
		}
	}
	if s, ok := any(o.sink).(Subtasks); ok {
		if err := s.OpenSubtask(o.subtask, o.par); err != nil {
			return err
		}
		o.opened = true
	}
	return o.begin()
}

// ProcessBatch writes the records to the open transaction.
func (o *Op[T, TXN]) ProcessBatch(recs []engine.Record[T]) (err error) {
	for i := range recs {
		if err := o.sink.Write(o.cur, recs[i].Value, recs[i].TS); err != nil {
			return err
		}
	}
	return nil
}

// ProcessWatermark ignores the watermark.
func (o *Op[T, TXN]) ProcessWatermark(int64) error { return nil }

// ProcessStatus ignores the status.
func (o *Op[T, TXN]) ProcessStatus(bool) error { return nil }

// EndInput ends the sink's input. With checkpointing the last
// transaction stays open: the task waits for its final checkpoint
// (FLIP-147), which pre-commits it, and commits it when the checkpoint
// completes, as every other transaction. Without checkpointing it is
// pre-committed now, and it and the transactions still pending are
// committed when the whole job has finished (Finals), not now:
// another task may still fail, and the restart would replay this
// subtask's input and write it again.
func (o *Op[T, TXN]) EndInput() (err error) {
	o.ended = true
	if !o.open || o.checkpointed {
		return nil
	}
	o.open = false
	if err := o.sink.PreCommit(o.cur); err != nil {
		return err
	}
	o.pending = append(o.pending, pendingTxn[TXN]{math.MaxInt64, o.cur})
	var zero TXN
	o.cur = zero
	return nil
}

// Finals holds a sink's subtasks of the current attempt, to commit
// their pending transactions once the job has finished; only for jobs
// without checkpointing (with it, the final checkpoint commits them).
type Finals[T, TXN any] struct {
	mu  sync.Mutex
	ops map[int]*Op[T, TXN]
}

// Attach makes o the subtask's operator of the current attempt.
func (f *Finals[T, TXN]) Attach(subtask int, o *Op[T, TXN]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops == nil {
		f.ops = map[int]*Op[T, TXN]{}
	}
	f.ops[subtask] = o
}

// Commit commits every pending transaction of every subtask; it runs after
// the job has finished.
func (f *Finals[T, TXN]) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.ops {
		for _, p := range o.pending {
			if err := o.sink.Commit(p.Txn); err != nil {
				return fmt.Errorf("sink %q: committing the final transactions: %w", o.name, err)
			}
		}
		o.pending = nil
	}
	return nil
}

// SnapshotState pre-commits the current transaction, keeps it pending
// under the checkpoint's id, and begins the next one, unless the input has
// ended (the final checkpoint: nothing more will be written).
func (o *Op[T, TXN]) SnapshotState(id int64) (_ engine.OperatorSnapshot, err error) {
	if o.open {
		if err := o.sink.PreCommit(o.cur); err != nil {
			return engine.OperatorSnapshot{}, err
		}
		o.pending = append(o.pending, pendingTxn[TXN]{id, o.cur})
		o.open = false
		var zero TXN
		o.cur = zero
		if !o.ended {
			if err := o.begin(); err != nil {
				return engine.OperatorSnapshot{}, err
			}
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(o.pending); err != nil {
		return engine.OperatorSnapshot{}, fmt.Errorf("encoding pending transactions: %w", err)
	}
	return engine.OperatorSnapshot{State: b.Bytes()}, nil
}

// NotifyCheckpointComplete commits every transaction pending up to id.
func (o *Op[T, TXN]) NotifyCheckpointComplete(id int64) (err error) {
	keep := o.pending[:0]
	for _, p := range o.pending {
		if p.Checkpoint <= id {
			if err := o.sink.Commit(p.Txn); err != nil {
				return err
			}
			continue
		}
		keep = append(keep, p)
	}
	o.pending = keep
	return nil
}

// Close aborts a transaction left open (a failed or cancelled run) and
// closes the subtask's resources (Subtasks).
func (o *Op[T, TXN]) Close() error {
	var err error
	if o.open {
		o.open = false
		err = o.sink.Abort(o.cur)
	}
	if s, ok := any(o.sink).(Subtasks); ok && o.opened {
		o.opened = false
		err = errors.Join(err, s.CloseSubtask(o.subtask))
	}
	return err
}

// Caught is Op reporting the errors and panics of its calls that reach
// the sink through Catch, which is deferred around each of them.
type Caught[T, TXN any] struct {
	Catch func(err *error)
	*Op[T, TXN]
}

// Open is Op.Open under Catch.
func (o *Caught[T, TXN]) Open() (err error) {
	defer o.Catch(&err)
	return o.Op.Open()
}

// ProcessBatch is Op.ProcessBatch under Catch.
func (o *Caught[T, TXN]) ProcessBatch(recs []engine.Record[T]) (err error) {
	defer o.Catch(&err)
	return o.Op.ProcessBatch(recs)
}

// EndInput is Op.EndInput under Catch.
func (o *Caught[T, TXN]) EndInput() (err error) {
	defer o.Catch(&err)
	return o.Op.EndInput()
}

// SnapshotState is Op.SnapshotState under Catch.
func (o *Caught[T, TXN]) SnapshotState(id int64) (_ engine.OperatorSnapshot, err error) {
	defer o.Catch(&err)
	return o.Op.SnapshotState(id)
}

// NotifyCheckpointComplete is Op.NotifyCheckpointComplete under Catch.
func (o *Caught[T, TXN]) NotifyCheckpointComplete(id int64) (err error) {
	defer o.Catch(&err)
	return o.Op.NotifyCheckpointComplete(id)
}
