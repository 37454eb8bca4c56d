package weir

import (
	"context"
	"errors"
)

// record captures a subtask's inputs (weir record); see capture.go.
func (h *JobHandle) record(ctx context.Context, vertex string, subtask int, limit int) ([]byte, error) {
	return nil, errors.New("weir: input capture is not available yet")
}
