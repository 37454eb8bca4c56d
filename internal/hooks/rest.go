package hooks

// The internal side of weir.Plugin (weir.WithPlugin): what a plugin
// attached to a running job, such as the REST server of package rest,
// sees of the job. Its methods use internal types, so that no exported
// identifier of a public package does.

import (
	"context"
	"log/slog"

	"github.com/weirstream/weir/internal/monitor"
)

// JobPlugin is implemented by the values of weir.Plugin that Weir can
// attach to a job (the root type-asserts to it).
type JobPlugin interface {
	// Check reports a setting of the plugin that cannot work, when the
	// job is built (before anything runs).
	Check() error
	// Attach starts the plugin for job, which starts now; logger is the
	// environment's logger, jobLog the job's (its entries name the job).
	// The returned stop is called once the job has ended.
	Attach(job Job, logger, jobLog *slog.Logger) (stop func(), err error)
}

// Job is a running job as a plugin sees it.
type Job interface {
	// Snapshot returns the job's state now.
	Snapshot() *monitor.Snapshot
	// Savepoint takes a savepoint into dir ("" means the job's default
	// directory), stopping the job after it if stop, and returns its path.
	Savepoint(ctx context.Context, dir string, stop bool) (string, error)
	// Cancel cancels the job.
	Cancel()
	// Record captures the inputs of one subtask of a vertex (by ID or
	// name) until ctx ends or limit input lines were captured (0: no
	// limit) and returns them as a scenario file.
	Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error)
}
