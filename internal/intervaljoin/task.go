package intervaljoin

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
)

// Task is the interval join of one subtask as the runtime drives it: the
// engine, its output, and hooks to the API layer that holds the user's
// function.
type Task[K comparable, L, R, OUT any] struct {
	*Op[K, L, R]
	Out      *engine.Output[OUT]
	Restored *engine.Restored
	// Settle turns what recover returned and a returned error into the
	// operator's error.
	Settle func(r any, err *error)
	// OpenFn opens the user's function, CloseFn closes it.
	OpenFn, CloseFn func() error
	ended           [2]bool
}

// Open restores the buffers and pending cleanups from a checkpoint and
// opens the user's function.
func (t *Task[K, L, R, OUT]) Open() (err error) {
	defer func() { t.Settle(recover(), &err) }()
	if t.Restored != nil {
		if err := t.Restore(t.Restored.KeyGroups); err != nil {
			return err
		}
	}
	return t.OpenFn()
}

// Close closes the user's function.
func (t *Task[K, L, R, OUT]) Close() error { return t.CloseFn() }

// SnapshotState snapshots both sides' buffers and the pending cleanups.
func (t *Task[K, L, R, OUT]) SnapshotState(int64) (engine.OperatorSnapshot, error) {
	kgs, err := t.Snapshot()
	return engine.OperatorSnapshot{KeyGroups: kgs}, err
}

// SnapshotStateAsync takes the synchronous part of the snapshot
// (Op.SnapshotAsync).
func (t *Task[K, L, R, OUT]) SnapshotStateAsync(int64) (engine.AsyncSnapshot, error) {
	return t.SnapshotAsync()
}

// ProcessBatch1 processes a batch of left records.
func (t *Task[K, L, R, OUT]) ProcessBatch1(recs []engine.Record[L]) (err error) {
	defer func() { t.Settle(recover(), &err) }()
	if err := t.Op.ProcessBatch1(recs); err != nil {
		return err
	}
	return t.Out.Err()
}

// ProcessBatch2 processes a batch of right records.
func (t *Task[K, L, R, OUT]) ProcessBatch2(recs []engine.Record[R]) (err error) {
	defer func() { t.Settle(recover(), &err) }()
	if err := t.Op.ProcessBatch2(recs); err != nil {
		return err
	}
	return t.Out.Err()
}

// ProcessWatermark runs the cleanups the watermark passes and forwards it.
func (t *Task[K, L, R, OUT]) ProcessWatermark(wm int64) (err error) {
	defer func() { t.Settle(recover(), &err) }()
	if err := t.Advance(wm); err != nil {
		return err
	}
	return t.Out.EmitWatermark(wm)
}

// ProcessStatus forwards the idleness status.
func (t *Task[K, L, R, OUT]) ProcessStatus(idle bool) error { return t.Out.EmitStatus(idle) }

// EndInput1 ends the left input.
func (t *Task[K, L, R, OUT]) EndInput1() error { return t.end(0) }

// EndInput2 ends the right input.
func (t *Task[K, L, R, OUT]) EndInput2() error { return t.end(1) }

// end ends the output once both inputs have ended.
func (t *Task[K, L, R, OUT]) end(i int) error {
	t.ended[i] = true
	if t.ended[0] && t.ended[1] {
		return t.Out.End()
	}
	return nil
}

// NewTask returns the task of one subtask: cfg without the subtask's
// parts, which bc gives (key groups, late outputs lateL and lateR, the
// restored state); emit is what the join produces.
func NewTask[K comparable, L, R, OUT any](bc *engine.BuildContext, out *engine.Output[OUT], cfg Config[K, L, R],
	lateL, lateR string, settle func(r any, err *error), openFn, closeFn func() error) *Task[K, L, R, OUT] {
	cfg.MaxParallelism = bc.MaxParallelism
	cfg.KeyGroups.Start, cfg.KeyGroups.End = bc.KeyGroups.Start, bc.KeyGroups.End
	if lateL != "" {
		cfg.LateL = bc.Side(lateL)
	}
	if lateR != "" {
		cfg.LateR = bc.Side(lateR)
	}
	return &Task[K, L, R, OUT]{Op: New(cfg), Out: out, Restored: bc.Restored, Settle: settle, OpenFn: openFn, CloseFn: closeFn}
}

// EmitSide emits v at ts to the side output port of tag id (nil: nobody
// reads it), keeping in *sideErr the first failure.
func EmitSide(port engine.OutputPort, id string, v any, ts int64, sideErr *error) {
	if port != nil {
		if err := port.EmitAny(v, ts); err != nil && *sideErr == nil {
			*sideErr = fmt.Errorf("side output %q: %w", id, err)
		}
	}
}
