package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/job"
)

// Plugin is something attached to each job an Environment runs, for as
// long as the job runs: the REST API, Prometheus and dashboard server of
// package github.com/weirstream/weir/rest (rest.New) is one. Plug one
// with WithPlugin.
//
// Your own plugin (a metrics reporter, a health endpoint) also implements
// JobAttacher: it is given the job's handle (Metrics, Status,
// TriggerSavepoint, ...) when the job starts. Weir's own plugin packages
// reach further into the engine through an internal interface instead.
type Plugin interface {
	// PluginName names the plugin in errors and logs.
	PluginName() string
}

// JobAttacher is the part of a Plugin that the environment calls when a
// job starts: Attach gets the job's handle and returns the function that
// detaches the plugin, called on the job's goroutine once the job has
// ended (the last attached plugin first), possibly just after Wait has
// returned, so that a plugin serving requests answers the job's end
// first. An error fails the job's start.
type JobAttacher interface {
	Attach(job *JobHandle) (detach func(), err error)
}

// WithPlugin attaches p to every job the environment runs: p starts with
// the job (ExecuteAsync, Execute, RunService) and stops once the job has
// ended. For instance
//
//	srv := rest.New("127.0.0.1:8081")
//	env := weir.NewEnvironment(weir.WithPlugin(srv))
//
// serves the job's REST API, Prometheus metrics and dashboard;
// srv.Addr() tells the address once the job started. A plugin that is
// nil or that cannot be attached (neither one of Weir's nor a
// JobAttacher), or whose settings cannot work, fails the job when it is
// built.
func WithPlugin(p Plugin) Option { return func(c *config) { c.plugins = append(c.plugins, p) } }

// checkPlugins reports the plugins that cannot be attached.
func (e *Environment) checkPlugins() {
	for _, p := range e.cfg.plugins {
		if isNil(p) {
			e.fail(errors.New("WithPlugin: the plugin is nil"))
			continue
		}
		jp, ok := p.(hooks.JobPlugin)
		if !ok {
			if _, ok := p.(JobAttacher); !ok {
				e.fail(fmt.Errorf("WithPlugin: %s (%T) has no Attach method (weir.JobAttacher)", p.PluginName(), p))
			}
			continue
		}
		if err := jp.Check(); err != nil {
			e.fail(fmt.Errorf("WithPlugin(%s): %w", p.PluginName(), err))
		}
	}
}

// startREST attaches the environment's plugins (WithPlugin: the REST
// server, ...) to h; the returned function stops them, last attached
// first.
func (e *Environment) startREST(h *JobHandle, log *slog.Logger) (func(), error) {
	return job.Attach(e.cfg.plugins, func(p Plugin) (func(), bool, error) {
		if jp, ok := p.(hooks.JobPlugin); ok {
			stop, err := jp.Attach(pluginJob{h}, e.cfg.logger, log)
			return stop, true, err
		}
		if ja, ok := p.(JobAttacher); ok {
			stop, err := ja.Attach(h)
			return stop, true, err
		}
		return nil, false, nil // refused by checkPlugins
	})
}

// pluginJob adapts a JobHandle to hooks.Job.
type pluginJob struct{ h *JobHandle }

func (j pluginJob) Snapshot() *monitorSnapshot { return j.h.snapshot() }

func (j pluginJob) Savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if stop {
		return j.h.StopWithSavepoint(ctx, dir)
	}
	return j.h.TriggerSavepoint(ctx, dir)
}

func (j pluginJob) Cancel() { j.h.Cancel() }

// TriggerCheckpoint starts a checkpoint now (Flink's REST trigger) and
// returns its id.
func (j pluginJob) TriggerCheckpoint(ctx context.Context) (int64, error) {
	if j.h.cluster != nil {
		return 0, errors.New("weir: a cluster member checkpoints on its own schedule; manual checkpoints do not run on a cluster member")
	}
	return j.h.env.eng.Checkpoint(ctx, j.h.done)
}

// SavepointDir is the job's default savepoint target (DefaultSavepointDir,
// RunService's), under which REST clients may name targets.
func (j pluginJob) SavepointDir() string {
	if c := j.h.env.eng.Cfg.Checkpoint; c != nil {
		return c.SavepointDir
	}
	return ""
}

func (j pluginJob) Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	return j.h.record(ctx, vertex, subtask, limit)
}

// record captures the inputs of one subtask of a vertex (by id, name or
// head UID) until ctx ends or limit input lines were taken, and returns
// them as a scenario file (internal/capture; `weir record`).
func (h *JobHandle) record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	if h.cluster != nil {
		return nil, errors.New("weir record: input capture does not run on a cluster member yet")
	}
	plan := func() *engine.Plan {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.plan
	}
	return job.Record(ctx, h.name, h.snapshot(), plan, h.done, vertex, subtask, limit)
}
