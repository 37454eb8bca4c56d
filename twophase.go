package weir

import (
	"context"
	"fmt"
	"os"

	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/textio"
	"github.com/weirstream/weir/internal/twophase"
)

// TwoPhaseCommitSink writes records in transactions that become visible
// only when the checkpoint that covers them completes, so a restarted job
// neither loses nor repeats output (Flink's TwoPhaseCommitSinkFunction).
// TXN must be encodable with encoding/gob (exported fields): pre-committed
// transactions are part of the checkpoint.
type TwoPhaseCommitSink[T, TXN any] interface {
	// BeginTransaction starts a transaction of subtask.
	BeginTransaction(subtask int) (TXN, error)
	// Write adds a record to the transaction.
	Write(txn TXN, v T, ts int64) error
	// PreCommit makes the transaction durable; it runs at the checkpoint barrier.
	PreCommit(txn TXN) error
	// Commit makes a pre-committed transaction visible. It must be
	// idempotent: after a restore, transactions of the restored checkpoint
	// are committed again.
	Commit(txn TXN) error
	// Abort discards a transaction.
	Abort(txn TXN) error
}

// TwoPhaseCommitSubtasks is implemented by two-phase-commit sinks that
// hold resources per subtask (a connection, a transactional producer).
// OpenSubtask runs when a subtask opens, after the transactions of the
// restored checkpoint were committed and before its first
// BeginTransaction: a Kafka sink aborts the lingering transactions of
// earlier attempts there. CloseSubtask runs when the subtask closes;
// transactions still pending are committed later, after the job has
// finished, so Commit must work without the subtask's resources.
type TwoPhaseCommitSubtasks interface {
	OpenSubtask(subtask, parallelism int) error
	CloseSubtask(subtask int) error
}

// twoPhaseOp is the operator of a two-phase-commit sink
// (internal/twophase) reporting errors and panics against the sink.
type twoPhaseOp[T, TXN any] struct {
	opBase
	*twophase.Op[T, TXN]
}

func (o *twoPhaseOp[T, TXN]) Open() (err error) {
	defer o.catch(&err)
	return o.Op.Open()
}

func (o *twoPhaseOp[T, TXN]) ProcessBatch(recs []runtime.Record[T]) (err error) {
	defer o.catch(&err)
	return o.Op.ProcessBatch(recs)
}

func (o *twoPhaseOp[T, TXN]) EndInput() (err error) {
	defer o.catch(&err)
	return o.Op.EndInput()
}

func (o *twoPhaseOp[T, TXN]) SnapshotState(id int64) (_ runtime.OperatorSnapshot, err error) {
	defer o.catch(&err)
	return o.Op.SnapshotState(id)
}

func (o *twoPhaseOp[T, TXN]) NotifyCheckpointComplete(id int64) (err error) {
	defer o.catch(&err)
	return o.Op.NotifyCheckpointComplete(id)
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
	if v, ok := any(sink).(Validator); ok {
		env := ds.env
		ds.env.validators = append(ds.env.validators, func(ctx context.Context) error {
			if cv, ok := any(sink).(runtime.ClusterValidator); ok && env.cfg.cluster != nil {
				return cv.ValidateCluster(ctx)
			}
			return v.Validate(ctx)
		})
	}
	finals := &twophase.Finals[T, TXN]{}
	ds.env.onFinished = append(ds.env.onFinished, finals.Commit)
	n := newNode[struct{}](ds.env, "TwoPhaseCommitSink", runtime.KindOneInput, ds.env.cfg.parallelism,
		func(bc *runtime.BuildContext, _ *runtime.Output[struct{}]) (runtime.Built, error) {
			if cs, ok := any(sink).(runtime.ClusterSink); ok && bc.Cluster != nil && cs.ClusterBrokers() != nil {
				// In a cluster task the sink writes through the task's
				// transaction (WithCluster).
				rec, err := clusterRecordFunc[T](sink)
				if err != nil {
					return runtime.Built{}, err
				}
				return runtime.NewClusterSinkOp(bc, rec), nil
			}
			o := &twoPhaseOp[T, TXN]{opBase: base(bc), Op: twophase.New[T, TXN](sink, bc.Name, bc.Subtask, bc.Parallelism,
				bc.Restored, ds.env.checkpoint != nil)}
			if ds.env.checkpoint == nil {
				finals.Attach(bc.Subtask, o.Op)
			}
			return runtime.Built{Inputs: []any{runtime.Input[T](o)}, Life: o}, nil
		})
	n.Sink = true
	n.Operator = "sink " + typeName(sink)
	n.Connector = sink
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}

// FileSink writes each record as a line (format's bytes plus a newline) to
// part files in dir, exactly once: a part file appears under its final
// name ("part-<subtask>-<n>") only when the checkpoint covering it has
// completed (or the bounded job ended). Files of failed attempts are
// removed or overwritten; readers should ignore names starting with ".".
//
// Deprecated: use file.Sink (package
// github.com/weirstream/weir/connector/file).
func FileSink[T any](ds DataStream[T], dir string, format func(T) []byte) Sink {
	if format == nil {
		ds.env.fail(fmt.Errorf("sink %q: %w", "FileSink", nilFnError("format function")))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ds.env.fail(fmt.Errorf("sink %q: %w", "FileSink", err))
	}
	return AddTwoPhaseCommitSink[T, *textio.FileTxn](ds, textio.NewFileSink(dir, format, nil)).Name("FileSink")
}

// ReadCommittedLines returns the lines of every committed part file in dir
// (names not starting with "."), part files in name order.
//
// Deprecated: use file.ReadCommittedLines.
func ReadCommittedLines(dir string) ([]string, error) { return textio.ReadCommittedLines(dir) }
