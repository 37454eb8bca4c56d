package windowing

// TimerCount returns the number of registered event- and processing-time
// timers (trigger and cleanup timers).
func (o *Operator[K, IN, V, W]) TimerCount() int {
	return o.timers.EventTimers().Len() + o.timers.ProcessingTimers().Len()
}

// TimerCount returns the number of registered timers.
func (s *Sliced[K, IN, ACC]) TimerCount() int {
	return s.timers.EventTimers().Len() + s.timers.ProcessingTimers().Len()
}
