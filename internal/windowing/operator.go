package windowing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/internal/invariants"
	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
	"github.com/weirstream/weir/window"
)

type void = struct{}

// Config configures an Operator.
type Config[K comparable, IN, V any, W window.Window] struct {
	// Assigner assigns windows; if it implements window.ElementAssigner[IN,
	// W] the element is passed, and window.MergingAssigner makes windows
	// merge.
	Assigner window.Assigner[W]
	// Trigger is the window trigger.
	Trigger window.Trigger
	// Lateness is the allowed lateness in ms (event time only).
	Lateness int64
	// Backend is the keyed state backend of the subtask.
	Backend *istate.Backend[K]
	// Hash is the key's Java-style hash; MaxParallelism the key-group count.
	Hash           func(K) int32
	MaxParallelism int
	// Now reads the processing-time clock.
	Now func() int64
	// Schedule asks for f(at) once processing time reaches at.
	Schedule func(at int64, f func(at int64) error)
	// Contents is the window-contents state.
	Contents Contents[IN, V, W]
	// Emit calls the window function for a firing of w with its contents.
	Emit func(key K, w W, v V) error
	// ClearWindow, if set, is called when w is cleaned up (the process
	// window function's Clear).
	ClearWindow func(key K, w W) error
	// Late, if set, receives late elements (the late side output);
	// otherwise they are counted in LateDropped.
	Late func(v IN, ts int64)
}

