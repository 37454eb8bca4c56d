package window

import (
	"math"
	"time"

	"github.com/weirstream/weir/state"
)

// TriggerResult is what a trigger tells the window operator to do with a
// window: fire (emit its contents through the window function), purge
// (clear its contents), both or neither. The operator fires before it
// purges; a purge clears only the contents, not trigger state or timers.
type TriggerResult uint8

const (
	// Continue does nothing.
	Continue TriggerResult = iota
	// Fire emits the window's contents and keeps them.
	Fire
	// Purge clears the window's contents without emitting them.
	Purge
	// FireAndPurge emits the window's contents, then clears them.
	FireAndPurge
)

// IsFire reports whether r fires.
func (r TriggerResult) IsFire() bool { return r == Fire || r == FireAndPurge }

// IsPurge reports whether r purges.
func (r TriggerResult) IsPurge() bool { return r == Purge || r == FireAndPurge }

// String returns Flink's name of r.
func (r TriggerResult) String() string {
	switch r {
	case Continue:
		return "CONTINUE"
	case Fire:
		return "FIRE"
	case Purge:
		return "PURGE"
	case FireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return "TriggerResult(?)"
}

// TriggerContext is what a trigger sees of the operator during a call:
// the current window, the clocks, the timer service of the current key and
// window, and the trigger's partitioned state (scoped to the current key
// and window).
type TriggerContext interface {
	// Window returns the current window (a TimeWindow, a GlobalWindow or a
	// custom window type), boxed.
	Window() any
	// MaxTimestamp returns the current window's maximum timestamp.
	MaxTimestamp() int64
	// Element returns the element being added, boxed; it is nil outside
	// OnElement.
	Element() any
	// CurrentWatermark returns the operator's current watermark.
	CurrentWatermark() int64
	// CurrentProcessingTime returns the processing-time clock in ms.
	CurrentProcessingTime() int64
	// RegisterEventTimeTimer registers an event-time timer for the current
	// key and window; equal timers collapse into one.
	RegisterEventTimeTimer(ts int64)
	// RegisterProcessingTimeTimer registers a processing-time timer.
	RegisterProcessingTimeTimer(ts int64)
	// DeleteEventTimeTimer deletes an event-time timer, if present.
	DeleteEventTimeTimer(ts int64)
	// DeleteProcessingTimeTimer deletes a processing-time timer, if present.
	DeleteProcessingTimeTimer(ts int64)
	// PartitionedState returns the trigger state of the current key and
	// window; read it with GetReducingState, GetValueState or GetListState.
	PartitionedState() StateStore
}

// OnMergeContext is the TriggerContext of Trigger.OnMerge; the current
// window is the merge result.
type OnMergeContext interface {
	TriggerContext
	// MergePartitionedState merges the reducing or list state named name
	// of the merged-away windows into the current window, as Flink's
	// mergePartitionedState. A state never registered is left alone.
	MergePartitionedState(name string) error
}

// Trigger decides when a window fires, as Flink's Trigger. One value is
// shared by all windows and keys of an operator instance; per-window data
// belongs in partitioned state, never in the trigger's fields.
type Trigger interface {
	// OnElement is called for every element added to a window, after it
	// has been added.
	OnElement(ts int64, ctx TriggerContext) (TriggerResult, error)
	// OnEventTime is called when an event-time timer of the window fires.
	OnEventTime(t int64, ctx TriggerContext) (TriggerResult, error)
	// OnProcessingTime is called when a processing-time timer of the window
	// fires.
	OnProcessingTime(t int64, ctx TriggerContext) (TriggerResult, error)
	// CanMerge reports whether the trigger supports merging windows.
	CanMerge() bool
	// OnMerge is called when windows merged into ctx's window.
	OnMerge(ctx OnMergeContext) error
	// Clear removes the trigger's state and timers of the window, when the
	// window is cleaned up or merged away.
	Clear(ctx TriggerContext) error
}

// sumInt64 and minInt64 are the reduce functions of the built-in triggers'
// state.
func sumInt64(a, b int64) int64 { return a + b }
func minInt64(a, b int64) int64 { return min(a, b) }

// EventTimeTrigger fires once the watermark passes the window's maximum
// timestamp, and at once for an element added to a window the watermark has
// already passed (a late firing). The default of event-time assigners.
func EventTimeTrigger() Trigger { return eventTimeTrigger{} }

type eventTimeTrigger struct{}

func (eventTimeTrigger) OnElement(_ int64, ctx TriggerContext) (TriggerResult, error) {
	if ctx.MaxTimestamp() <= ctx.CurrentWatermark() {
		return Fire, nil
	}
	ctx.RegisterEventTimeTimer(ctx.MaxTimestamp())
	return Continue, nil
}

func (eventTimeTrigger) OnEventTime(t int64, ctx TriggerContext) (TriggerResult, error) {
	if t == ctx.MaxTimestamp() {
		return Fire, nil
	}
	return Continue, nil
}

func (eventTimeTrigger) OnProcessingTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}

