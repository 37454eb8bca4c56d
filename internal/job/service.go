package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
)

// NewestSavepoint reports whether the directory savepoints holds a
// savepoint (weir.RunService's starting point; the checkpoint store's
// latest wins if newer, as StartingPoint compares their ids, which one
// sequence numbers). ctx only asks for the stop: a signal during the start
// does not fail the reads (the job then starts and stops at once). A
// damaged newest savepoint is an error.
func NewestSavepoint(ctx context.Context, savepoints string, r store.Remotes, log *slog.Logger) (bool, error) {
	switch _, m, err := durable.OpenSavepoint(context.WithoutCancel(ctx), savepoints, r, "weir.WithStorage", log); {
	case err == nil:
		log.Info("newest savepoint in the service's directory", "dir", savepoints, "savepoint", m.ID)
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		log.Info("no savepoint in the service's directory", "dir", savepoints)
		return false, nil
	default:
		return false, fmt.Errorf("weir: RunService: reading the newest savepoint in %s: %w (move it away to resume from an older one)", savepoints, err)
	}
}

// Service is a job run as a service (weir.RunService), as Serve sees its
// handle.
type Service interface {
	Done() <-chan struct{}
	StopWithSavepoint(ctx context.Context, dir string) (string, error)
	Cancel()
}

// Serve waits until the service job h (named name) ends or ctx is done;
// then it stops the job with a savepoint into savepoints, bounded by
// stopTimeout if it is positive. If that stop fails while the job runs,
// the job is cancelled and the error says so.
func Serve(ctx context.Context, h Service, name, savepoints string, stopTimeout time.Duration, log *slog.Logger) error {
	var stopErr error
	select {
	case <-h.Done():
	case <-ctx.Done():
		log.Info("stopping the service with a savepoint", "dir", savepoints, "cause", context.Cause(ctx))
		sctx := context.WithoutCancel(ctx)
		if stopTimeout > 0 {
			var cancel context.CancelFunc
			sctx, cancel = context.WithTimeout(sctx, stopTimeout)
			defer cancel()
		}
		_, err := h.StopWithSavepoint(sctx, savepoints)
		if err != nil {
			select {
			case <-h.Done(): // it ended meanwhile: its own result tells
			default:
				log.Error("the stop with a savepoint failed; cancelling the job, which resumes from its latest checkpoint", "err", err)
				stopErr = fmt.Errorf("weir: service %q: the stop with a savepoint failed, so the job was cancelled and resumes from its latest checkpoint: %w", name, err)
				h.Cancel()
			}
		}
	}
	return stopErr
}
