package engine

import (
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/watermark"
)

// splitStats is one split's metrics: records counted per batch on the
// task goroutine, watermark and idleness published by ReportState.
type splitStats struct {
	id        string
	records   atomic.Int64
	watermark atomic.Int64
	idle      atomic.Bool
	ended     atomic.Bool
	paused    atomic.Bool
}

// splitStatsList holds a source subtask's splitStats by split index; it
// grows when the task goroutine meets a new split (at) and is read from
// any goroutine (list).
type splitStatsList struct {
	mu sync.Mutex
	s  []*splitStats
}

func (l *splitStatsList) at(i int) *splitStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.s) <= i {
		st := &splitStats{}
		st.watermark.Store(watermark.Min)
		l.s = append(l.s, st)
	}
	return l.s[i]
}

// name sets split i's id.
func (l *splitStatsList) name(i int, id string) *splitStats {
	st := l.at(i)
	l.mu.Lock()
	st.id = id
	l.mu.Unlock()
	return st
}

// metrics returns the named splits' metrics.
func (l *splitStatsList) metrics() []SplitMetrics {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []SplitMetrics
	for _, st := range l.s {
		if st.id == "" {
			continue // not published yet
		}
		out = append(out, SplitMetrics{ID: st.id, Records: st.records.Load(), Watermark: st.watermark.Load(), Idle: st.idle.Load(), Ended: st.ended.Load(), Paused: st.paused.Load()})
	}
	return out
}

// ReportState implements StateReporter: it publishes every split's id,
// watermark (the split generator's last one, watermark.Min before any) and
// idleness.
func (s *SourceOperator[T]) ReportState(*StateGauges) {
	for i, sp := range s.splits {
		st := s.stats.name(i, sp.SplitID())
		st.ended.Store(i < len(s.ended) && s.ended[i])
		if s.gens == nil || st.ended.Load() {
			continue // an ended split's last watermark stays as reported
		}
		wm, idle := s.mux.SplitState(sp.SplitID())
		st.watermark.Store(wm)
		st.idle.Store(idle)
	}
}

// SplitMetrics implements SplitReporter.
func (s *SourceOperator[T]) SplitMetrics() []SplitMetrics { return s.stats.metrics() }
