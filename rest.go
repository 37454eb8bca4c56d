package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weirstream/weir/internal/hooks"
)

// Plugin is something attached to each job an Environment runs, for as
// long as the job runs: the REST API, Prometheus and dashboard server of
// package github.com/weirstream/weir/rest (rest.New) is one. Only
// Weir's plugin packages implement it (their values also implement an
// internal interface the environment uses); plug one with WithPlugin.
type Plugin interface {
	// PluginName names the plugin in errors and logs.
	PluginName() string
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
// nil or not one of Weir's, or whose settings cannot work, fails the
// job when it is built.
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
			e.fail(fmt.Errorf("WithPlugin: %s (%T) is not a Weir plugin: use one of Weir's plugin packages, such as rest.New", p.PluginName(), p))
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
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, p := range e.cfg.plugins {
		jp, ok := p.(hooks.JobPlugin)
		if !ok {
			continue // refused by checkPlugins
		}
		stop, err := jp.Attach(pluginJob{h}, e.cfg.logger, log)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("weir: %s: %w", p.PluginName(), err)
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
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

func (j pluginJob) Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	return j.h.record(ctx, vertex, subtask, limit)
}
