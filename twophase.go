package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/builtinsrc"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/twophase"
)

// TwoPhaseCommitSink is connector.TwoPhaseCommitSink: a sink that writes
// records in transactions that become visible only when the checkpoint
// covering them completes.
type TwoPhaseCommitSink[T, TXN any] = connector.TwoPhaseCommitSink[T, TXN]

// TwoPhaseCommitSubtasks is connector.TwoPhaseCommitSubtasks: a
// two-phase-commit sink that holds resources per subtask.
type TwoPhaseCommitSubtasks = connector.TwoPhaseCommitSubtasks

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
			if cv, ok := any(sink).(engine.ClusterValidator); ok && env.cfg.cluster != nil {
				return cv.ValidateCluster(ctx)
			}
			return v.Validate(ctx)
		})
	}
	finals := &twophase.Finals[T, TXN]{}
	ds.env.onFinished = append(ds.env.onFinished, finals.Commit)
	n := newNode[struct{}](ds.env, "TwoPhaseCommitSink", engine.KindOneInput, ds.env.cfg.parallelism,
		func(bc *engine.BuildContext, _ *engine.Output[struct{}]) (engine.Built, error) {
			if cs, ok := any(sink).(engine.ClusterSink); ok && bc.Cluster != nil && cs.ClusterBrokers() != nil {
				// In a cluster task the sink writes through the task's
				// transaction (WithCluster).
				rec, err := clusterRecordFunc[T](sink)
				if err != nil {
					return engine.Built{}, err
				}
				return engine.NewClusterSinkOp(bc, rec), nil
			}
			b := base(bc) // reports errors and panics against the sink
			o := &twophase.Caught[T, TXN]{Catch: b.catch, Op: twophase.New[T, TXN](sink, bc.Name, bc.Subtask, bc.Parallelism,
				bc.Restored, ds.env.checkpoint != nil)}
			if ds.env.checkpoint == nil {
				finals.Attach(bc.Subtask, o.Op)
			}
			return engine.Built{Inputs: []any{engine.Input[T](o)}, Life: o}, nil
		})
	n.Sink = true
	n.Operator = "sink " + builtinsrc.TypeName(sink) // as a source's kind (source_api.go)
	n.Connector = sink
	ds.connect(n, 0)
	return Sink{node: n, env: ds.env}
}
