package weir

import (
	"context"
	"errors"

	"github.com/weirstream/weir/internal/clusterjob"
	"github.com/weirstream/weir/internal/job"
)

// Cluster runs a job as a member of a cluster of processes: every
// instance started with the same program and job name (Execute's name)
// takes a share of the job's tasks, a task that moves restores from its
// last committed checkpoint in the checkpoint storage all instances share,
// and each task commits its output and its checkpoint together. Package
// kafkacluster provides one on Kafka (kafkacluster.New); plug it in with
// WithCluster.
type Cluster interface {
	// Validate reports settings the cluster cannot run with; the job
	// fails with it when it is built.
	Validate() error
}

// WithCluster makes the job a member of the cluster c
// (WithCluster(kafkacluster.New("host:9092", ...))). A cluster job needs
// aligned exactly-once checkpointing into storage every instance reaches
// (EnableCheckpointing with CheckpointStorage: a directory on a shared
// file system, or s3:// with WithStorage), and a name; it restores from
// its own committed checkpoints, never from a savepoint.
func WithCluster(c Cluster) Option { return func(cf *config) { cf.cluster = c } }

// clusterRecordFunc returns the function that makes the Kafka client's
// record for a value of sink (job.ClusterRecordFunc).
func clusterRecordFunc[T any](sink any) (func(v T, ts int64) (any, error), error) {
	return job.ClusterRecordFunc[T](sink)
}

// executeCluster runs the job as a cluster member until ctx ends.
func (e *Environment) executeCluster(ctx context.Context, name string) (*JobHandle, error) {
	hc, err := job.CheckCluster(e.cfg.cluster, isNil(e.cfg.cluster), e.jobConfig(), name)
	if err != nil {
		return nil, err
	}
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	jctx, cancel := context.WithCancel(ctx)
	h := &JobHandle{name: name, env: e, cancel: cancel, done: make(chan struct{}), cluster: &clusterjob.Owned{}}
	log := e.cfg.logger.With("job", name)
	e.eng.Mon.Start()
	stopREST, err := e.startREST(h, log)
	if err != nil {
		cancel()
		return nil, err
	}
	spec := e.eng.ClusterSpec(name, h.cluster)
	go func() {
		defer stopREST() // its requests end with the job
		defer close(h.done)
		defer e.eng.Mon.End()
		defer cancel()
		err := hc.RunCluster(jctx, spec)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = ctx.Err()
		}
		h.mu.Lock()
		h.err = err
		h.mu.Unlock()
	}()
	return h, nil
}
