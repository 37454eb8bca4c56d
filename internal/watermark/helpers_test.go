package watermark

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Shorthands for expected events.
func wmEv(w int64) Event { return WatermarkEvent(w) }

var (
	idleEv   = StatusEvent(true)
	activeEv = StatusEvent(false)
)

func sameEvents(a, b []Event) bool { return slices.Equal(a, b) }

// outModel is the operator output of §5.3 (RecordWriterOutput): a watermark is
// dropped while the output has announced IDLE, and a status is sent only when
// it changes.
type outModel struct {
	idle bool
	got  []Event
}

func (o *outModel) watermark(w int64) {
	if o.idle {
		return
	}
	o.got = append(o.got, WatermarkEvent(w))
}

func (o *outModel) status(idle bool) {
	if idle == o.idle {
		return
	}
	o.idle = idle
	o.got = append(o.got, StatusEvent(idle))
}

// operator is the `watermarks` identity operator of the conformance format:
// one Valve per input feeding a Combiner, driven exactly as Flink's
// AbstractStreamOperator drives IndexedCombinedWatermarkStatus, with the
// output model above. fired records every processWatermark call (the points
// at which timers would fire), including those whose watermark the output
// drops.
type operator struct {
	valves  []*Valve
	comb    *Combiner
	out     outModel
	fired   []int64
	scratch []Event
}

func newOperator(inputs, channels int) *operator {
	op := &operator{comb: NewCombiner(inputs)}
	for range inputs {
		op.valves = append(op.valves, NewValve(channels))
	}
	return op
}

type stepKind int

const (
	kWM stepKind = iota
	kIdle
	kActive
)

// step is one input line of a scenario: a watermark or status on channel ch
// of input in (both 0-based), with the expected outputs.
type step struct {
	line   string
	in, ch int
	kind   stepKind
	wm     int64
	want   []Event
}

func (op *operator) processWatermark(w int64) {
	op.fired = append(op.fired, w)
	op.out.watermark(w)
}

// feed runs one step and returns what the operator emitted for it.
func (op *operator) feed(s step) []Event {
	op.out.got = op.out.got[:0]
	v := op.valves[s.in]
	op.scratch = op.scratch[:0]
	switch s.kind {
	case kWM:
		op.scratch = v.Watermark(s.ch, s.wm, op.scratch)
	case kIdle:
		op.scratch = v.Status(s.ch, true, op.scratch)
	case kActive:
		op.scratch = v.Status(s.ch, false, op.scratch)
	}
	for _, e := range op.scratch {
		if e.IsStatus {
			wasIdle := op.comb.Idle()
			if op.comb.Status(s.in, e.Idle) {
				op.processWatermark(op.comb.Combined())
			}
			if wasIdle != op.comb.Idle() {
				op.out.status(op.comb.Idle())
			}
		} else if op.comb.Watermark(s.in, e.Watermark) {
			op.processWatermark(op.comb.Combined())
		}
	}
	return slices.Clone(op.out.got)
}
