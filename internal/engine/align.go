package engine

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/connector"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/watermark"
)

// Alignment is watermark alignment at a source, as Flink's
// WatermarkStrategy.withWatermarkAlignment (FLIP-182 for sources, FLIP-217
// for splits): the sources of one group pause reading whatever runs more
// than MaxDrift ahead of the group's lowest watermark.
type Alignment struct {
	// Group names the alignment group; every source with the same group in
	// a job is aligned with the others.
	Group string
	// MaxDrift is how far (ms) a watermark may run ahead of the group's
	// lowest one.
	MaxDrift int64
	// UpdateInterval is how often (ms of processing time) each source
	// subtask reports its watermark and learns the group's limit.
	UpdateInterval int64
}

// SplitPauser is connector.SplitPauser: a SubtaskReader of a dynamic
// source that can stop fetching some of its splits.
type SplitPauser = connector.SplitPauser

// splitPauser returns r's SplitPauser, nil if it has none: r itself, or
// what an adapter around a reader reports (the root package's
// SubtaskReader adapter, whose optional interfaces vary per reader).
func splitPauser(r any) SplitPauser {
	if a, ok := r.(interface{ SplitPauser() SplitPauser }); ok {
		return a.SplitPauser()
	}
	p, _ := r.(SplitPauser)
	return p
}

// AlignmentGroups holds the alignment groups of one run of a job: the last
// watermark each member (a source subtask) reported. It is Flink's
// per-group WatermarkAggregator in the coordinator store, in memory since
// a Weir job runs in one process. Members report from their task
// goroutines; the groups are safe for concurrent use.
type AlignmentGroups struct {
	mu     sync.Mutex
	groups map[string]map[string]int64
}

// NewAlignmentGroups returns an empty set of groups.
func NewAlignmentGroups() *AlignmentGroups {
	return &AlignmentGroups{groups: map[string]map[string]int64{}}
}

// Report records member's watermark in group (when report is false the
// member has nothing to report yet: Flink sends no report before the
// first watermark) and returns the group's aggregated watermark: the
// lowest reported one, watermark.Min before any report. A member that is
// idle or finished reports MaxWatermark, so it holds nobody back.
func (a *AlignmentGroups) Report(group, member string, wm int64, report bool) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.groups[group]
	if g == nil {
		g = map[string]int64{}
		a.groups[group] = g
	}
	if report {
		g[member] = wm
	}
	if len(g) == 0 {
		return watermark.Min
	}
	low := int64(math.MaxInt64)
	for _, w := range g {
		low = min(low, w)
	}
	return low
}

// maxAllowed is the watermark a source of the group may reach:
// the group's lowest plus the drift, saturating (an idle group allows
// everything).
func maxAllowed(groupLow, drift int64) int64 {
	if groupLow > math.MaxInt64-drift {
		return math.MaxInt64
	}
	return groupLow + drift
}

// alignDecide is the alignment decision of one source subtask
// (SourceOperator.checkWatermarkAlignment and checkSplitWatermarkAlignment
// in Flink): given the highest watermark the group allows, the subtask's
// emitted watermark and each split's own, which splits must not be read.
// The subtask waits (reads nothing) while its emitted watermark is above
// the limit; a subtask with several splits also pauses each split whose
// own watermark is above it. Ended splits are never paused.
func alignDecide(maxDesired, latest int64, splitWMs []int64, ended []bool, dst []bool) []bool {
	dst = dst[:0]
	wait := maxDesired < latest
	several := len(splitWMs) > 1
	for i, wm := range splitWMs {
		dst = append(dst, !ended[i] && (wait || several && wm > maxDesired))
	}
	return dst
}

// splitGate lets a split's reader goroutine wait while watermark
// alignment pauses the split.
type splitGate struct {
	mu     sync.Mutex
	paused bool
	resume chan struct{} // closed when the split resumes
}

func (g *splitGate) set(paused bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if paused == g.paused {
		return
	}
	g.paused = paused
	if paused {
		g.resume = make(chan struct{})
	} else {
		close(g.resume)
	}
}

