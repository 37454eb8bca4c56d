package window

import (
	"math"
	"reflect"
	"slices"
	"time"
)

// AssignerContext gives an assigner the current processing time.
type AssignerContext interface {
	// CurrentProcessingTime returns the processing-time clock in ms.
	CurrentProcessingTime() int64
}

// Assigner assigns each element to zero or more windows, as Flink's
// WindowAssigner.
type Assigner[W Window] interface {
	// AssignWindows appends the windows of an element with timestamp ts to
	// dst and returns the extended slice. The order of the windows is the
	// order in which the operator consults the trigger for them.
	AssignWindows(ts int64, ctx AssignerContext, dst []W) ([]W, error)
	// DefaultTrigger returns the trigger used when none is set.
	DefaultTrigger() Trigger
	// IsEventTime reports whether windows are in event time (lateness and
	// event-time cleanup apply).
	IsEventTime() bool
	// Validate reports invalid parameters; the operator fails at build time.
	Validate() error
}

// ElementAssigner is implemented by assigners that look at the element
// itself (dynamic session gaps). The window operator calls AssignElement
// instead of AssignWindows when the assigner implements it for the stream's
// element type.
type ElementAssigner[T any, W Window] interface {
	Assigner[W]
	// AssignElement is AssignWindows with the element.
	AssignElement(v T, ts int64, ctx AssignerContext, dst []W) ([]W, error)
}

// MergingAssigner is implemented by assigners whose windows merge
// (sessions), as Flink's MergingWindowAssigner.
type MergingAssigner[W Window] interface {
	Assigner[W]
	// MergeWindows finds the groups of windows that merge and calls merge
	// once per group of two or more windows with the group's result and
	// its members.
	MergeWindows(windows []W, merge func(result W, merged []W))
}

// Tumbling assigns each element to one window of a fixed size, aligned to
// the epoch plus an offset (Flink's TumblingEventTimeWindows and
// TumblingProcessingTimeWindows).
type Tumbling struct {
	size, offset int64
	eventTime    bool
	given
}

// TumblingEventTime returns tumbling event-time windows of the given size.
func TumblingEventTime(size time.Duration) Tumbling {
	return Tumbling{size: millis(size), eventTime: true, given: given{}.set("tumbling window size", size)}
}

// TumblingProcessingTime returns tumbling processing-time windows of the
// given size; elements are assigned by the current processing time.
func TumblingProcessingTime(size time.Duration) Tumbling {
	return Tumbling{size: millis(size), given: given{}.set("tumbling window size", size)}
}

// WithOffset returns t with its windows shifted by offset, which may be
// negative (e.g. -8h for days in UTC+8); |offset| must be below the size.
func (t Tumbling) WithOffset(offset time.Duration) Tumbling {
	t.offset = millis(offset)
	t.given = t.given.set("window offset", offset)
	return t
}

// Size returns the window size in ms.
func (t Tumbling) Size() int64 { return t.size }

// Offset returns the offset in ms.
func (t Tumbling) Offset() int64 { return t.offset }

// Validate checks size > 0 and |offset| < size, and that no duration was
// below 1 ms.
func (t Tumbling) Validate() error {
	if err := t.check(); err != nil {
		return err
	}
	if t.size <= 0 {
		return errorf("tumbling window size must be positive, got %dms", t.size)
	}
	if t.offset <= -t.size || t.offset >= t.size {
		return errorf("tumbling window offset must satisfy |offset| < size, got offset %dms and size %dms", t.offset, t.size)
	}
	return nil
}

// AssignWindows implements Assigner.
func (t Tumbling) AssignWindows(ts int64, ctx AssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !t.eventTime {
		ts = ctx.CurrentProcessingTime()
	} else if ts == math.MinInt64 {
		return dst, errorf("record has no timestamp; event-time windows need timestamps (assign them and watermarks first)")
	}
	s := StartWithOffset(ts, t.offset, t.size)
	return append(dst, TimeWindow{Start: s, End: s + t.size}), nil
}

