package weir

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"github.com/weirstream/weir/connector"
	"math"
	"sync"

	"github.com/weirstream/weir/internal/runtime"
)

// TwoPhaseCommitSink is connector.TwoPhaseCommitSink: a sink that writes
// records in transactions that become visible only when the checkpoint
// covering them completes.
type TwoPhaseCommitSink[T, TXN any] = connector.TwoPhaseCommitSink[T, TXN]

// TwoPhaseCommitSubtasks is connector.TwoPhaseCommitSubtasks: a
// two-phase-commit sink that holds resources per subtask.
type TwoPhaseCommitSubtasks = connector.TwoPhaseCommitSubtasks

type pendingTxn[TXN any] struct {
	Checkpoint int64
	Txn        TXN
}

type twoPhaseOp[T, TXN any] struct {
	opBase
	sink    TwoPhaseCommitSink[T, TXN]
	cur     TXN
	open    bool
	pending []pendingTxn[TXN]
	restore *runtime.Restored
	par     int
	opened  bool // OpenSubtask ran
	// checkpointed: the job checkpoints, so the transaction open at the
	// end of input is pre-committed by the final checkpoint and committed
	// when it completes; ended: the input has ended.
	checkpointed bool
	ended        bool
}

func (o *twoPhaseOp[T, TXN]) begin() error {
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
func (o *twoPhaseOp[T, TXN]) Open() (err error) {
	defer o.catch(&err)
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
	if s, ok := any(o.sink).(TwoPhaseCommitSubtasks); ok {
		if err := s.OpenSubtask(o.subtask, o.par); err != nil {
			return err
		}
		o.opened = true
	}
	return o.begin()
}

func (o *twoPhaseOp[T, TXN]) ProcessBatch(recs []runtime.Record[T]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		if err := o.sink.Write(o.cur, recs[i].Value, recs[i].TS); err != nil {
			return err
		}
	}
	return nil
}

func (o *twoPhaseOp[T, TXN]) ProcessWatermark(int64) error { return nil }
func (o *twoPhaseOp[T, TXN]) ProcessStatus(bool) error     { return nil }

// EndInput ends the sink's input. With checkpointing the last
// transaction stays open: the task waits for its final checkpoint
// (FLIP-147), which pre-commits it, and commits it when the checkpoint
// completes, as every other transaction. Without checkpointing it is
// pre-committed now, and it and the transactions still pending are
// committed when the whole job has finished (finalCommits), not now:
// another task may still fail, and the restart would replay this
// subtask's input and write it again.
func (o *twoPhaseOp[T, TXN]) EndInput() (err error) {
	defer o.catch(&err)
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

// finalCommits holds a sink's subtasks of the current attempt, to commit
// their pending transactions once the job has finished; only for jobs
// without checkpointing (with it, the final checkpoint commits them).
type finalCommits[T, TXN any] struct {
	mu  sync.Mutex
	ops map[int]*twoPhaseOp[T, TXN]
}

// attach makes o the subtask's operator of the current attempt.
func (f *finalCommits[T, TXN]) attach(subtask int, o *twoPhaseOp[T, TXN]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops == nil {
		f.ops = map[int]*twoPhaseOp[T, TXN]{}
	}
	f.ops[subtask] = o
}

// commit commits every pending transaction of every subtask; it runs after
// the job has finished.
func (f *finalCommits[T, TXN]) commit() error {
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
func (o *twoPhaseOp[T, TXN]) SnapshotState(id int64) (_ runtime.OperatorSnapshot, err error) {
	defer o.catch(&err)
	if o.open {
		if err := o.sink.PreCommit(o.cur); err != nil {
			return runtime.OperatorSnapshot{}, err
		}
		o.pending = append(o.pending, pendingTxn[TXN]{id, o.cur})
		o.open = false
		var zero TXN
		o.cur = zero
		if !o.ended {
			if err := o.begin(); err != nil {
				return runtime.OperatorSnapshot{}, err
			}
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(o.pending); err != nil {
		return runtime.OperatorSnapshot{}, fmt.Errorf("encoding pending transactions: %w", err)
	}
	return runtime.OperatorSnapshot{State: b.Bytes()}, nil
}

// NotifyCheckpointComplete commits every transaction pending up to id.
func (o *twoPhaseOp[T, TXN]) NotifyCheckpointComplete(id int64) (err error) {
	defer o.catch(&err)
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
// closes the subtask's resources (TwoPhaseCommitSubtasks).
func (o *twoPhaseOp[T, TXN]) Close() error {
	var err error
	if o.open {
		o.open = false
		err = o.sink.Abort(o.cur)
	}
	if s, ok := any(o.sink).(TwoPhaseCommitSubtasks); ok && o.opened {
		o.opened = false
		err = errors.Join(err, s.CloseSubtask(o.subtask))
	}
	return err
}

// AddTwoPhaseCommitSink writes ds exactly once through sink: with
// checkpointing, output becomes visible when the checkpoint covering it
// completes; at the end of a bounded job's input every task waits for a
// final checkpoint, whose completion commits the last transactions
// (Flink's checkpoints after tasks finish), so a restore from the job's
// latest checkpoint writes nothing again. Without checkpointing, a bounded
// job's output is committed when the whole job has finished (Execute
// returns after committing it).
func AddTwoPhaseCommitSink[T, TXN any](ds DataStream[T], sink TwoPhaseCommitSink[T, TXN]) Sink {
	if isNil(sink) {
		ds.env.fail(fmt.Errorf("sink %q: %w", "TwoPhaseCommitSink", nilFnError("sink")))
	}
	if v, ok := any(sink).(connector.Validator); ok {
		env := ds.env
		ds.env.validators = append(ds.env.validators, func(ctx context.Context) error {
			if cv, ok := any(sink).(runtime.ClusterValidator); ok && env.cfg.cluster != nil {
				return cv.ValidateCluster(ctx)
			}
			return v.Validate(ctx)
		})
	}
	finals := &finalCommits[T, TXN]{}
	ds.env.onFinished = append(ds.env.onFinished, finals.commit)
	n := newNode[struct{}](ds.env, "TwoPhaseCommitSink", runtime.KindOneInput, ds.env.cfg.parallelism,
		func(bc *runtime.BuildContext, _ *runtime.Output[struct{}]) (runtime.Built, error) {
			if cs, ok := any(sink).(runtime.ClusterSink[T]); ok && bc.Cluster != nil && cs.ClusterBrokers() != nil {
				// In a cluster task the sink writes through the task's
				// transaction (WithKafkaCluster).
				return runtime.NewClusterSinkOp(bc, cs), nil
			}
			o := &twoPhaseOp[T, TXN]{opBase: base(bc), sink: sink, restore: bc.Restored, par: bc.Parallelism,
				checkpointed: ds.env.checkpoint != nil}
			if !o.checkpointed {
				finals.attach(bc.Subtask, o)
			}
			return runtime.Built{Inputs: []any{runtime.Input[T](o)}, Life: o}, nil
		})
	n.Sink = true
	n.Operator = "sink " + typeName(sink)
	n.Connector = sink
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}
