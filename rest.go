package weir

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/rest"
)

// WithRESTAddress makes ExecuteAsync (and Execute) serve the job's HTTP
// server on addr ("127.0.0.1:0" picks a free port; JobHandle.RESTAddress
// tells which) until the job ends: Flink's REST API (v1 paths and JSON
// field names: /overview, /config, /jobs/overview, /jobs/:jobid,
// /jobs/:jobid/plan, /jobs/:jobid/vertices/:vertexid with .../watermarks,
// .../backpressure and .../flamegraph, /jobs/:jobid/checkpoints and
// .../checkpoints/details/:id, /jobs/:jobid/exceptions, the metrics
// queries, savepoints, stop with savepoint and cancel), Prometheus
// metrics at /metrics, /debug/pprof, Weir's own resources under /weir/
// (snapshots, history, doctor findings, input capture) and the web
// dashboard at /. The job's id in the paths is a 32-hex-digit id
// (JobHandle.ID); its name works too.
//
// Default off. Bind it to a loopback address unless you give a token
// (WithRESTToken): on any other address Execute refuses to start without
// one. With a token, write actions and profiles need the header
// "Authorization: Bearer TOKEN"; monitoring is open.
func WithRESTAddress(addr string) Option { return func(c *config) { c.restAddr = addr } }

// WithRESTToken sets the token the REST server requires for write actions
// (savepoints, stop, cancel, input capture) and profiles.
func WithRESTToken(token string) Option { return func(c *config) { c.restToken = token } }

// WithControlAddress is the older name of WithRESTAddress: the control
// endpoint (`weir savepoint --address`) is part of the REST server.
func WithControlAddress(addr string) Option { return WithRESTAddress(addr) }

// RESTAddress returns the address of the job's REST server, or "" without
// WithRESTAddress.
func (h *JobHandle) RESTAddress() string { return h.rest }

// ControlAddress returns the address of the job's control endpoint: its
// REST server (RESTAddress).
func (h *JobHandle) ControlAddress() string { return h.rest }

// startREST serves the REST API for h if configured; the returned
// function stops it.
func (e *Environment) startREST(h *JobHandle, log *slog.Logger) (func(), error) {
	if e.cfg.restAddr == "" {
		return func() {}, nil
	}
	s, err := rest.Listen(e.cfg.restAddr, rest.Options{Token: e.cfg.restToken, Logger: e.cfg.logger, Version: "weir"}) // its entries name the job themselves
	if err != nil {
		return nil, fmt.Errorf("weir: %w", err)
	}
	s.Register(restJob{h})
	h.rest = s.Addr()
	log.Info("REST server listening", "address", h.rest, "dashboard", "http://"+h.rest+"/")
	return func() {
		if err := s.Close(10 * time.Second); err != nil {
			log.Warn("REST server did not stop cleanly", "err", err)
		}
	}, nil
}

// restJob adapts a JobHandle to the REST server.
type restJob struct{ h *JobHandle }

func (j restJob) Snapshot() *monitorSnapshot { return j.h.snapshot() }

func (j restJob) Savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if stop {
		return j.h.StopWithSavepoint(ctx, dir)
	}
	return j.h.TriggerSavepoint(ctx, dir)
}

func (j restJob) Cancel() { j.h.Cancel() }

func (j restJob) Record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	return j.h.record(ctx, vertex, subtask, limit)
}