// DefaultTrigger implements Assigner: EventTimeTrigger or
// ProcessingTimeTrigger.
func (t Tumbling) DefaultTrigger() Trigger {
	if t.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

// IsEventTime implements Assigner.
func (t Tumbling) IsEventTime() bool { return t.eventTime }

// Sliding assigns each element to the size/slide windows of a fixed size
// that start every slide (Flink's SlidingEventTimeWindows and
// SlidingProcessingTimeWindows). With size < slide some elements fall
// between windows and are dropped.
type Sliding struct {
	size, slide, offset int64
	eventTime           bool
	given
}

func slidingGiven(size, slide time.Duration) given {
	return given{}.set("sliding window size", size).set("slide", slide)
}

// SlidingEventTime returns sliding event-time windows.
func SlidingEventTime(size, slide time.Duration) Sliding {
	return Sliding{size: millis(size), slide: millis(slide), eventTime: true, given: slidingGiven(size, slide)}
}

// SlidingProcessingTime returns sliding processing-time windows.
func SlidingProcessingTime(size, slide time.Duration) Sliding {
	return Sliding{size: millis(size), slide: millis(slide), given: slidingGiven(size, slide)}
}

// WithOffset returns s with its windows shifted by offset; |offset| must be
// below the slide.
func (s Sliding) WithOffset(offset time.Duration) Sliding {
	s.offset = millis(offset)
	s.given = s.given.set("window offset", offset)
	return s
}

// Size returns the window size in ms.
func (s Sliding) Size() int64 { return s.size }

// Slide returns the slide in ms.
func (s Sliding) Slide() int64 { return s.slide }

// Offset returns the offset in ms.
func (s Sliding) Offset() int64 { return s.offset }

// Validate checks size > 0, slide > 0 and |offset| < slide, as Flink, and
// that no duration was below 1 ms.
func (s Sliding) Validate() error {
	if err := s.check(); err != nil {
		return err
	}
	if s.size <= 0 || s.slide <= 0 {
		return errorf("sliding windows need size > 0 and slide > 0, got size %dms and slide %dms", s.size, s.slide)
	}
	if s.offset <= -s.slide || s.offset >= s.slide {
		return errorf("sliding window offset must satisfy |offset| < slide, got offset %dms and slide %dms", s.offset, s.slide)
	}
	return nil
}

// AssignWindows implements Assigner: latest start first, as Flink.
func (s Sliding) AssignWindows(ts int64, ctx AssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !s.eventTime {
		ts = ctx.CurrentProcessingTime()
	} else if ts == math.MinInt64 {
		return dst, errorf("record has no timestamp; event-time windows need timestamps (assign them and watermarks first)")
	}
	last := StartWithOffset(ts, s.offset, s.slide)
	for start := last; start > ts-s.size; start -= s.slide {
		dst = append(dst, TimeWindow{Start: start, End: start + s.size})
	}
	return dst, nil
}

// DefaultTrigger implements Assigner.
func (s Sliding) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

// IsEventTime implements Assigner.
func (s Sliding) IsEventTime() bool { return s.eventTime }

// Sessions assigns each element the window [t, t+gap), t being its
// timestamp (event time) or the current processing time; overlapping or
// touching windows merge (Flink's EventTimeSessionWindows and
// ProcessingTimeSessionWindows).
type Sessions struct {
	gap       int64
	eventTime bool
	given
}

// EventTimeSessions returns event-time session windows with a static gap.
func EventTimeSessions(gap time.Duration) Sessions {
	return Sessions{gap: millis(gap), eventTime: true, given: given{}.set("session gap", gap)}
}

// ProcessingTimeSessions returns processing-time session windows.
func ProcessingTimeSessions(gap time.Duration) Sessions {
	return Sessions{gap: millis(gap), given: given{}.set("session gap", gap)}
}

// Gap returns the session gap in ms.
func (s Sessions) Gap() int64 { return s.gap }

// Validate checks gap > 0 (and not below 1 ms).
func (s Sessions) Validate() error {
	if err := s.check(); err != nil {
		return err
	}
	if s.gap <= 0 {
		return errorf("session gap must be positive, got %dms", s.gap)
	}
	return nil
}

// AssignWindows implements Assigner.
func (s Sessions) AssignWindows(ts int64, ctx AssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !s.eventTime {
		ts = ctx.CurrentProcessingTime()
	}
	return append(dst, TimeWindow{Start: ts, End: ts + s.gap}), nil
}

// DefaultTrigger implements Assigner.
func (s Sessions) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

// IsEventTime implements Assigner.
func (s Sessions) IsEventTime() bool { return s.eventTime }

// MergeWindows implements MergingAssigner with MergeTimeWindows.
func (s Sessions) MergeWindows(windows []TimeWindow, merge func(result TimeWindow, merged []TimeWindow)) {
	MergeTimeWindows(windows, merge)
}

// DynamicSessions is a session assigner whose gap comes from each element.
type DynamicSessions[T any] struct {
	gap       func(v T) time.Duration
	eventTime bool
}

// DynamicEventTimeSessions returns event-time sessions whose gap is
// extracted from each element; a gap <= 0 fails the job.
func DynamicEventTimeSessions[T any](gap func(v T) time.Duration) DynamicSessions[T] {
	return DynamicSessions[T]{gap: gap, eventTime: true}
}

// DynamicProcessingTimeSessions returns processing-time sessions whose gap
// is extracted from each element.
func DynamicProcessingTimeSessions[T any](gap func(v T) time.Duration) DynamicSessions[T] {
	return DynamicSessions[T]{gap: gap}
}

// ElementType returns T, the element type the gap extractor reads: the
// window operator checks it against the stream's when the job is built.
func (s DynamicSessions[T]) ElementType() reflect.Type { return reflect.TypeFor[T]() }

// Validate checks that the gap extractor is set.
func (s DynamicSessions[T]) Validate() error {
	if s.gap == nil {
		return errorf("dynamic session gap extractor is nil")
	}
	return nil
}

// AssignWindows implements Assigner; it fails, as the gap needs the
// element (the operator calls AssignElement).
func (s DynamicSessions[T]) AssignWindows(int64, AssignerContext, []TimeWindow) ([]TimeWindow, error) {
	return nil, errorf("dynamic session windows need the element")
}

// AssignElement implements ElementAssigner.
func (s DynamicSessions[T]) AssignElement(v T, ts int64, ctx AssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !s.eventTime {
		ts = ctx.CurrentProcessingTime()
	}
	d := s.gap(v)
	gap := millis(d)
	if gap <= 0 {
		if err := (given{}).set("dynamic session gap", d).check(); err != nil {
			return dst, err
		}
		return dst, errorf("dynamic session gap must be positive, got %dms", gap)
	}
	return append(dst, TimeWindow{Start: ts, End: ts + gap}), nil
}

// DefaultTrigger implements Assigner.
func (s DynamicSessions[T]) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

// IsEventTime implements Assigner.
func (s DynamicSessions[T]) IsEventTime() bool { return s.eventTime }

// MergeWindows implements MergingAssigner.
func (s DynamicSessions[T]) MergeWindows(windows []TimeWindow, merge func(result TimeWindow, merged []TimeWindow)) {
	MergeTimeWindows(windows, merge)
}

// MergeTimeWindows merges time windows as Flink's TimeWindow.mergeWindows:
// sorted by start (stable: windows with one start keep their order), a
// window joins the current group when it intersects the group's cover
// (touching counts); merge is called for every group of two or more
// windows, members in the iteration order of the java.util.HashSet that
// Flink collects them in (see javaHashSetOrder), which decides whose
// contents a merged window keeps first. windows is reordered in place.
func MergeTimeWindows(windows []TimeWindow, merge func(result TimeWindow, merged []TimeWindow)) {
	if len(windows) < 2 {
		return
	}
	slices.SortStableFunc(windows, func(a, b TimeWindow) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	first := 0
	cover := windows[0]
	for i := 1; i <= len(windows); i++ {
		if i < len(windows) && cover.Intersects(windows[i]) {
			cover = cover.Cover(windows[i])
			continue
		}
		if i-first > 1 {
			javaHashSetOrder(windows[first:i])
			merge(cover, windows[first:i])
		}
		if i < len(windows) {
			first, cover = i, windows[i]
		}
	}
}

// GlobalWindows assigns every element to the single GlobalWindow. Its
// default trigger is NeverTrigger; it is not an event-time assigner, so no
// lateness applies and its state is never cleaned up.
type GlobalWindows struct{}

// Global returns the global window assigner.
func Global() GlobalWindows { return GlobalWindows{} }

// AssignWindows implements Assigner.
func (GlobalWindows) AssignWindows(_ int64, _ AssignerContext, dst []GlobalWindow) ([]GlobalWindow, error) {
	return append(dst, GlobalWindow{}), nil
}

// DefaultTrigger implements Assigner: NeverTrigger.
func (GlobalWindows) DefaultTrigger() Trigger { return NeverTrigger() }

// IsEventTime implements Assigner: false, as Flink.
func (GlobalWindows) IsEventTime() bool { return false }

// Validate implements Assigner.
func (GlobalWindows) Validate() error { return nil }
