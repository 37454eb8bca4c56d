package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// The operators' gauges for the REST API, Prometheus and `weir doctor`
// (engine.StateReporter): the task calls ReportState on its goroutine
// now and then, never per record.

// ReportState implements engine.StateReporter: keyed-state entries
// (heap backend), registered timers, and whether the function uses TTL
// and timers.
func (b *keyedBase[K]) ReportState(g *engine.StateGauges) {
	if b.disk == nil {
		entries, noTTL := b.backend.Stats()
		g.StateEntries.Store(int64(entries))
		g.StatesWithoutTTL.Store(int64(noTTL))
	}
	g.Timers.Store(int64(b.timers.EventTimers().Len() + b.timers.ProcessingTimers().Len()))
	g.TimersRegistered.Store(b.registered)
}

// ReportState implements engine.StateReporter: window contents, window
// and trigger state entries, trigger and cleanup timers.
func (o *windowOp[K, T, OUT, W]) ReportState(g *engine.StateGauges) {
	if o.rc.b != nil {
		entries, _ := o.rc.b.Stats()
		g.StateEntries.Store(int64(entries))
	}
	n := int64(o.eng.TimerCount())
	g.Timers.Store(n)
	g.TimersRegistered.Store(max(g.TimersRegistered.Load(), n))
}
