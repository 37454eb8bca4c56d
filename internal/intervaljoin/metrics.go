package intervaljoin

import (
	"sync/atomic"

	"github.com/weirstream/weir/internal/engine"
)

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

// ReportState implements engine.StateReporter: buffered records (both
// sides) as state entries, pending cleanups as timers; it publishes the
// probe sample.
func (o *Op[K, L, R]) ReportState(g *engine.StateGauges) {
	g.StateEntries.Store(o.buffered)
	t := int64(o.qL.n + o.qR.n)
	g.Timers.Store(t)
	g.TimersRegistered.Store(int64(o.seq))
	o.sample.pProbes.Store(o.sample.probes)
	o.sample.pMatched.Store(o.sample.matched)
	o.sample.pMirror.Store(o.sample.mirrored)
}

// JoinSample implements engine.JoinSampler.
func (o *Op[K, L, R]) JoinSample() engine.JoinSample {
	return engine.JoinSample{Lower: o.lower, Upper: o.upper, Probes: o.sample.pProbes.Load(), Matched: o.sample.pMatched.Load(), MirroredMatched: o.sample.pMirror.Load()}
}
