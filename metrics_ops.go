package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// The operators' gauges for the REST API, Prometheus and `weir doctor`
// (engine.StateReporter): the task calls ReportState on its goroutine
// now and then, never per record.

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
