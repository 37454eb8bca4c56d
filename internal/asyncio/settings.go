package asyncio

import (
	"fmt"
	"time"
)

// Check checks an operator's capacity and timeout and, with retries
// (withRetry), that it has a strategy (noStrategy false) and a timeout.
func Check(capacity int, timeout time.Duration, withRetry, noStrategy bool) error {
	switch {
	case capacity < 1:
		return fmt.Errorf("the capacity must be at least 1, got %d", capacity)
	case timeout < 0 || (timeout > 0 && timeout < time.Millisecond):
		return fmt.Errorf("the timeout must be 0 (none) or at least 1ms, got %v", timeout)
	case withRetry && noStrategy:
		return fmt.Errorf("the retry strategy is nil")
	case withRetry && timeout <= 0:
		return fmt.Errorf("a timeout must be set with retries (as Flink requires)")
	}
	return nil
}

// Backoff is the delay before the attempt after attempt n of a fixed
// (multiplier 0) or exponential backoff from initial to at most max, each
// product truncated to whole milliseconds.
func Backoff(initial, max time.Duration, multiplier float64, n int) time.Duration {
	d, limit := initial.Milliseconds(), max.Milliseconds()
	for i := 1; i < n && multiplier > 0 && d < limit; i++ {
		d = min(int64(float64(d)*multiplier), limit)
	}
	return time.Duration(d) * time.Millisecond
}

// NewRetry returns the retry strategy of canRetry, backoff and the
// predicates; nil (nothing is retried) if neither predicate is set.
func NewRetry[OUT any](canRetry func(n int) bool, backoff func(n int) time.Duration,
	ifResult func([]OUT) bool, ifError func(error) bool) *Retry[OUT] {
	if ifResult == nil && ifError == nil {
		return nil
	}
	return &Retry[OUT]{
		CanRetry: canRetry,
		Backoff:  func(n int) int64 { return max(backoff(n).Milliseconds(), 0) },
		IfResult: ifResult,
		IfError:  ifError,
	}
}

// RetrySettings is the body of the root's AsyncRetry: its attempts and delays,
// and the error of invalid ones.
type RetrySettings struct {
	MaxAttempts int
	Initial     time.Duration
	Max         time.Duration
	Multiplier  float64 // 0: fixed delay
	Err         error
}

// FixedRetry retries up to maxAttempts times, waiting delay each time.
func FixedRetry(maxAttempts int, delay time.Duration) RetrySettings {
	r := RetrySettings{MaxAttempts: maxAttempts, Initial: delay, Max: delay}
	if maxAttempts < 1 || delay < time.Millisecond {
		r.Err = fmt.Errorf("fixed-delay retry: max attempts must be positive and the delay at least 1ms, got %d and %v", maxAttempts, delay)
	}
	return r
}

// ExponentialRetry retries up to maxAttempts times, waiting initialDelay,
// then multiplier times longer each time, at most maxDelay.
func ExponentialRetry(maxAttempts int, initialDelay, maxDelay time.Duration, multiplier float64) RetrySettings {
	r := RetrySettings{MaxAttempts: maxAttempts, Initial: initialDelay, Max: maxDelay, Multiplier: multiplier}
	if maxAttempts < 1 || initialDelay < time.Millisecond || maxDelay < initialDelay || !(multiplier >= 1) {
		r.Err = fmt.Errorf("exponential-backoff retry: need max attempts > 0, initial delay >= 1ms, max delay >= initial delay and multiplier >= 1, got %d, %v, %v, %v",
			maxAttempts, initialDelay, maxDelay, multiplier)
	}
	return r
}

// BackoffTime is the delay before the attempt after attempt n.
func (r RetrySettings) BackoffTime(n int) time.Duration {
	return Backoff(r.Initial, r.Max, r.Multiplier, n)
}

// Duration is a delay of a retry strategy and what the root calls it in
// the errors of its duration checks.
type Duration struct {
	What string
	D    time.Duration
}

// Durations are the strategy's delays.
func (r RetrySettings) Durations() []Duration {
	if r.Multiplier == 0 {
		return []Duration{{"retry delay", r.Initial}}
	}
	return []Duration{{"initial retry delay", r.Initial}, {"maximum retry delay", r.Max}}
}
