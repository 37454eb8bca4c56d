package weir

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/capture"
	"github.com/weirstream/weir/internal/monitor"
)

// record captures the inputs of one subtask of a vertex (by id, name or
// head UID) until ctx ends or limit input lines were taken, and returns
// them as a scenario file (internal/capture; `weir record`).
func (h *JobHandle) record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	if h.cluster != nil {
		return nil, errors.New("weir record: input capture does not run on a cluster member yet")
	}
	snap := h.snapshot()
	v := snap.Vertex(vertex)
	if v == nil {
		return nil, fmt.Errorf("no vertex %q in job %s", vertex, h.name)
	}
	h.mu.Lock()
	plan := h.plan
	h.mu.Unlock()
	for _, t := range plan.Tasks {
		if monitor.VertexID(t.Vertex) != v.ID || t.Subtask != subtask {
			continue
		}
		start := time.Now()
		rec := capture.New(limit,
			fmt.Sprintf("recorded by weir record from job %q (%s), vertex %q, subtask %d, at %s", h.name, snap.Job.ID, v.Name, subtask, start.UTC().Format(time.RFC3339)),
			fmt.Sprintf("the inputs of %q as its watermark valves and combiner saw them; replay with: weir scenario --check FILE", v.Operators[0].Name))
		if err := t.StartCapture(ctx, rec); err != nil {
			return nil, fmt.Errorf("vertex %q, subtask %d: %w", v.Name, subtask, err)
		}
		select {
		case <-ctx.Done():
		case <-rec.Full():
		case <-h.done:
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := t.StopCapture(stopCtx)
		rec.Close()
		if err != nil {
			return nil, fmt.Errorf("vertex %q, subtask %d: stopping the capture: %w", v.Name, subtask, err)
		}
		return rec.Scenario(), nil
	}
	return nil, fmt.Errorf("vertex %q has no subtask %d (parallelism %d)", v.Name, subtask, v.Parallelism)
}
