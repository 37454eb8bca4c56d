package weir

import (
	"sync/atomic"

	"github.com/weirstream/weir/internal/runtime"
)

// The operators' gauges for the REST API, Prometheus and `weir doctor`
// (runtime.StateReporter): the task calls ReportState on its goroutine
// now and then, never per record.

// ReportState implements runtime.StateReporter: keyed-state entries
// (heap backend), registered timers, and whether the function uses TTL
// and timers.
func (b *keyedBase[K]) ReportState(g *runtime.StateGauges) {
	if b.disk == nil {
		entries, noTTL := b.backend.Stats()
		g.StateEntries.Store(int64(entries))
		g.StatesWithoutTTL.Store(int64(noTTL))
	}
	g.Timers.Store(int64(b.timers.EventTimers().Len() + b.timers.ProcessingTimers().Len()))
	g.TimersRegistered.Store(b.registered)
}

// ReportState implements runtime.StateReporter: window contents, window
// and trigger state entries, trigger and cleanup timers.
func (o *windowOp[K, T, OUT, W]) ReportState(g *runtime.StateGauges) {
	if o.rc.b != nil {
		entries, _ := o.rc.b.Stats()
		g.StateEntries.Store(int64(entries))
	}
	n := int64(o.eng.TimerCount())
	g.Timers.Store(n)
	g.TimersRegistered.Store(max(g.TimersRegistered.Load(), n))
}

// ijSampleEvery is the stride of the interval join's probe sample.
const ijSampleEvery = 64

// ijSample counts, on one probe in ijSampleEvery, whether the record found
// a partner within the bounds and whether it would have with the
// mirrored bounds Between(-upper, -lower), against what the other side's
// buffer holds: a binary search each, on the task goroutine; ReportState
// publishes the counts.
type ijSample struct {
	skip                       int
	probes, matched, mirrored  int64
	pProbes, pMatched, pMirror atomic.Int64
}

// sampleProbe samples the probe of a record at ts whose partners lie in
// [ts+lo, ts+hi] of the other side's buffer b.
func sampleProbe[Y any](s *ijSample, ts, lo, hi int64, b *ijBuf[Y]) {
	s.skip = ijSampleEvery - 1
	s.probes++
	if b.empty() {
		return
	}
	if j := b.search(ts + lo); j < len(b.es) && b.es[j].ts <= ts+hi {
		s.matched++
	}
	if j := b.search(ts - hi); j < len(b.es) && b.es[j].ts <= ts-lo {
		s.mirrored++
	}
}

// ReportState implements runtime.StateReporter: buffered records (both
// sides) as state entries, pending cleanups as timers; it publishes the
// probe sample.
func (o *intervalJoinOp[K, L, R, OUT]) ReportState(g *runtime.StateGauges) {
	g.StateEntries.Store(o.buffered)
	t := int64(o.qL.n + o.qR.n)
	g.Timers.Store(t)
	g.TimersRegistered.Store(int64(o.seq))
	o.sample.pProbes.Store(o.sample.probes)
	o.sample.pMatched.Store(o.sample.matched)
	o.sample.pMirror.Store(o.sample.mirrored)
}

// JoinSample implements runtime.JoinSampler.
func (o *intervalJoinOp[K, L, R, OUT]) JoinSample() runtime.JoinSample {
	return runtime.JoinSample{Lower: o.lower, Upper: o.upper, Probes: o.sample.pProbes.Load(), Matched: o.sample.pMatched.Load(), MirroredMatched: o.sample.pMirror.Load()}
}
