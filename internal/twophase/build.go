package twophase

import (
	"context"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/job"
)

// Validator returns the check of sink when the job is built (nil if it
// has none): its cluster check when clustered() and it has one, else its
// own.
func Validator(sink any, clustered func() bool) func(ctx context.Context) error {
	v, ok := sink.(connector.Validator)
	if !ok {
		return nil
	}
	return func(ctx context.Context) error {
		if cv, ok := sink.(engine.ClusterValidator); ok && clustered() {
			return cv.ValidateCluster(ctx)
		}
		return v.Validate(ctx)
	}
}

// Build builds the sink's operator of the subtask bc builds. In a cluster
// task the sink writes through the task's transaction (the root's
// WithCluster). catch reports errors and panics against the sink; without
// checkpoints (checkpointed false), finals commits the subtask's output
// when the job has finished.
func Build[T, TXN any](bc *engine.BuildContext, sink Sink[T, TXN], catch func(*error), checkpointed bool,
	finals *Finals[T, TXN]) (engine.Built, error) {
	if cs, ok := any(sink).(engine.ClusterSink); ok && bc.Cluster != nil && cs.ClusterBrokers() != nil {
		rec, err := job.ClusterRecordFunc[T](sink)
		if err != nil {
			return engine.Built{}, err
		}
		return engine.NewClusterSinkOp(bc, rec), nil
	}
	o := &Caught[T, TXN]{Catch: catch, Op: New[T, TXN](sink, bc.Name, bc.Subtask, bc.Parallelism, bc.Restored, checkpointed)}
	if !checkpointed {
		finals.Attach(bc.Subtask, o.Op)
	}
	return engine.Built{Inputs: []any{engine.Input[T](o)}, Life: o}, nil
}