func (eventTimeTrigger) CanMerge() bool { return true }

func (eventTimeTrigger) OnMerge(ctx OnMergeContext) error {
	// Only if the watermark has not passed the merged window yet: otherwise
	// OnElement is about to fire it, and a timer would fire it twice.
	if m := ctx.MaxTimestamp(); m > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(m)
	}
	return nil
}

func (eventTimeTrigger) Clear(ctx TriggerContext) error {
	ctx.DeleteEventTimeTimer(ctx.MaxTimestamp())
	return nil
}

func (eventTimeTrigger) String() string { return "EventTimeTrigger()" }

// ProcessingTimeTrigger fires when the processing time reaches the window's
// maximum timestamp. The default of processing-time assigners.
func ProcessingTimeTrigger() Trigger { return processingTimeTrigger{} }

type processingTimeTrigger struct{}

func (processingTimeTrigger) OnElement(_ int64, ctx TriggerContext) (TriggerResult, error) {
	ctx.RegisterProcessingTimeTimer(ctx.MaxTimestamp())
	return Continue, nil
}

func (processingTimeTrigger) OnEventTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}

func (processingTimeTrigger) OnProcessingTime(int64, TriggerContext) (TriggerResult, error) {
	return Fire, nil
}

func (processingTimeTrigger) CanMerge() bool { return true }

func (processingTimeTrigger) OnMerge(ctx OnMergeContext) error {
	if m := ctx.MaxTimestamp(); m > ctx.CurrentProcessingTime() {
		ctx.RegisterProcessingTimeTimer(m)
	}
	return nil
}

func (processingTimeTrigger) Clear(ctx TriggerContext) error {
	ctx.DeleteProcessingTimeTimer(ctx.MaxTimestamp())
	return nil
}

func (processingTimeTrigger) String() string { return "ProcessingTimeTrigger()" }

// NeverTrigger never fires: the default of GlobalWindows.
func NeverTrigger() Trigger { return neverTrigger{} }

type neverTrigger struct{}

func (neverTrigger) OnElement(int64, TriggerContext) (TriggerResult, error) { return Continue, nil }
func (neverTrigger) OnEventTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}
func (neverTrigger) OnProcessingTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}
func (neverTrigger) CanMerge() bool               { return false }
func (neverTrigger) OnMerge(OnMergeContext) error { return nil }
func (neverTrigger) Clear(TriggerContext) error   { return nil }
func (neverTrigger) String() string               { return "NeverTrigger()" }

// countTrigger is the trigger returned by CountTrigger.
type countTrigger struct {
	n    int64
	desc state.ReducingDescriptor[int64]
}

// CountTrigger fires when a window has received n elements since its last
// firing (state "count", summed on merge; a merge never fires by itself).
// n must be positive.
func CountTrigger(n int64) Trigger {
	return &countTrigger{n: n, desc: state.Reducing("count", sumInt64)}
}

// Validate checks n > 0.
func (c *countTrigger) Validate() error {
	if c.n <= 0 {
		return errorf("count trigger needs n > 0, got %d", c.n)
	}
	return nil
}

// OnElement implements Trigger.
func (c *countTrigger) OnElement(_ int64, ctx TriggerContext) (TriggerResult, error) {
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return Continue, err
	}
	s.Add(1)
	if n, _ := s.Get(); n >= c.n {
		s.Clear()
		return Fire, nil
	}
	return Continue, nil
}

// OnEventTime implements Trigger.
func (c *countTrigger) OnEventTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}

// OnProcessingTime implements Trigger.
func (c *countTrigger) OnProcessingTime(int64, TriggerContext) (TriggerResult, error) {
	return Continue, nil
}

// CanMerge implements Trigger.
func (c *countTrigger) CanMerge() bool { return true }

