package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
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
	return readSavepoint(ctx, path, r, "weir.ReadWithStorage", nil)
}

// readSavepoint reads the savepoint at path; option names the option that
// adds a storage, for messages.
func readSavepoint(ctx context.Context, path string, r store.Remotes, option string, log *slog.Logger) (*Checkpoint, error) {
	if path == "" {
		return nil, errors.New("no savepoint path given")
	}
	s, m, err := openSavepoint(ctx, path, r, option, log)
	if err != nil {
		return nil, err
	}
	d := &durableStore{s: s}
	return d.load(ctx, m)
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
	e := h.env
	if h.cluster != nil {
		return "", errors.New("weir: a cluster job keeps its state in its committed checkpoints; savepoints do not run on a cluster member")
	}
	if e.checkpoint == nil {
		return "", errors.New("weir: savepoints need checkpointing: call EnableCheckpointing on the environment")
	}
	if dir == "" {
		dir = e.checkpoint.savepointDir
	}
	if dir == "" {
		return "", fmt.Errorf("weir: savepoint: %w (set one with DefaultSavepointDir)", hooks.ErrNoSavepointTarget)
	}
	r, err := e.remotes()
	if err != nil {
		return "", fmt.Errorf("weir: savepoint: %w", err)
	}
	s, pathOf, err := savepointTarget(dir, r, e.logger())
	if err != nil {
		return "", fmt.Errorf("weir: savepoint: %w", err)
	}
	ds := &durableStore{s: s, jobID: h.name}
	type result struct {
		path string
		err  error
	}
	res := make(chan result, 1)
	req := &runtime.SavepointRequest{
		Stop: stop,
		Persist: func(ctx context.Context, id int64, acks []runtime.TaskAck) error {
			_, err := ds.save(ctx, e.assemble(id, acks), store.Savepoint)
			return err
		},
		Done: func(id int64, err error) {
			if err != nil {
				res <- result{err: fmt.Errorf("weir: %w", err)}
				return
			}
			path := pathOf(id)
			e.cpStats.SetExternalPath(id, path)
			e.logger().Info("savepoint completed", "savepoint", id, "path", path, "stop", stop)
			res <- result{path: path} // before the job ends (h.done)
			if stop {
				h.mu.Lock()
				h.stopped, h.savepointPath = true, path
				h.mu.Unlock()
				h.cancel()
			}
		},
	}
	select {
	case e.savepoints <- req:
	case <-h.done:
		return "", errors.New("weir: savepoint: the job has ended")
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-res:
		return r.path, r.err
	case <-h.done:
		select {
		case r := <-res:
			return r.path, r.err
		default:
			return "", errors.New("weir: savepoint: the job ended before the savepoint was taken")
		}
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
