package timer

import "math"

// Service is a timer service with one event-time and one processing-time
// queue, following Flink's InternalTimerServiceImpl. The same (timestamp,
// key, namespace) may be registered once in each domain. Registering an
// existing timer, or deleting a missing one, is a no-op. A timer is polled
// before its callback runs, so deleting it from its own callback is a no-op.
//
// Service is not safe for concurrent use; callbacks run synchronously on the
// caller's goroutine and may register and delete timers.
type Service[K comparable, N comparable] struct {
	event     Queue[K, N]
	proc      Queue[K, N]
	watermark int64
}

// NewService returns a service with no timers and the watermark at
// math.MinInt64.
func NewService[K comparable, N comparable]() *Service[K, N] {
	return &Service[K, N]{watermark: math.MinInt64}
}

// RegisterEventTime registers an event-time timer at ts for key (in
// keyGroup) and namespace ns. It is not checked against the watermark: a
// timer with ts <= CurrentWatermark fires at the next AdvanceWatermark.
func (s *Service[K, N]) RegisterEventTime(key K, keyGroup int, ns N, ts int64) {
	s.event.Add(Timer[K, N]{Timestamp: ts, Key: key, Namespace: ns, KeyGroup: keyGroup})
}

// DeleteEventTime deletes the event-time timer at ts for key and ns, if any.
func (s *Service[K, N]) DeleteEventTime(key K, ns N, ts int64) {
	s.event.Delete(ts, key, ns)
}

// RegisterProcessingTime registers a processing-time timer at ts for key (in
// keyGroup) and namespace ns.
func (s *Service[K, N]) RegisterProcessingTime(key K, keyGroup int, ns N, ts int64) {
	s.proc.Add(Timer[K, N]{Timestamp: ts, Key: key, Namespace: ns, KeyGroup: keyGroup})
}

// DeleteProcessingTime deletes the processing-time timer at ts for key and
// ns, if any.
func (s *Service[K, N]) DeleteProcessingTime(key K, ns N, ts int64) {
	s.proc.Delete(ts, key, ns)
}

// CurrentWatermark returns the event time of the last AdvanceWatermark, or
// math.MinInt64 before the first.
func (s *Service[K, N]) CurrentWatermark() int64 { return s.watermark }

// AdvanceWatermark sets the current watermark to wm first, so callbacks see
// it, then polls and fires, one at a time and in ascending timestamp order
// (ties in registration order), every event-time timer with timestamp <= wm,
// including timers that fire itself registers with timestamp <= wm. It stops
// at the first error fire returns and returns it; the failed timer has been
// removed, the remaining due timers stay queued. The watermark is not
// required to increase.
func (s *Service[K, N]) AdvanceWatermark(wm int64, fire func(Timer[K, N]) error) error {
	s.watermark = wm
	return drain(&s.event, wm, fire)
}

// AdvanceProcessingTime fires every processing-time timer with timestamp <=
// now, following the rules of AdvanceWatermark.
func (s *Service[K, N]) AdvanceProcessingTime(now int64, fire func(Timer[K, N]) error) error {
	return drain(&s.proc, now, fire)
}

// NextProcessingTime returns the timestamp of the earliest processing-time
// timer, the time at which the caller should next call
// AdvanceProcessingTime; ok is false if there is none.
func (s *Service[K, N]) NextProcessingTime() (ts int64, ok bool) {
	t, ok := s.proc.Peek()
	return t.Timestamp, ok
}

// EventTimers returns the event-time queue, for snapshots and restores.
func (s *Service[K, N]) EventTimers() *Queue[K, N] { return &s.event }

// ProcessingTimers returns the processing-time queue, for snapshots and
// restores.
func (s *Service[K, N]) ProcessingTimers() *Queue[K, N] { return &s.proc }

// drain polls and fires the timers of q with timestamp <= limit.
func drain[K comparable, N comparable](q *Queue[K, N], limit int64, fire func(Timer[K, N]) error) error {
	for {
		t, ok := q.Peek()
		if !ok || t.Timestamp > limit {
			return nil
		}
		q.Poll()
		if err := fire(t); err != nil {
			return err
		}
	}
}
