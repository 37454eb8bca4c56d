package windowing

import (
	"errors"
	"math"
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/window"
)

// SlicedConfig configures a Sliced operator.
type SlicedConfig[K comparable, IN, ACC any] struct {
	// Size, Slide and Offset describe the sliding event-time windows
	// (size > slide); Lateness is the allowed lateness, all in ms.
	Size, Slide, Offset, Lateness int64
	// Backend, Hash and MaxParallelism are as in Config.
	Backend        *istate.Backend[K]
	Hash           func(K) int32
	MaxParallelism int
	// Add adds v to a slice's partial (has is false for a new slice).
	Add func(v IN, acc ACC, has bool) ACC
	// Merge combines two partials: the earlier slice's first.
	Merge func(a, b ACC) ACC
	// Emit emits the combined partial of a window.
	Emit func(key K, w window.TimeWindow, acc ACC) error
	// Late receives late elements; nil counts them (LateDropped).
	Late func(v IN, ts int64)
}

// Sliced is the window operator for Reduce and Aggregate on sliding
// event-time windows with the default trigger: instead of adding each
// element to size/slide windows it keeps one partial per key and slice
// (slices are gcd(size, slide) long) and merges the slices of a window when
// it fires. Its output is that of Operator with the EventTimeTrigger:
// the same firings (on time, at once for late-but-allowed elements), the
// same per-window lateness and late output, the same cleanup.
//
// The partials of a key are one state value, a list ordered by slice
// start (no state entry per slice, so adding is one lookup and firing
// reads a contiguous range). Unlike Operator, which keeps two timers per
// window (its end and its cleanup), Sliced keeps one event-time timer per
// key: at the key's next event, the earlier of the end of the next window
// that holds data and the cleanup time of the key's oldest slice. When it
// fires, the window ending there (if any) is emitted, the slices that no
// later window covers are dropped, and the timer moves to the key's next
// event. Every window end and cleanup time still gets its own firing, in
// timestamp order across keys, so the output equals Operator's.
type Sliced[K comparable, IN, ACC any] struct {
	cfg         SlicedConfig[K, IN, ACC]
	g           int64
	lists       *istate.Value[K, void, *sliceList[ACC]]
	timers      *timer.Service[K, window.TimeWindow]
	key         K
	kg          int
	lateDropped atomic.Int64 // as Operator's
}

// LateDropped returns the number of late elements dropped (no late output
// set). Safe to call from any goroutine.
func (s *Sliced[K, IN, ACC]) LateDropped() int64 { return s.lateDropped.Load() }

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// NewSliced returns a sliced operator.
func NewSliced[K comparable, IN, ACC any](cfg SlicedConfig[K, IN, ACC]) (*Sliced[K, IN, ACC], error) {
	if cfg.Size <= cfg.Slide || cfg.Slide <= 0 {
		return nil, errors.New("sliced windows need size > slide > 0")
	}
	if cfg.Lateness < 0 {
		return nil, errors.New("allowed lateness must not be negative")
	}
	l, err := istate.GetValue[K, void, *sliceList[ACC]](cfg.Backend, sliceListDescriptor[ACC]())
	if err != nil {
		return nil, err
	}
	return &Sliced[K, IN, ACC]{cfg: cfg, g: gcd(cfg.Size, cfg.Slide), lists: l, timers: timer.NewService[K, window.TimeWindow]()}, nil
}

// SetCurrentKey makes k the current key.
func (s *Sliced[K, IN, ACC]) SetCurrentKey(k K) {
	s.key = k
	s.kg = keygroup.Of(s.cfg.Hash(k), s.cfg.MaxParallelism)
	s.cfg.Backend.SetCurrentKey(k, s.kg)
}

// CurrentWatermark returns the operator's watermark.
func (s *Sliced[K, IN, ACC]) CurrentWatermark() int64 { return s.timers.CurrentWatermark() }

// Timers returns the timer service.
func (s *Sliced[K, IN, ACC]) Timers() *timer.Service[K, window.TimeWindow] { return s.timers }

func (s *Sliced[K, IN, ACC]) cleanupTime(maxTS int64) int64 {
	c := maxTS + s.cfg.Lateness
	if c >= maxTS {
		return c
	}
	return math.MaxInt64
}

// ProcessElement adds an element of the current key.
func (s *Sliced[K, IN, ACC]) ProcessElement(v IN, ts int64) error {
	return s.ProcessElementPtr(&v, ts)
}

