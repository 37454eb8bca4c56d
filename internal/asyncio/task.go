package asyncio

import (
	"fmt"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/state"
)

// Task wraps the engine for the runtime: input, lifecycle and the
// snapshot of the requests in flight.
type Task[IN, OUT any] struct {
	core     *Operator[IN, OUT]
	catch    func(err *error)
	open     func() error
	close    func() error
	restored *engine.Restored
	subtask  int
	par      int
	codec    state.Codec[IN]
}

// NewTask returns the task of the operator bc builds, emitting to out.
// cfg.Catch is deferred by every method that calls user code; open opens
// the user's function, close closes it.
func NewTask[IN, OUT any](cfg Config[IN, OUT], bc *engine.BuildContext, out *engine.Output[OUT], codec state.Codec[IN],
	open, close func() error) (*Task[IN, OUT], error) {
	core, err := New(cfg, Output[OUT](out), bc.Time, bc.Mailbox)
	if err != nil {
		return nil, err
	}
	bc.Mailbox.Watch(core)
	return &Task[IN, OUT]{core: core, catch: cfg.Catch, open: open, close: close, restored: bc.Restored,
		subtask: bc.Subtask, par: bc.Parallelism, codec: codec}, nil
}

// Open opens the user's function, then the engine with the requests
// restored from a checkpoint.
func (o *Task[IN, OUT]) Open() (err error) {
	defer o.catch(&err)
	if err := o.open(); err != nil {
		return err
	}
	var els []Element[IN]
	if o.restored != nil {
		if els, err = Restore(o.restored.All, o.subtask, o.par, o.codec); err != nil {
			return fmt.Errorf("restoring the requests in flight: %w", err)
		}
	}
	return o.core.Open(els)
}

// Close closes the engine, then the user's function.
func (o *Task[IN, OUT]) Close() error {
	o.core.Close()
	return o.close()
}

// ProcessBatch implements engine.Input.
func (o *Task[IN, OUT]) ProcessBatch(recs []engine.Record[IN]) (err error) {
	defer o.catch(&err)
	for i := range recs {
		if err := o.core.Add(Element[IN]{Kind: KindRecord, Value: recs[i].Value, TS: recs[i].TS}); err != nil {
			return err
		}
	}
	return nil
}

// ProcessWatermark implements engine.Input.
func (o *Task[IN, OUT]) ProcessWatermark(wm int64) (err error) {
	defer o.catch(&err)
	return o.core.Add(Element[IN]{Kind: KindWatermark, TS: wm})
}

// ProcessStatus implements engine.Input.
func (o *Task[IN, OUT]) ProcessStatus(idle bool) (err error) {
	defer o.catch(&err)
	return o.core.Add(Element[IN]{Kind: KindStatus, Idle: idle})
}

// EndInput implements engine.Input: it waits for every answer.
func (o *Task[IN, OUT]) EndInput() (err error) {
	defer o.catch(&err)
	return o.core.EndInput()
}

// SnapshotState stores the input elements of the requests in flight (and
// of answered ones not emitted yet) and the watermarks between them.
func (o *Task[IN, OUT]) SnapshotState(int64) (engine.OperatorSnapshot, error) {
	data, err := Encode(o.core.Snapshot(), o.codec)
	return engine.OperatorSnapshot{State: data}, err
}
