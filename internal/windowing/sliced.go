package windowing

import (
	"errors"
	"math"
	"slices"

	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/state"
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
	// Late receives late elements; nil counts them in LateDropped.
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
// reads a contiguous range). Timers are per window, as in Operator: when a
// key's slice gets its first element, the timers of every window covering
// the slice that is not late are registered (the window's max timestamp, if
// the watermark has not passed it, and its cleanup time). A slice is
// dropped when the last window covering it is cleaned up.
type Sliced[K comparable, IN, ACC any] struct {
	cfg         SlicedConfig[K, IN, ACC]
	g           int64
	lists       *istate.Value[K, void, *sliceList[ACC]]
	timers      *timer.Service[K, window.TimeWindow]
	key         K
	kg          int
	LateDropped int64
}

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
	l, err := istate.GetValue[K, void, *sliceList[ACC]](cfg.Backend, state.Value[*sliceList[ACC]]("window-slices"))
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
				s.cfg.Late(v, ts)
			} else {
				s.LateDropped++
			}
		}
		return nil
	}
	ss := window.StartWithOffset(ts, s.cfg.Offset, s.g)
	l, ok := s.lists.Value()
	if !ok {
		l = &sliceList[ACC]{}
		s.lists.Update(l)
	}
	i, found := l.find(ss)
	if found {
		l.parts[i].acc = s.cfg.Add(v, l.parts[i].acc, true)
	} else {
		var zero ACC
		l.parts = slices.Insert(l.parts, i, slicePart[ACC]{start: ss, acc: s.cfg.Add(v, zero, false)})
		// Windows that also cover the previous slice got their timers when
		// it was created, if it exists; then only a window starting in
		// this slice is new.
		from := first
		if i > 0 && l.parts[i-1].start == ss-s.g {
			from = last // the only window that can start in [ss, ts]
			if last < ss {
				from = last + slide // none does
			}
		}
		for start := from; start <= last; start += slide {
			w := window.TimeWindow{Start: start, End: start + size}
			m := w.End - 1
			if m > wm {
				s.timers.RegisterEventTime(s.key, s.kg, w, m)
			}
			if c := s.cleanupTime(m); c != math.MaxInt64 {
				s.timers.RegisterEventTime(s.key, s.kg, w, c)
			}
		}
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
	i, _ := l.find(w.Start)
	var acc ACC
	have := false
	for ; i < len(l.parts) && l.parts[i].start < w.End; i++ {
		if have {
			acc = s.cfg.Merge(acc, l.parts[i].acc)
		} else {
			acc, have = l.parts[i].acc, true
		}
	}
	if !have {
		return nil
	}
	return s.cfg.Emit(s.key, w, acc)
}

// AdvanceWatermark fires the due windows and cleans up.
func (s *Sliced[K, IN, ACC]) AdvanceWatermark(wm int64) error {
	return s.timers.AdvanceWatermark(wm, s.onTimer)
}

func (s *Sliced[K, IN, ACC]) onTimer(t timer.Timer[K, window.TimeWindow]) error {
	s.key, s.kg = t.Key, t.KeyGroup
	s.cfg.Backend.SetCurrentKey(t.Key, t.KeyGroup)
	w := t.Namespace
	if t.Timestamp == w.MaxTimestamp() {
		if err := s.fire(w); err != nil {
			return err
		}
	}
	if t.Timestamp == s.cleanupTime(w.MaxTimestamp()) {
		// Drop the slices no later window covers: [start, start+slide).
		if l, ok := s.lists.Value(); ok {
			i, _ := l.find(w.Start)
			j, _ := l.find(w.Start + s.cfg.Slide)
			l.parts = slices.Delete(l.parts, i, j)
			if len(l.parts) == 0 {
				s.lists.Clear()
			}
		}
	}
	return nil
}

// sliceList holds the partials of one key, ordered by slice start.
type sliceList[ACC any] struct {
	parts []slicePart[ACC]
}

type slicePart[ACC any] struct {
	start int64
	acc   ACC
}

// find returns the index of the first slice starting at or after start,
// and whether it starts exactly there. New slices usually go last.
func (l *sliceList[ACC]) find(start int64) (int, bool) {
	n := len(l.parts)
	if n == 0 || l.parts[n-1].start < start {
		return n, false
	}
	return slices.BinarySearchFunc(l.parts, start, func(p slicePart[ACC], t int64) int {
		switch {
		case p.start < t:
			return -1
		case p.start > t:
			return 1
		}
		return 0
	})
}