// ProcessElementPtr is ProcessElement on *v (not kept past the call).
func (s *Sliced[K, IN, ACC]) ProcessElementPtr(v *IN, ts int64) error {
	if ts == math.MinInt64 {
		return errors.New("window: record has no timestamp; event-time windows need timestamps (assign them and watermarks first)")
	}
	size, slide := s.cfg.Size, s.cfg.Slide
	wm := s.timers.CurrentWatermark()
	last := window.StartWithOffset(ts, s.cfg.Offset, slide) // latest window start
	// Window starts are last, last-slide, ... > ts-size; the earliest is
	// last - (n-1)*slide with n = ceil((last-ts+size)/slide) >= 1 (size >
	// slide, so every element has a window).
	n := (last - ts + size + slide - 1) / slide
	first := last - (n-1)*slide
	// Windows with a later start end later, so the late ones (cleanup <=
	// wm) are the earliest: skip them.
	for n > 0 && s.cleanupTime(first+size-1) <= wm {
		first += slide
		n--
	}
	if n == 0 {
		if ts+s.cfg.Lateness <= wm {
			if s.cfg.Late != nil {
				s.cfg.Late(*v, ts)
			} else {
				s.lateDropped.Add(1)
			}
		}
		return nil
	}
	ss := window.StartWithOffset(ts, s.cfg.Offset, s.g)
	l, ok := s.lists.Value()
	if !ok {
		l = &sliceList[ACC]{timerAt: math.MaxInt64, done: math.MinInt64}
		s.lists.Update(l)
	}
	i, found := l.find(ss)
	if found {
		l.parts[i].acc = s.cfg.Add(*v, l.parts[i].acc, true)
		l.changed(i)
	} else {
		var zero ACC
		l.parts = slices.Insert(l.parts, i, slicePart[ACC]{start: ss, acc: s.cfg.Add(*v, zero, false)})
		l.inserted(i)
		// A new slice can bring the key's next event forward.
		s.schedule(l, wm)
	}
	// Windows the watermark has passed (but not their cleanup) fire at
	// once, latest start first, as the EventTimeTrigger does per window.
	if first+size-1 <= wm {
		for start := last; start >= first; start -= slide {
			if w := (window.TimeWindow{Start: start, End: start + size}); w.End-1 <= wm {
				if err := s.fire(w); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fire emits the merge of the slices of w, if any has data.
func (s *Sliced[K, IN, ACC]) fire(w window.TimeWindow) error {
	l, ok := s.lists.Value()
	if !ok {
		return nil
	}
	a, _ := l.find(w.Start)
	b, _ := l.find(w.End)
	if a == b {
		return nil
	}
	acc := l.combine(a, b, s.cfg.Merge)
	return s.cfg.Emit(s.key, w, acc)
}

// AdvanceWatermark fires the due windows and cleans up.
func (s *Sliced[K, IN, ACC]) AdvanceWatermark(wm int64) error {
	return s.timers.AdvanceWatermark(wm, s.onTimer)
}

func (s *Sliced[K, IN, ACC]) onTimer(t timer.Timer[K, window.TimeWindow]) error {
	s.key, s.kg = t.Key, t.KeyGroup
	s.cfg.Backend.SetCurrentKey(t.Key, t.KeyGroup)
	l, ok := s.lists.Value()
	if !ok || t.Timestamp != l.timerAt {
		return nil // superseded by an earlier timer of the key
	}
	l.timerAt = math.MaxInt64
	now := t.Timestamp
	l.done = now
	// The window ending at now+1, if window ends fall there.
	if end := now + 1; window.StartWithOffset(end-s.cfg.Size, s.cfg.Offset, s.cfg.Slide) == end-s.cfg.Size {
		if err := s.fire(window.TimeWindow{Start: end - s.cfg.Size, End: end}); err != nil {
			return err
		}
	}
	// Drop the slices whose last window is cleaned up by now.
	n := 0
	for n < len(l.parts) && s.sliceCleanup(l.parts[n].start) <= now {
		n++
	}
	if n > 0 {
		// Re-slice instead of moving the rest down: the space is reclaimed
		// when append next grows the array.
		clear(l.parts[:n])
		l.parts = l.parts[n:]
		l.dropped(n)
	}
	if len(l.parts) == 0 {
		s.lists.Clear()
		return nil
	}
	s.schedule(l, now)
	return nil
}

// sliceCleanup returns the cleanup time of the last window covering the
// slice starting at start: after it no window reads the slice.
func (s *Sliced[K, IN, ACC]) sliceCleanup(start int64) int64 {
	lastStart := window.StartWithOffset(start, s.cfg.Offset, s.cfg.Slide)
	return s.cleanupTime(lastStart + s.cfg.Size - 1)
}

// nextEvent returns the key's next event after time after: the earliest
// max timestamp > after of a window holding one of l's slices, or the
// cleanup time of l's oldest slice, whichever is earlier (MaxInt64 if l is
// empty).
func (s *Sliced[K, IN, ACC]) nextEvent(l *sliceList[ACC], after int64) int64 {
	if len(l.parts) == 0 {
		return math.MaxInt64
	}
	next := s.sliceCleanup(l.parts[0].start)
	size, slide, off := s.cfg.Size, s.cfg.Slide, s.cfg.Offset
	// The earliest window end e (on the slide grid, e-1 > after) past the
	// oldest slice; if no slice lies in [e-size, e), jump to the first
	// window past the next slice (which then holds it: size > slide).
	lo := max(l.parts[0].start, after+1)
	if lo == math.MaxInt64 {
		return next
	}
	endOff := off + size                                   // window ends lie on this grid
	e := window.StartWithOffset(lo, endOff, slide) + slide // smallest end > lo
	for range 2 {
		i, _ := l.find(e - size)
		if i == len(l.parts) {
			return next
		}
		if l.parts[i].start < e {
			return min(next, e-1)
		}
		e = window.StartWithOffset(l.parts[i].start, endOff, slide) + slide
	}
	return min(next, e-1)
}

// schedule moves the key's timer to its next event after time after, if
// that is earlier than the registered one.
func (s *Sliced[K, IN, ACC]) schedule(l *sliceList[ACC], after int64) {
	next := s.nextEvent(l, max(after, l.done))
	if next >= l.timerAt {
		return
	}
	if l.timerAt != math.MaxInt64 {
		s.timers.DeleteEventTime(s.key, window.TimeWindow{}, l.timerAt)
	}
	l.timerAt = next
	if next != math.MaxInt64 {
		s.timers.RegisterEventTime(s.key, s.kg, window.TimeWindow{}, next)
	}
}

// sliceList holds the partials of one key, ordered by slice start.
//
// Firing a window combines the partials of its slices. Consecutive windows
// of a key share all slices but one per slide, so instead of merging
// size/slide partials per firing the list keeps a two-stacks aggregate
// (as in sliding-window aggregation): a boundary f, the suffix merges
// parts[i..f) for i in [sufFrom, f), and the prefix merges parts[f..j] for
// j < f+pv. A window [a, b) with sufFrom <= a < f <= b is suf[a] merged
// with pre[b-1]; otherwise the suffixes are rebuilt with f = b. A slide
// then costs about two merges. Adding to a slice or inserting one
// invalidates only the merges that cover it; the merges are caches, never
// snapshotted.
type sliceList[ACC any] struct {
	parts []slicePart[ACC]
	// timerAt is the key's registered timer (MaxInt64 if none).
	timerAt int64
	// done is the time of the key's last timer: its window ends up to done
	// have fired. The watermark says the same, except after a restore,
	// when it starts over.
	done int64
	// The two-stacks boundary and the valid merges (see above).
	f, sufFrom, pv int
}

type slicePart[ACC any] struct {
	start int64
	acc   ACC
	suf   ACC // merge of parts[i..f), valid for sufFrom <= i < f
	pre   ACC // merge of parts[f..i], valid for f <= i < f+pv
}

// combine returns the merge of the partials parts[a..b), a < b.
func (l *sliceList[ACC]) combine(a, b int, merge func(x, y ACC) ACC) ACC {
	p := l.parts
	if !(l.sufFrom <= a && a < l.f && l.f <= b) {
		// Rebuild the suffixes of [a, b); the prefix starts empty at b.
		p[b-1].suf = p[b-1].acc
		for i := b - 2; i >= a; i-- {
			p[i].suf = merge(p[i].acc, p[i+1].suf)
		}
		l.f, l.sufFrom, l.pv = b, a, 0
		return p[a].suf
	}
	if b == l.f {
		return p[a].suf
	}
	for j := l.f + l.pv; j < b; j++ {
		if j == l.f {
			p[j].pre = p[j].acc
		} else {
			p[j].pre = merge(p[j-1].pre, p[j].acc)
		}
		l.pv++
	}
	return merge(p[a].suf, p[b-1].pre)
}

// changed invalidates the merges covering parts[i] after it changed.
func (l *sliceList[ACC]) changed(i int) {
	if i >= l.f {
		l.pv = min(l.pv, i-l.f)
	} else if i >= l.sufFrom {
		l.sufFrom = i + 1
	}
}

// inserted adjusts the merges to a part inserted at index i.
func (l *sliceList[ACC]) inserted(i int) {
	switch {
	case i >= l.f:
		l.pv = min(l.pv, i-l.f)
	case i < l.sufFrom:
		l.f++
		l.sufFrom++
	default:
		l.f++
		l.sufFrom = i + 1
	}
}

// dropped adjusts the merges to the first n parts being removed.
func (l *sliceList[ACC]) dropped(n int) {
	if l.f < n {
		l.f, l.sufFrom, l.pv = 0, 0, 0
		return
	}
	l.f -= n
	l.sufFrom = max(l.sufFrom-n, 0)
}

// find returns the index of the first slice starting at or after start,
// and whether it starts exactly there. Lookups usually hit either end:
// new slices go last and firing windows start at the oldest slice.
func (l *sliceList[ACC]) find(start int64) (int, bool) {
	p := l.parts
	n := len(p)
	if n == 0 || p[n-1].start < start {
		return n, false
	}
	if p[0].start >= start {
		return 0, p[0].start == start
	}
	// Then the answer is in [1, n-1]; try the last few first.
	for j := n - 1; j >= max(n-3, 1); j-- {
		if p[j-1].start < start {
			return j, p[j].start == start
		}
	}
	lo, hi := 1, n-4 // p[lo-1].start < start <= p[hi].start
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p[m].start < start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, p[lo].start == start
}
