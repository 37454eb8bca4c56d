package timer

import "math"

// Scheduler asks for f(at) once processing time has reached at
// (runtime.ProcessingTimeService).
type Scheduler interface {
	Schedule(at int64, f func(at int64) error)
}

// Driver fires the timers of a keyed operator's Service: event-time ones
// as the watermark passes them, processing-time ones when the Scheduler
// calls back, of which it keeps the earliest scheduled.
type Driver[K comparable, N comparable] struct {
	s           *Service[K, N]
	pts         Scheduler
	scheduledAt int64 // the time asked of pts (math.MaxInt64: none)
	fireEvent   func(t Timer[K, N]) error
	fireProc    func(t Timer[K, N]) error
	catch       func(err *error)
}

// NewDriver returns the driver of s's timers on pts.
func NewDriver[K comparable, N comparable](s *Service[K, N], pts Scheduler) Driver[K, N] {
	return Driver[K, N]{s: s, pts: pts, scheduledAt: math.MaxInt64}
}

// Start sets fire, which runs a due timer (eventTime tells its domain),
// and catch, deferred by the processing-time callback; then it schedules
// the earliest processing-time timer (restored ones already due fire
// right away).
func (d *Driver[K, N]) Start(fire func(t Timer[K, N], eventTime bool) error, catch func(err *error)) {
	d.fireEvent = func(t Timer[K, N]) error { return fire(t, true) }
	d.fireProc = func(t Timer[K, N]) error { return fire(t, false) }
	d.catch = catch
	if next, ok := d.s.NextProcessingTime(); ok {
		d.scheduledAt = next
		d.pts.Schedule(next, d.onProcessingTime)
	}
}

// Registered schedules the processing-time timer just registered at ts
// if it is earlier than the one scheduled.
func (d *Driver[K, N]) Registered(ts int64) {
	if ts < d.scheduledAt {
		d.scheduledAt = ts
		d.pts.Schedule(ts, d.onProcessingTime)
	}
}

// AdvanceWatermark fires the event-time timers up to wm.
func (d *Driver[K, N]) AdvanceWatermark(wm int64) error {
	return d.s.AdvanceWatermark(wm, d.fireEvent)
}

func (d *Driver[K, N]) onProcessingTime(at int64) (err error) {
	defer d.catch(&err)
	if at >= d.scheduledAt {
		d.scheduledAt = math.MaxInt64
	}
	if err := d.s.AdvanceProcessingTime(at, d.fireProc); err != nil {
		return err
	}
	if next, ok := d.s.NextProcessingTime(); ok && next < d.scheduledAt {
		d.scheduledAt = next
		d.pts.Schedule(next, d.onProcessingTime)
	}
	return nil
}
