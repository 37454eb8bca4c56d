package weir

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/control"
)

// WithControlAddress makes ExecuteAsync (and Execute) serve a small HTTP
// control endpoint for the job on addr ("127.0.0.1:0" picks a free port;
// JobHandle.ControlAddress tells which) until the job ends:
//
//	GET  /jobs                     the job's name and status
//	POST /jobs/{name}/savepoints   {"dir": "/savepoints", "stop": false} -> {"path": ".../savepoint-7"}
//
// `weir savepoint --address host:port --dir DIR [--stop] JOB` calls it.
// The endpoint has no authentication: bind it to a loopback or otherwise
// protected address.
func WithControlAddress(addr string) Option { return func(c *config) { c.controlAddr = addr } }

// ControlAddress returns the address of the job's control endpoint, or ""
// without WithControlAddress.
func (h *JobHandle) ControlAddress() string { return h.control }

// startControl serves the control endpoint for h if configured; the
// returned function stops it.
func (e *Environment) startControl(h *JobHandle, log *slog.Logger) (func(), error) {
	if e.cfg.controlAddr == "" {
		return func() {}, nil
	}
	s, err := control.Listen(e.cfg.controlAddr, log)
	if err != nil {
		return nil, err
	}
	s.Register(controlJob{h})
	h.control = s.Addr()
	log.Info("control endpoint listening", "address", h.control)
	return func() {
		if err := s.Close(10 * time.Second); err != nil {
			log.Warn("control endpoint did not stop cleanly", "err", err)
		}
	}, nil
}

// controlJob adapts a JobHandle to the control endpoint.
type controlJob struct{ h *JobHandle }

func (j controlJob) Name() string { return j.h.name }

func (j controlJob) Status() string {
	select {
	case <-j.h.done:
	default:
		return "running"
	}
	j.h.mu.Lock()
	defer j.h.mu.Unlock()
	switch {
	case j.h.stopped && j.h.err == nil:
		return "stopped"
	case j.h.err == nil:
		return "finished"
	case errors.Is(j.h.err, context.Canceled):
		return "cancelled"
	}
	return "failed"
}

func (j controlJob) Savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	if stop {
		return j.h.StopWithSavepoint(ctx, dir)
	}
	return j.h.TriggerSavepoint(ctx, dir)
}