// wait blocks while the split is paused; it reports false when ctx ended.
func (g *splitGate) wait(ctx context.Context) bool {
	for {
		g.mu.Lock()
		paused, ch := g.paused, g.resume
		g.mu.Unlock()
		if !paused {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// alignState is the watermark alignment of one source subtask.
type alignState struct {
	params     Alignment
	groups     *AlignmentGroups
	member     string
	maxDesired int64 // Max until the first announcement, as in Flink
	paused     []bool
	decide     []bool
	wms        []int64
	gates      []*splitGate // static sources: per split
	// For gauges, read from any goroutine.
	drift   atomic.Int64
	nPaused atomic.Int64
	pausedM sync.Mutex
	pausedS []string
}

// newAlignState returns the alignment of a source subtask, nil when the
// source is not aligned.
func newAlignState(a *Alignment, groups *AlignmentGroups, member string) (*alignState, error) {
	if a == nil {
		return nil, nil
	}
	if groups == nil {
		return nil, fmt.Errorf("watermark alignment needs the job's alignment groups")
	}
	if a.Group == "" || a.MaxDrift < 0 || a.UpdateInterval <= 0 {
		return nil, fmt.Errorf("watermark alignment: invalid parameters %+v", *a)
	}
	return &alignState{params: *a, groups: groups, member: member, maxDesired: MaxWatermark}, nil
}

// addSplit makes room for a new split.
func (a *alignState) addSplit() {
	a.paused = append(a.paused, false)
	a.gates = append(a.gates, &splitGate{})
}

// alignTick is the periodic alignment step of a source subtask: report
// the subtask's watermark to its group (MaxWatermark when idle or done,
// nothing before its first watermark), take the group's new limit and
// apply it.
func (s *SourceOperator[T]) alignTick(at int64) error {
	a := s.align
	last := s.emitter.Last()
	wm, report := last, last != watermark.Min
	if s.done || s.emitter.Idle() {
		wm, report = MaxWatermark, true
	}
	low := a.groups.Report(a.params.Group, a.member, wm, report)
	a.maxDesired = maxAllowed(low, a.params.MaxDrift)
	if report && !s.done && !s.emitter.Idle() && low != watermark.Min && low != MaxWatermark {
		a.drift.Store(last - low)
	} else {
		a.drift.Store(0)
	}
	if err := s.checkAlignment(); err != nil {
		return err
	}
	if !s.done {
		s.pts.Schedule(at+a.params.UpdateInterval, s.alignTick)
	}
	return nil
}

// checkAlignment pauses and resumes splits after a split's watermark, the
// subtask's or the group's limit changed.
func (s *SourceOperator[T]) checkAlignment() error {
	a := s.align
	if a == nil || s.done {
		return nil
	}
	a.wms = a.wms[:0]
	for _, sp := range s.splits {
		wm := int64(watermark.Min)
		if s.gens != nil {
			wm, _ = s.mux.SplitState(sp.SplitID())
		}
		a.wms = append(a.wms, wm)
	}
	a.decide = alignDecide(a.maxDesired, s.emitter.Last(), a.wms, s.ended, a.decide)
	var pause, resume []string
	for i, p := range a.decide {
		if p == a.paused[i] {
			continue
		}
		a.paused[i] = p
		s.stats.at(i).paused.Store(p) // at once: metrics show pauses without waiting for a refresh
		if p {
			pause = append(pause, s.splits[i].SplitID())
			s.splitClocks[i].Pause()
		} else {
			resume = append(resume, s.splits[i].SplitID())
			s.splitClocks[i].Resume()
		}
		if s.dyn == nil {
			a.gates[i].set(p)
		}
	}
	if len(pause) == 0 && len(resume) == 0 {
		return nil
	}
	a.publishPaused(s.splits)
	if s.dyn != nil {
		return s.pauseDynamic(pause, resume)
	}
	return nil
}

// pauseDynamic hands pauses to a dynamic source's reader (openDynamic
// checked that it can pause).
func (s *SourceOperator[T]) pauseDynamic(pause, resume []string) error {
	p := splitPauser(s.dyn.reader)
	if err := p.PauseOrResumeSplits(pause, resume); err != nil {
		return fmt.Errorf("source %q: pausing splits for watermark alignment: %w", s.name, err)
	}
	return nil
}

func (a *alignState) publishPaused(splits []Split) {
	var ids []string
	for i, p := range a.paused {
		if p {
			ids = append(ids, splits[i].SplitID())
		}
	}
	sort.Strings(ids)
	a.nPaused.Store(int64(len(ids)))
	a.pausedM.Lock()
	a.pausedS = ids
	a.pausedM.Unlock()
}

// gauges are the alignment gauges of a source subtask: the drift of its
// watermark above the group's lowest (ms; 0 when idle or before the first
// report), the number of paused splits and each paused split.
func (a *alignState) gauges() []Gauge {
	group := map[string]string{"group": a.params.Group}
	out := []Gauge{
		{Name: "watermark_alignment_drift_ms", Labels: group, Value: float64(a.drift.Load())},
		{Name: "watermark_alignment_paused_splits", Labels: group, Value: float64(a.nPaused.Load())},
	}
	a.pausedM.Lock()
	defer a.pausedM.Unlock()
	for _, id := range a.pausedS {
		out = append(out, Gauge{Name: "watermark_alignment_split_paused", Labels: map[string]string{"group": a.params.Group, "split": id}, Value: 1})
	}
	return out
}

// alignMember names a source subtask in its group.
func alignMember(bc *BuildContext) string {
	return bc.UID + "/" + strconv.Itoa(bc.Subtask)
}

var _ clock.Relative = (*clock.Pausable)(nil)