// OnMerge implements Trigger: the counts are summed.
func (c *countTrigger) OnMerge(ctx OnMergeContext) error {
	return ctx.MergePartitionedState(c.desc.Name)
}

// Clear implements Trigger.
func (c *countTrigger) Clear(ctx TriggerContext) error {
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return err
	}
	s.Clear()
	return nil
}

// String returns "CountTrigger(n)".
func (c *countTrigger) String() string { return "CountTrigger(" + itoa(c.n) + ")" }

// purgingTrigger is the trigger returned by PurgingTrigger.
type purgingTrigger struct {
	inner Trigger
}

// PurgingTrigger wraps inner so that every firing also purges: FIRE and
// FIRE_AND_PURGE become FIRE_AND_PURGE, other results pass through.
func PurgingTrigger(inner Trigger) Trigger { return &purgingTrigger{inner: inner} }

// Validate checks the wrapped trigger.
func (p *purgingTrigger) Validate() error {
	if p.inner == nil {
		return errorf("purging trigger wraps a nil trigger")
	}
	return validate(p.inner)
}

func purge(r TriggerResult, err error) (TriggerResult, error) {
	if r.IsFire() {
		return FireAndPurge, err
	}
	return r, err
}

// OnElement implements Trigger.
func (p *purgingTrigger) OnElement(ts int64, ctx TriggerContext) (TriggerResult, error) {
	return purge(p.inner.OnElement(ts, ctx))
}

// OnEventTime implements Trigger.
func (p *purgingTrigger) OnEventTime(t int64, ctx TriggerContext) (TriggerResult, error) {
	return purge(p.inner.OnEventTime(t, ctx))
}

// OnProcessingTime implements Trigger.
func (p *purgingTrigger) OnProcessingTime(t int64, ctx TriggerContext) (TriggerResult, error) {
	return purge(p.inner.OnProcessingTime(t, ctx))
}

// CanMerge implements Trigger.
func (p *purgingTrigger) CanMerge() bool { return p.inner.CanMerge() }

// OnMerge implements Trigger.
func (p *purgingTrigger) OnMerge(ctx OnMergeContext) error { return p.inner.OnMerge(ctx) }

// Clear implements Trigger.
func (p *purgingTrigger) Clear(ctx TriggerContext) error { return p.inner.Clear(ctx) }

// continuousTrigger is the trigger returned by ContinuousEventTimeTrigger
// and ContinuousProcessingTimeTrigger.
type continuousTrigger struct {
	interval  int64
	eventTime bool
	desc      state.ReducingDescriptor[int64]
	given
}

// ContinuousEventTimeTrigger fires a window every interval of event time
// and at the window's end, with Flink 1.20's behaviour: the pending fire
// time is state "fire-time" (Min on merge); the first fire time is
// ts - ts%interval + interval (aligned to the epoch), clamped to the
// window's maximum timestamp, and so is every next one; an element for a
// window the watermark has passed fires at once.
//
// Difference from Flink: on a window whose maximum timestamp is the maximum
// int64 (a GlobalWindow), the end-of-input watermark would make Flink fire
// once per interval all the way up to the maximum timestamp (the job
// effectively hangs). Weir stops the periodic chain when the watermark is
// the maximum, so such a window fires exactly once at the end of input
// (through its end-of-window timer), with its full contents.
func ContinuousEventTimeTrigger(interval time.Duration) Trigger {
	return &continuousTrigger{interval: millis(interval), eventTime: true, desc: state.Reducing("fire-time", minInt64),
		given: given{}.set("continuous trigger interval", interval)}
}

// ContinuousProcessingTimeTrigger fires a window every interval of
// processing time (aligned to the epoch) and at the window's maximum
// timestamp, with Flink 1.20's behaviour (FLINK-20443 and FLINK-5717
// included). It never fires on an element.
func ContinuousProcessingTimeTrigger(interval time.Duration) Trigger {
	return &continuousTrigger{interval: millis(interval), desc: state.Reducing("fire-time", minInt64),
		given: given{}.set("continuous trigger interval", interval)}
}

// Interval returns the interval in ms.
func (c *continuousTrigger) Interval() int64 { return c.interval }

// Validate checks interval > 0 (and not below 1 ms).
func (c *continuousTrigger) Validate() error {
	if err := c.check(); err != nil {
		return err
	}
	if c.interval <= 0 {
		return errorf("continuous trigger interval must be positive, got %dms", c.interval)
	}
	return nil
}

