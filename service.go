package weir

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/job"
)

// ServiceOption configures RunService.
type ServiceOption func(*serviceConfig)

type serviceConfig struct {
	stopTimeout time.Duration
	onStart     func(*JobHandle)
}

// ServiceStopTimeout bounds the stop with a savepoint that ends a service
// (default: none beyond the checkpoint timeout, after which the savepoint
// fails). Choose it below your service manager's grace period (systemd's
// TimeoutStopSec, Kubernetes' terminationGracePeriodSeconds): if the
// savepoint is not stored in time the job is cancelled and the next start
// resumes from its latest checkpoint instead.
func ServiceStopTimeout(d time.Duration) ServiceOption {
	return func(c *serviceConfig) { c.stopTimeout = d }
}

// OnServiceStart calls f with the job's handle once the job runs (for its
// metrics, REST address or id); f must not block.
func OnServiceStart(f func(*JobHandle)) ServiceOption {
	return func(c *serviceConfig) { c.onStart = f }
}

// RunService runs the job as a long-running service that keeps its state
// across restarts and deploys, in the directory dir (a local path,
// file:///dir, or a location of a scheme a storage reaches, as
// s3://bucket/prefix with WithStorage(s3.New(...))):
//
//   - On start it resumes from the newest savepoint in dir/savepoints or
//     the latest checkpoint in the checkpoint store, whichever is newer
//     (the savepoint a previous run stopped with, or the checkpoint a
//     crashed run left), checked against the job as RestoreFromSavepoint
//     checks it; with neither it starts empty. A damaged newest savepoint
//     fails the start instead of starting from nothing.
//   - It runs the job until ctx is done (make ctx end on SIGTERM with
//     signal.NotifyContext), then stops the job with a savepoint into
//     dir/savepoints and returns JobStoppedWithSavepoint with its path.
//     ctx only asks for the stop: the job itself runs on a context that
//     ctx's end does not cancel, so the savepoint is taken while the job
//     still runs.
//   - If the input ends first it returns JobFinished; if the job is
//     stopped or cancelled through the REST API, that result.
//
// The error is nil when the job finished, was stopped with a savepoint or
// was cancelled through the REST API; it is the failure when the job
// failed or could not start, and says so when the stop with a savepoint
// failed (the job is then cancelled, JobCanceled, and the next start
// resumes from its latest checkpoint).
//
// RunService needs EnableCheckpointing. Checkpoints kept in memory (the
// default store, or a MemoryCheckpointStore), which a new process could
// not find, are kept in dir/checkpoints instead; a store set with
// CheckpointStorage or CheckpointStoreIn is used as it is. Savepoints
// requested without a directory (`weir savepoint --stop` without --dir)
// go to dir/savepoints unless DefaultSavepointDir says otherwise. A
// savepoint in dir/savepoints wins over RestoreFromSavepoint's, which
// only the first run of a service uses; AllowNonRestoredState given to
// RestoreFromSavepoint or RestoreFromLatest applies.
func (e *Environment) RunService(ctx context.Context, name, dir string, opts ...ServiceOption) (JobResult, error) {
	var sc serviceConfig
	for _, o := range opts {
		o(&sc)
	}
	switch {
	case dir == "":
		return JobResult{}, errors.New("weir: RunService: no state directory given")
	case e.checkpoint == nil:
		return JobResult{}, errors.New("weir: RunService: the job needs checkpointing to stop with a savepoint and to resume: call EnableCheckpointing")
	case e.cfg.cluster != nil:
		return JobResult{}, errors.New("weir: RunService: a cluster job (WithCluster) keeps its state in its committed checkpoints; run it with ExecuteAsync")
	case sc.stopTimeout < 0:
		return JobResult{}, fmt.Errorf("weir: RunService: stop timeout must not be negative, got %v", sc.stopTimeout)
	}
	if err := e.Err(); err != nil {
		return JobResult{}, fmt.Errorf("weir: invalid job: %w", err)
	}
	base := strings.TrimRight(dir, "/")
	savepoints := base + "/savepoints"
	log := e.cfg.logger.With("job", name)
	remotes, err := e.remotes()
	if err != nil {
		return JobResult{}, fmt.Errorf("weir: invalid job: %w", err)
	}
	if _, ok := e.checkpoint.store.(*MemoryCheckpointStore); ok && e.checkpoint.cp.Storage == "" {
		d, err := newDurableStore(base+"/checkpoints", remotes, "weir.WithStorage")
		if err != nil {
			return JobResult{}, fmt.Errorf("weir: RunService: checkpoint storage in %s: %w", dir, err)
		}
		d.d.UseLogger(e.cfg.logger)
		e.checkpoint.store, e.checkpoint.cp.Storage = d, base+"/checkpoints"
	}
	if e.checkpoint.cp.SavepointDir == "" {
		e.checkpoint.cp.SavepointDir = savepoints
	}
	// The starting point: the savepoint directory stands for its newest
	// savepoint, and RestoreFromLatest makes a newer checkpoint win.
	found, err := job.NewestSavepoint(ctx, savepoints, remotes, log)
	if err != nil {
		return JobResult{}, err
	}
	if found {
		allow := e.cfg.savepoint != nil && e.cfg.savepoint.allowNonRestored
		e.cfg.savepoint = &savepointRestore{path: savepoints, allowNonRestored: allow}
	}
	e.checkpoint.cp.Restore = true

	// The job runs on a context that ctx's end does not cancel: ctx only
	// asks for the stop.
	h, err := e.ExecuteAsync(context.WithoutCancel(ctx), name)
	if err != nil {
		return JobResult{}, err
	}
	if sc.onStart != nil {
		sc.onStart(h)
	}
	stopErr := job.Serve(ctx, h, name, savepoints, sc.stopTimeout, log)
	res := h.Result()
	switch {
	case stopErr != nil:
		return res, stopErr
	case res.Status == JobFailed:
		return res, res.Err
	}
	return res, nil
}
