package weir

import (
	"context"
	"errors"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
)

// savepointRestore is the RestoreFromSavepoint setting.
type savepointRestore struct {
	path             string
	allowNonRestored bool
}

// RestoreOption configures RestoreFromSavepoint.
type RestoreOption func(*savepointRestore)

// AllowNonRestoredState lets a job start from a savepoint that holds state
// for operator UIDs the job does not have: that state is dropped (with a
// log line) instead of failing the start.
func AllowNonRestoredState() RestoreOption {
	return func(r *savepointRestore) { r.allowNonRestored = true }
}

// RestoreFromSavepoint starts the job from the savepoint (or retained
// checkpoint) at path: a savepoint's directory as TriggerSavepoint returns
// it (".../savepoint-7"), a checkpoint's (".../chk-12"), the same
// directory renamed or copied to any name (any directory holding a
// savepoint's _manifest.json and files), or a directory holding
// savepoints, which stands for its newest one. Each form may be a local
// path or a location of a scheme a storage reaches (WithStorage), as
// s3://bucket/prefix. The job may have
// another parallelism: each keyed operator's key groups are redistributed
// over its new subtasks and every key's state and timers go with them,
// and each source's splits go to its new subtasks with their positions (a
// Source of your own whose Splits differ at the new parallelism cannot
// restore them: the start fails, naming the split).
// State is matched to operators by UID (set them with .UID(...) so that
// they survive changes to the job). Execute fails, before anything runs,
// if path does not exist or is damaged, if the savepoint has state for a
// UID no operator of the job has (unless AllowNonRestoredState), or if it
// was taken with another max parallelism. With RestoreFromLatest as well,
// a checkpoint in the store newer than the savepoint wins (a restarted
// process resumes where it was).
func RestoreFromSavepoint(path string, opts ...RestoreOption) Option {
	r := &savepointRestore{path: path}
	for _, o := range opts {
		o(r)
	}
	return func(c *config) { c.savepoint = r }
}

// ReadSavepoint reads the savepoint or checkpoint at path (see
// RestoreFromSavepoint for the forms of path; an s3:// path needs
// ReadWithStorage(s3.New(...))), verifying every file's checksum.
func ReadSavepoint(ctx context.Context, path string, opts ...ReadOption) (*Checkpoint, error) {
	var c readConfig
	for _, o := range opts {
		o(&c)
	}
	r, err := hooks.Remotes(c.storages, "weir.ReadWithStorage")
	if err != nil {
		return nil, err
	}
	cp, err := durable.ReadSavepoint(ctx, path, r, "weir.ReadWithStorage", nil)
	return publicCheckpoint(cp), err
}

// TriggerSavepoint takes a savepoint of the running job and returns its
// path, dir/savepoint-<id>. dir is a local directory (created if needed)
// or a location of a scheme a storage reaches (WithStorage), as
// s3://bucket/prefix (the savepoint's objects are
// prefix/savepoint-<id>/...); "" means the DefaultSavepointDir. A savepoint is
// a checkpoint taken on demand, always aligned, in the format of
// internal/checkpoint/store/FORMAT.md with kind "savepoint"; retention
// never deletes it and failover never uses it. It starts as soon as no
// checkpoint is in flight and fails if it does not complete within the
// checkpoint timeout. Savepoints need EnableCheckpointing (it sets up the
// barriers and the coordinator), even with a long interval.
func (h *JobHandle) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	return h.savepoint(ctx, dir, false)
}

// StopWithSavepoint takes a savepoint and stops the job, as Flink's stop
// without --drain: the sources emit nothing after the savepoint's barrier,
// no final watermark is sent, so pending timers stay in the savepoint; once
// the savepoint is stored every operator is told it completed (exactly-once
// sinks commit), then the job ends: Wait returns a *StoppedError with the
// savepoint's path (errors.Is ErrStopped) and Result reports
// JobStoppedWithSavepoint. If the savepoint fails the job goes on and the
// error is returned.
func (h *JobHandle) StopWithSavepoint(ctx context.Context, dir string) (string, error) {
	path, err := h.savepoint(ctx, dir, true)
	if err != nil {
		return "", err
	}
	select {
	case <-h.done:
		return path, nil
	case <-ctx.Done():
		return path, ctx.Err()
	}
}

func (h *JobHandle) savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if h.cluster != nil {
		return "", errors.New("weir: a cluster job keeps its state in its committed checkpoints; savepoints do not run on a cluster member")
	}
	return h.env.eng.Savepoint(ctx, h.name, dir, stop, h.done, func(path string) {
		h.mu.Lock()
		h.stopped, h.savepointPath = true, path
		h.mu.Unlock()
		h.cancel()
	})
}

// Storage reaches the checkpoint and savepoint locations of one URL
// scheme other than file ("s3" for s3://bucket/prefix), as Flink's file
// system plugins do. The storage packages of this module provide them
// (github.com/weirstream/weir/storage/s3); a job plugs one in with
// WithStorage, ReadSavepoint with ReadWithStorage. Local directories need
// none. Only the packages imported link their client libraries.
type Storage interface {
	// Scheme returns the URL scheme whose locations the storage reaches
	// ("s3").
	Scheme() string
	// CheckpointStore returns the checkpoint store at location
	// (scheme://bucket/prefix), as NewCheckpointStore does.
	CheckpointStore(location string) (CheckpointStore, error)
}

// WithStorage makes the job reach the locations of s's scheme wherever it
// takes one: CheckpointStorage, TriggerSavepoint, StopWithSavepoint, the
// control endpoint (weir savepoint --dir s3://...), DefaultSavepointDir,
// RestoreFromSavepoint and RunService. Give it once per scheme: a location
// whose scheme has no storage fails the job when it is built, naming this
// option.
func WithStorage(s Storage) Option {
	return func(c *config) { c.storages = append(c.storages, s) }
}

// remotes returns the openers of the job's storages (WithStorage).
func (e *Environment) remotes() (store.Remotes, error) {
	return hooks.Remotes(e.cfg.storages, "weir.WithStorage")
}

// ReadOption configures ReadSavepoint.
type ReadOption func(*readConfig)

type readConfig struct{ storages []Storage }

// ReadWithStorage makes ReadSavepoint reach the locations of s's scheme
// (as WithStorage for a job).
func ReadWithStorage(s Storage) ReadOption {
	return func(c *readConfig) { c.storages = append(c.storages, s) }
}

// DefaultSavepointDir is the target of savepoints requested without one
// (TriggerSavepoint or StopWithSavepoint with dir ""), as Flink's
// state.savepoints.dir: a local directory (a path or file:///dir) or a
// location of a scheme a storage reaches (WithStorage), as
// s3://bucket/prefix.
func DefaultSavepointDir(target string) CheckpointOption {
	return func(c *checkpointConfig) { c.cp.SavepointDir = target }
}
