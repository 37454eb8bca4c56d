package watermark

// Emitter is an Output with the rules of Flink's WatermarkEmitter
// (TimestampsAndWatermarksOperator) and WatermarkToDataOutput (FLIP-27
// sources). It hands what it emits to a callback:
//
//   - a watermark not above the last emitted one is dropped, so watermarks
//     never go backwards or repeat (Min is never emitted);
//   - an advancing watermark while idle is preceded by status ACTIVE;
//   - MarkIdle emits status IDLE once; MarkActive emits status ACTIVE if idle.
//
// A new event alone does not turn the output active again; only the next
// advancing watermark or MarkActive does.
type Emitter struct {
	emit func(Event)
	last int64
	idle bool
}

// NewEmitter returns an active Emitter that has emitted nothing (Last is Min)
// and passes every event it emits to emit.
func NewEmitter(emit func(Event)) *Emitter {
	if emit == nil {
		panic("watermark: NewEmitter needs a callback")
	}
	return &Emitter{emit: emit, last: Min}
}

// EmitWatermark emits wm if it is above the last emitted watermark, preceded
// by status ACTIVE if the output is idle; otherwise it does nothing.
func (e *Emitter) EmitWatermark(wm int64) {
	if wm <= e.last {
		return
	}
	e.last = wm
	if e.idle {
		e.idle = false
		e.emit(Event{IsStatus: true})
	}
	e.emit(Event{Watermark: wm})
}

// MarkIdle emits status IDLE unless the output is already idle.
func (e *Emitter) MarkIdle() {
	if e.idle {
		return
	}
	e.idle = true
	e.emit(Event{IsStatus: true, Idle: true})
}

// MarkActive emits status ACTIVE if the output is idle.
func (e *Emitter) MarkActive() {
	if !e.idle {
		return
	}
	e.idle = false
	e.emit(Event{IsStatus: true})
}

// Last returns the last emitted watermark (Min before the first).
func (e *Emitter) Last() int64 { return e.last }

// Idle reports whether the last emitted status is IDLE.
func (e *Emitter) Idle() bool { return e.idle }
