package weir

import (
	"context"
	"errors"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/job"
)

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
