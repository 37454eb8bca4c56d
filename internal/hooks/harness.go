package hooks

import "github.com/weirstream/weir/internal/engine"

// HarnessEventKind tells what a harness event is (weirtest.EventKind has the
// same values).
type HarnessEventKind int

// The kinds of harness events.
const (
	HarnessRecord HarnessEventKind = iota
	HarnessSide
	HarnessWatermark
	HarnessStatus
)

// HarnessEvent is one thing a captured output received.
type HarnessEvent struct {
	Kind  HarnessEventKind
	Tag   string // side output id
	Value any
	TS    int64 // record timestamp or watermark
	Idle  bool  // status
}

// HarnessClock is implemented by the clock package weirtest gives to
// weir.WithClock: NewEnvironment calls BindHarness with the environment's
// side of the harness, once.
type HarnessClock interface {
	BindHarness(env HarnessEnv)
}

// HarnessEnv is what the root package gives the test harness
// (weirtest): the building blocks of a job that the harness drives
// synchronously.
type HarnessEnv interface {
	// ExternalInput sets *ds, a *weir.DataStream[T], to a new input of the
	// job fed from outside the plan, with channels channels; the node is
	// named name.
	ExternalInput(ds any, name string, channels int) error
	// Capture connects ds, a weir.DataStream[T], to a sink that reports
	// its records (HarnessRecord), watermarks and statuses to rec.
	Capture(ds any, rec func(HarnessEvent)) error
	// CaptureSide connects the side output tag (a weir.OutputTag[T]) of
	// the operator that produced ds (a weir.DataStream[T]) to a sink that
	// reports its records to rec as HarnessSide events.
	CaptureSide(ds any, tag any, rec func(HarnessEvent)) error
	// Plan plans the job built so far.
	Plan() (*engine.Plan, error)
}

// CaptureOp reports what reaches a harness output to Rec: the records
// (HarnessRecord, or HarnessSide when Tag names a side output), and, for
// the main output only, watermarks and statuses.
type CaptureOp[T any] struct {
	Rec func(HarnessEvent)
	Tag string
}

// ProcessBatch implements engine.Input.
func (c *CaptureOp[T]) ProcessBatch(recs []engine.Record[T]) error {
	kind := HarnessRecord
	if c.Tag != "" {
		kind = HarnessSide
	}
	for _, r := range recs {
		c.Rec(HarnessEvent{Kind: kind, Tag: c.Tag, Value: r.Value, TS: r.TS})
	}
	return nil
}

// ProcessWatermark implements engine.Input.
func (c *CaptureOp[T]) ProcessWatermark(wm int64) error {
	if c.Tag == "" {
		c.Rec(HarnessEvent{Kind: HarnessWatermark, TS: wm})
	}
	return nil
}

// ProcessStatus implements engine.Input.
func (c *CaptureOp[T]) ProcessStatus(idle bool) error {
	if c.Tag == "" {
		c.Rec(HarnessEvent{Kind: HarnessStatus, Idle: idle})
	}
	return nil
}

// EndInput implements engine.Input.
func (c *CaptureOp[T]) EndInput() error { return nil }