// Validate checks the configuration the way Flink's builder does.
func (c *Config[K, IN, V, W]) Validate() error {
	if c.Assigner == nil {
		return errors.New("window assigner is nil")
	}
	if err := c.Assigner.Validate(); err != nil {
		return err
	}
	if c.Trigger == nil {
		return errors.New("trigger is nil")
	}
	if v, ok := c.Trigger.(window.Validator); ok {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	if c.Lateness < 0 {
		return fmt.Errorf("allowed lateness must not be negative, got %dms", c.Lateness)
	}
	if _, ok := c.Assigner.(window.MergingAssigner[W]); ok && !c.Trigger.CanMerge() {
		return fmt.Errorf("a merging window assigner cannot be used with a trigger that does not support merging (%v)", c.Trigger)
	}
	return nil
}

// Operator is the window operator of one subtask.
type Operator[K comparable, IN, V any, W window.Window] struct {
	cfg       Config[K, IN, V, W]
	elemAsg   window.ElementAssigner[IN, W]
	merging   window.MergingAssigner[W]
	eventTime bool
	lateness  int64
	trigger   window.Trigger
	contents  Contents[IN, V, W]

	timers *timer.Service[K, W]
	key    K
	kg     int

	ctx     triggerCtx[K, IN, V, W]
	store   *Store[K, W]
	sets    *istate.Value[K, void, *mergeSet[W]]
	wins    []W
	cands   []W
	groups  []mergeGroup[W]
	members []W
	mstates []W
	// collectGroup is o.addGroup.
	collectGroup func(result W, merged []W)

	scheduledAt int64
	// stockEvent is set for the EventTimeTrigger on non-merging windows,
	// and on merging windows without allowed lateness: then an element for
	// a window that already has contents and whose end the watermark has
	// not passed changes no timer (both its timers were registered with the
	// window's first element, or by the trigger's OnMerge when it became a
	// merge result) and only needs adding.
	stockEvent bool
	// stockProc is the same for the ProcessingTimeTrigger on non-merging
	// windows: its timer, registered with the window's first element, is
	// the cleanup timer too, so a window with contents always has it.
	stockProc bool
	// held is the element ProcessElement was given by value, so that the
	// trigger context can point at it.
	held IN
	// lateDropped counts late elements dropped (no late output set), as
	// Flink's numLateRecordsDropped; metrics read it from other goroutines.
	lateDropped atomic.Int64
}

// LateDropped returns the number of late elements dropped (no late output
// set), Flink's numLateRecordsDropped. Safe to call from any goroutine.
func (o *Operator[K, IN, V, W]) LateDropped() int64 { return o.lateDropped.Load() }

// New returns an operator; cfg must be valid.
func New[K comparable, IN, V any, W window.Window](cfg Config[K, IN, V, W]) (*Operator[K, IN, V, W], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Operator[K, IN, V, W]{
		cfg:         cfg,
		eventTime:   cfg.Assigner.IsEventTime(),
		lateness:    cfg.Lateness,
		trigger:     cfg.Trigger,
		contents:    cfg.Contents,
		timers:      timer.NewService[K, W](),
		scheduledAt: math.MaxInt64,
	}
	if !o.eventTime {
		o.lateness = 0
	}
	o.elemAsg, _ = cfg.Assigner.(window.ElementAssigner[IN, W])
	o.merging, _ = cfg.Assigner.(window.MergingAssigner[W])
	// With merging windows the cleanup timer of a merge result is only
	// registered by the element's own step, unless it coincides with the
	// trigger's timer, which the trigger's OnMerge registers.
	o.stockEvent = o.eventTime && cfg.Trigger == window.EventTimeTrigger() && (o.merging == nil || o.lateness == 0)
	o.stockProc = o.merging == nil && !o.eventTime && cfg.Trigger == window.ProcessingTimeTrigger()
	o.store = NewStore[K, W](cfg.Backend, nil)
	o.ctx.o = o
	o.collectGroup = o.addGroup
	if o.merging != nil {
		s, err := istate.GetValue[K, void, *mergeSet[W]](cfg.Backend, mergeSetDescriptor[W]())
		if err != nil {
			return nil, err
		}
		o.sets = s
	}
	return o, nil
}

// Timers returns the operator's timer service.
func (o *Operator[K, IN, V, W]) Timers() *timer.Service[K, W] { return o.timers }

// CurrentWatermark returns the operator's watermark.
func (o *Operator[K, IN, V, W]) CurrentWatermark() int64 { return o.timers.CurrentWatermark() }

// Key returns the current key.
func (o *Operator[K, IN, V, W]) Key() K { return o.key }

// SetCurrentKey makes k the current key (of the state backend too).
func (o *Operator[K, IN, V, W]) SetCurrentKey(k K) {
	o.key = k
	o.kg = keygroup.Of(o.cfg.Hash(k), o.cfg.MaxParallelism)
	o.cfg.Backend.SetCurrentKey(k, o.kg)
}

func (o *Operator[K, IN, V, W]) setTimerKey(k K, kg int) {
	o.key, o.kg = k, kg
	o.cfg.Backend.SetCurrentKey(k, kg)
}

// cleanupTime is Flink's cleanupTime: max timestamp + lateness in event
// time (the maximum on overflow), the max timestamp in processing time.
func (o *Operator[K, IN, V, W]) cleanupTime(w W) int64 {
	m := w.MaxTimestamp()
	if !o.eventTime {
		return m
	}
	c := m + o.lateness
	if c >= m {
		return c
	}
	return math.MaxInt64
}

func (o *Operator[K, IN, V, W]) isWindowLate(w W) bool {
	return o.eventTime && o.cleanupTime(w) <= o.timers.CurrentWatermark()
}

func (o *Operator[K, IN, V, W]) registerCleanupTimer(w W) {
	c := o.cleanupTime(w)
	if c == math.MaxInt64 {
		return
	}
	if o.eventTime {
		o.timers.RegisterEventTime(o.key, o.kg, w, c)
	} else {
		o.registerProcessingTimer(w, c)
	}
}

func (o *Operator[K, IN, V, W]) deleteCleanupTimer(w W) {
	c := o.cleanupTime(w)
	if c == math.MaxInt64 {
		return
	}
	if o.eventTime {
		o.timers.DeleteEventTime(o.key, w, c)
	} else {
		o.timers.DeleteProcessingTime(o.key, w, c)
	}
}

func (o *Operator[K, IN, V, W]) registerProcessingTimer(w W, ts int64) {
	o.timers.RegisterProcessingTime(o.key, o.kg, w, ts)
	if ts < o.scheduledAt {
		o.scheduledAt = ts
		o.cfg.Schedule(ts, o.OnProcessingTime)
	}
}

// ProcessElement processes one element of the current key (Flink's
// WindowOperator.processElement). It copies v into the operator, so that
// the element does not escape to the heap per call; ProcessElementPtr
// avoids the copy.
func (o *Operator[K, IN, V, W]) ProcessElement(v IN, ts int64) error {
	o.held = v
	return o.ProcessElementPtr(&o.held, ts)
}

// ProcessElementPtr is ProcessElement on *v, so that a large element is
// not copied at every call on its way to the window contents. The
// operator does not keep the pointer past the call.
func (o *Operator[K, IN, V, W]) ProcessElementPtr(v *IN, ts int64) error {
	var err error
	if o.elemAsg != nil {
		o.wins, err = o.elemAsg.AssignElement(*v, ts, &o.ctx, o.wins[:0])
	} else {
		o.wins, err = o.cfg.Assigner.AssignWindows(ts, &o.ctx, o.wins[:0])
	}
	if err != nil {
		return err
	}
	o.ctx.elem = v
	defer o.clearElem()
	skipped := true
	if o.merging != nil {
		set := o.loadSet()
		for _, w := range o.wins {
			actual, err := o.addWindow(set, w)
			if err != nil {
				return err
			}
			if o.isWindowLate(actual) {
				if err := set.retire(actual); err != nil {
					return err
				}
				continue
			}
			skipped = false
			sw, ok := set.stateWindow(actual)
			if !ok {
				return fmt.Errorf("window %v is not in the in-flight window set", actual)
			}
			if err := o.addAndTrigger(v, ts, actual, sw); err != nil {
				return err
			}
		}
		o.persistSet(set)
	} else {
		for _, w := range o.wins {
			if o.isWindowLate(w) {
				continue
			}
			skipped = false
			if err := o.addAndTrigger(v, ts, w, w); err != nil {
				return err
			}
		}
	}
	if skipped && o.eventTime && ts+o.lateness <= o.timers.CurrentWatermark() {
		if o.cfg.Late != nil {
			o.cfg.Late(*v, ts)
		} else {
			o.lateDropped.Add(1)
		}
	}
	return nil
}

func (o *Operator[K, IN, V, W]) clearElem() {
	o.ctx.elem = nil
}

func (o *Operator[K, IN, V, W]) addAndTrigger(v *IN, ts int64, w, stateW W) error {
	o.contents.SetNamespace(stateW)
	if (o.stockProc || o.stockEvent && w.MaxTimestamp() > o.timers.CurrentWatermark()) && o.contents.Exists() {
		// The stock trigger's OnElement would re-register the window's
		// timer and continue; the cleanup timer is registered too.
		o.contents.Add(v, ts)
		return nil
	}
	o.contents.Add(v, ts)
	o.ctx.w = w
	r, err := o.trigger.OnElement(ts, &o.ctx)
	if err != nil {
		return err
	}
	if err := o.apply(r, w, stateW); err != nil {
		return err
	}
	if !o.cleanupIsTriggerTimer() {
		o.registerCleanupTimer(w)
	}
	return nil
}

// cleanupIsTriggerTimer reports whether the cleanup timer of a window the
// element path reaches is the timer the stock trigger's OnElement has just
// registered, so registering it again would only find it queued: without
// allowed lateness the cleanup time is the window's max timestamp, where
// the EventTimeTrigger (for a window the watermark has not passed, the
// only ones not dropped as late) and the ProcessingTimeTrigger put their
// timers.
func (o *Operator[K, IN, V, W]) cleanupIsTriggerTimer() bool {
	return (o.stockEvent || o.stockProc) && o.lateness == 0
}

// apply fires and/or purges w whose contents are in stateW.
func (o *Operator[K, IN, V, W]) apply(r window.TriggerResult, w, stateW W) error {
	if r.IsFire() {
		o.contents.SetNamespace(stateW)
		if acc, ok := o.contents.Get(); ok {
			if err := o.cfg.Emit(o.key, w, acc); err != nil {
				return err
			}
		}
	}
	if r.IsPurge() {
		o.contents.SetNamespace(stateW)
		o.contents.Clear()
	}
	return nil
}

// AdvanceWatermark sets the watermark and fires the due event-time timers.
func (o *Operator[K, IN, V, W]) AdvanceWatermark(wm int64) error {
	return o.timers.AdvanceWatermark(wm, o.onEventTime)
}

// OnProcessingTime fires the processing-time timers due at at; it is the
// callback handed to Config.Schedule.
func (o *Operator[K, IN, V, W]) OnProcessingTime(at int64) error {
	if at >= o.scheduledAt {
		o.scheduledAt = math.MaxInt64
	}
	if err := o.timers.AdvanceProcessingTime(at, o.onProcessingTime); err != nil {
		return err
	}
	if next, ok := o.timers.NextProcessingTime(); ok && next < o.scheduledAt {
		o.scheduledAt = next
		o.cfg.Schedule(next, o.OnProcessingTime)
	}
	return nil
}

func (o *Operator[K, IN, V, W]) onEventTime(t timer.Timer[K, W]) error {
	return o.onTimer(t, true)
}

func (o *Operator[K, IN, V, W]) onProcessingTime(t timer.Timer[K, W]) error {
	return o.onTimer(t, false)
}

func (o *Operator[K, IN, V, W]) onTimer(t timer.Timer[K, W], event bool) error {
	o.setTimerKey(t.Key, t.KeyGroup)
	w := t.Namespace
	stateW := w
	var set *mergeSet[W]
	if o.merging != nil {
		set = o.getSet()
		sw, ok := set.stateWindow(w)
		if !ok {
			return nil // merged away or retired: a stale timer
		}
		stateW = sw
	}
	o.ctx.w = w
	var r window.TriggerResult
	var err error
	if event {
		r, err = o.trigger.OnEventTime(t.Timestamp, &o.ctx)
	} else {
		r, err = o.trigger.OnProcessingTime(t.Timestamp, &o.ctx)
	}
	if err != nil {
		return err
	}
	if err := o.apply(r, w, stateW); err != nil {
		return err
	}
	if event == o.eventTime && t.Timestamp == o.cleanupTime(w) {
		if err := o.clearAllState(w, stateW, set); err != nil {
			return err
		}
	}
	if set != nil {
		o.persistSet(set)
	}
	return nil
}

func (o *Operator[K, IN, V, W]) clearAllState(w, stateW W, set *mergeSet[W]) error {
	o.contents.SetNamespace(stateW)
	o.contents.Clear()
	o.ctx.w = w
	if err := o.trigger.Clear(&o.ctx); err != nil {
		return err
	}
	if o.cfg.ClearWindow != nil {
		if err := o.cfg.ClearWindow(o.key, w); err != nil {
			return err
		}
	}
	if set != nil {
		return set.retire(w)
	}
	return nil
}

// merge is the merge function of the merging-window set (Flink's
// WindowOperator merge callback).
func (o *Operator[K, IN, V, W]) merge(result W, merged []W, stateResult W, mergedStates []W) error {
	if o.eventTime {
		if result.MaxTimestamp()+o.lateness <= o.timers.CurrentWatermark() {
			return fmt.Errorf("the end timestamp of an event-time window cannot become earlier than the current watermark by merging (window %v, watermark %d)", result, o.timers.CurrentWatermark())
		}
	} else if now := o.cfg.Now(); result.MaxTimestamp() <= now {
		return fmt.Errorf("the end timestamp of a processing-time window cannot become earlier than the current processing time by merging (window %v, time %d)", result, now)
	}
	o.ctx.w = result
	o.ctx.merged = merged
	err := o.trigger.OnMerge(&o.ctx)
	o.ctx.merged = nil
	if err != nil {
		return err
	}
	for _, m := range merged {
		o.ctx.w = m
		if err := o.trigger.Clear(&o.ctx); err != nil {
			return err
		}
		if !o.stockEvent || o.lateness != 0 {
			// (The stock trigger's Clear deleted the timer at the
			// window's end, which is then the cleanup timer too.)
			o.deleteCleanupTimer(m)
		}
	}
	o.contents.MergeNamespaces(stateResult, mergedStates)
	return nil
}

// mergeSet is Flink's MergingWindowSet of one key: each in-flight window
// and the window its contents are stored under.
type mergeSet[W comparable] struct {
	ws     []W
	states []W
}

func (s *mergeSet[W]) index(w W) int { return slices.Index(s.ws, w) }

func (s *mergeSet[W]) stateWindow(w W) (W, bool) {
	if s != nil {
		if i := s.index(w); i >= 0 {
			return s.states[i], true
		}
	}
	var zero W
	return zero, false
}

func (s *mergeSet[W]) remove(w W) (W, bool) {
	i := s.index(w)
	if i < 0 {
		var zero W
		return zero, false
	}
	st := s.states[i]
	s.ws = slices.Delete(s.ws, i, i+1)
	s.states = slices.Delete(s.states, i, i+1)
	return st, true
}

func (s *mergeSet[W]) put(w, st W) {
	if i := s.index(w); i >= 0 {
		s.states[i] = st
		return
	}
	s.ws = append(s.ws, w)
	s.states = append(s.states, st)
}

func (s *mergeSet[W]) retire(w W) error {
	if _, ok := s.remove(w); !ok {
		return fmt.Errorf("window %v is not in the in-flight window set", w)
	}
	return nil
}

func (o *Operator[K, IN, V, W]) getSet() *mergeSet[W] {
	s, _ := o.sets.Value()
	return s
}

func (o *Operator[K, IN, V, W]) loadSet() *mergeSet[W] {
	if s, ok := o.sets.Value(); ok {
		return s
	}
	s := &mergeSet[W]{}
	o.sets.Update(s)
	return s
}

func (o *Operator[K, IN, V, W]) persistSet(s *mergeSet[W]) {
	if s != nil && len(s.ws) == 0 {
		o.sets.Clear()
	}
}

type mergeGroup[W comparable] struct {
	result  W
	members []W
}

// addWindow is Flink's MergingWindowSet.addWindow. The state window of a
// merge result is the state window of its earliest pre-existing member.
func (o *Operator[K, IN, V, W]) addWindow(set *mergeSet[W], newW W) (W, error) {
	o.cands = append(o.cands[:0], set.ws...)
	if !slices.Contains(o.cands, newW) {
		o.cands = append(o.cands, newW)
	}
	o.groups = o.groups[:0]
	o.members = o.members[:0]
	o.merging.MergeWindows(o.cands, o.collectGroup)
	result, mergedNew := newW, false
	for _, g := range o.groups {
		members := g.members
		if i := slices.Index(members, newW); i >= 0 {
			// (members is this group's own part of o.members, read once.)
			members = slices.Delete(members, i, i+1)
			mergedNew, result = true, g.result
		}
		if len(members) == 0 {
			continue
		}
		chosen, _ := set.stateWindow(members[0])
		mergedStates := o.mstates[:0]
		for _, m := range members {
			if st, ok := set.remove(m); ok {
				mergedStates = append(mergedStates, st)
			}
		}
		set.put(g.result, chosen)
		if i := slices.Index(mergedStates, chosen); i >= 0 {
			mergedStates = slices.Delete(mergedStates, i, i+1)
		}
		if !(len(members) == 1 && members[0] == g.result) {
			if err := o.merge(g.result, members, chosen, mergedStates); err != nil {
				return result, err
			}
		}
		o.mstates = mergedStates[:0]
	}
	if len(o.groups) == 0 || (result == newW && !mergedNew) {
		set.put(result, result)
	}
	if invariants.Enabled {
		set.check(result)
	}
	return result, nil
}

// check verifies a key's in-flight window set after adding a window
// (the invariants build tag): the result is in it, and windows and state
// windows are each distinct (every state window belongs to exactly one
// in-flight window), as in Flink's MergingWindowSet.
func (s *mergeSet[W]) check(result W) {
	if len(s.ws) != len(s.states) {
		invariants.Violated("window set: %d windows, %d state windows", len(s.ws), len(s.states))
	}
	if s.index(result) < 0 {
		invariants.Violated("window set: the merge result %v is not in the set", result)
	}
	for i := range s.ws {
		for j := i + 1; j < len(s.ws); j++ {
			if s.ws[i] == s.ws[j] {
				invariants.Violated("window set: window %v twice", s.ws[i])
			}
			if s.states[i] == s.states[j] {
				invariants.Violated("window set: windows %v and %v share the state window %v", s.ws[i], s.ws[j], s.states[i])
			}
		}
	}
}

// addGroup is the callback of MergeWindows in addWindow: it records a
// merge group (o.collectGroup holds it as a func value made once, so a
// merge does not allocate a closure).
func (o *Operator[K, IN, V, W]) addGroup(result W, merged []W) {
	start := len(o.members)
	o.members = append(o.members, merged...)
	o.groups = append(o.groups, mergeGroup[W]{result: result, members: o.members[start:len(o.members):len(o.members)]})
}

// triggerCtx implements window.TriggerContext, window.OnMergeContext and
// window.AssignerContext for the operator.
type triggerCtx[K comparable, IN, V any, W window.Window] struct {
	o      *Operator[K, IN, V, W]
	w      W
	elem   *IN // the element being processed, nil outside ProcessElementPtr
	merged []W
}

func (c *triggerCtx[K, IN, V, W]) Window() any         { return c.w }
func (c *triggerCtx[K, IN, V, W]) MaxTimestamp() int64 { return c.w.MaxTimestamp() }
func (c *triggerCtx[K, IN, V, W]) Element() any {
	if c.elem == nil {
		return nil
	}
	return *c.elem
}
func (c *triggerCtx[K, IN, V, W]) CurrentWatermark() int64 { return c.o.timers.CurrentWatermark() }
func (c *triggerCtx[K, IN, V, W]) CurrentProcessingTime() int64 {
	return c.o.cfg.Now()
}
func (c *triggerCtx[K, IN, V, W]) RegisterEventTimeTimer(ts int64) {
	c.o.timers.RegisterEventTime(c.o.key, c.o.kg, c.w, ts)
}
func (c *triggerCtx[K, IN, V, W]) RegisterProcessingTimeTimer(ts int64) {
	c.o.registerProcessingTimer(c.w, ts)
}
func (c *triggerCtx[K, IN, V, W]) DeleteEventTimeTimer(ts int64) {
	c.o.timers.DeleteEventTime(c.o.key, c.w, ts)
}
func (c *triggerCtx[K, IN, V, W]) DeleteProcessingTimeTimer(ts int64) {
	c.o.timers.DeleteProcessingTime(c.o.key, c.w, ts)
}
func (c *triggerCtx[K, IN, V, W]) PartitionedState() window.StateStore {
	c.o.store.SetNamespace(c.w)
	return c.o.store
}
func (c *triggerCtx[K, IN, V, W]) MergePartitionedState(name string) error {
	if len(c.merged) == 0 {
		return nil
	}
	return c.o.store.Merge(name, c.w, c.merged)
}