func (c *continuousTrigger) register(ctx TriggerContext, t int64) {
	if c.eventTime {
		ctx.RegisterEventTimeTimer(t)
	} else {
		ctx.RegisterProcessingTimeTimer(t)
	}
}

// next registers min(base+interval, maxTimestamp) as the next fire time
// (wrapping addition, as Java).
func (c *continuousTrigger) next(ctx TriggerContext, s state.ReducingState[int64], base int64) {
	t := min(base+c.interval, ctx.MaxTimestamp())
	s.Add(t)
	c.register(ctx, t)
}

// OnElement implements Trigger.
func (c *continuousTrigger) OnElement(ts int64, ctx TriggerContext) (TriggerResult, error) {
	if c.eventTime {
		if ctx.MaxTimestamp() <= ctx.CurrentWatermark() {
			return Fire, nil
		}
		ctx.RegisterEventTimeTimer(ctx.MaxTimestamp())
	} else {
		ts = ctx.CurrentProcessingTime()
	}
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return Continue, err
	}
	if _, ok := s.Get(); !ok {
		c.next(ctx, s, ts-ts%c.interval)
	}
	return Continue, nil
}

func (c *continuousTrigger) onTimer(t int64, ctx TriggerContext) (TriggerResult, error) {
	if t == ctx.MaxTimestamp() {
		return Fire, nil
	}
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return Continue, err
	}
	if ft, ok := s.Get(); ok && ft == t {
		s.Clear()
		if c.eventTime && ctx.MaxTimestamp() == math.MaxInt64 && ctx.CurrentWatermark() == math.MaxInt64 {
			// End of input on an unbounded window: stop the chain; the
			// end-of-window timer at the maximum fires once (see the doc).
			return Continue, nil
		}
		c.next(ctx, s, t)
		return Fire, nil
	}
	return Continue, nil
}

// OnEventTime implements Trigger.
func (c *continuousTrigger) OnEventTime(t int64, ctx TriggerContext) (TriggerResult, error) {
	if !c.eventTime {
		return Continue, nil
	}
	return c.onTimer(t, ctx)
}

// OnProcessingTime implements Trigger.
func (c *continuousTrigger) OnProcessingTime(t int64, ctx TriggerContext) (TriggerResult, error) {
	if c.eventTime {
		return Continue, nil
	}
	return c.onTimer(t, ctx)
}

// CanMerge implements Trigger.
func (c *continuousTrigger) CanMerge() bool { return true }

// OnMerge implements Trigger: the earliest pending fire time survives and
// gets a timer in the merged window.
func (c *continuousTrigger) OnMerge(ctx OnMergeContext) error {
	if err := ctx.MergePartitionedState(c.desc.Name); err != nil {
		return err
	}
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return err
	}
	if ft, ok := s.Get(); ok {
		c.register(ctx, ft)
	}
	return nil
}

// Clear implements Trigger: deletes the pending periodic timer and the
// fire-time state (not the end-of-window timer, as Flink).
func (c *continuousTrigger) Clear(ctx TriggerContext) error {
	s, err := ctx.PartitionedState().Int64Reducing(c.desc)
	if err != nil {
		return err
	}
	if ft, ok := s.Get(); ok {
		if c.eventTime {
			ctx.DeleteEventTimeTimer(ft)
		} else {
			ctx.DeleteProcessingTimeTimer(ft)
		}
		s.Clear()
	}
	return nil
}

// String returns Flink's style of name.
func (c *continuousTrigger) String() string {
	if c.eventTime {
		return "ContinuousEventTimeTrigger(" + itoa(c.interval) + ")"
	}
	return "ContinuousProcessingTimeTrigger(" + itoa(c.interval) + ")"
}

// Validator is implemented by triggers and evictors with parameters to
// check (a count trigger's n, an evictor's function); the window operator
// calls Validate when the job is built, and Execute fails with its error.
// Assigners validate through their own Validate method.
type Validator interface {
	// Validate reports invalid parameters.
	Validate() error
}

// validate returns v's own validation error if it is a Validator; a nil
// v is an error.
func validate(v any) error {
	if v == nil {
		return errorf("trigger is nil")
	}
	if v, ok := v.(Validator); ok {
		return v.Validate()
	}
	return nil
}
