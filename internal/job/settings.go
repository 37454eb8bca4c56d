package job

import (
	"fmt"
	"log/slog"
	"time"
)

// Millis returns d in whole milliseconds, as Flink keeps time: a non-zero
// d below 1 ms is refused with fail (it would become 0 ms, which is invalid
// or means something else for every duration setting), and a dropped
// sub-millisecond remainder is logged as a warning. what names the setting
// ("auto-watermark interval", `operator "Window(Reduce)": ...`).
func Millis(what string, d time.Duration, fail func(error), log *slog.Logger) int64 {
	ms := d.Milliseconds()
	switch {
	case d != 0 && ms == 0:
		fail(fmt.Errorf("%s %v is less than a millisecond: Weir works in whole milliseconds, as Flink, and would truncate it to 0 ms", what, d))
	case time.Duration(ms)*time.Millisecond != d:
		WarnTruncated(log, fmt.Sprintf("%s %v used as %d ms", what, d, ms))
	}
	return ms
}

// WarnTruncated logs that a duration lost its sub-millisecond part.
func WarnTruncated(log *slog.Logger, what string) {
	log.Warn("duration truncated to whole milliseconds (Weir, as Flink, works in milliseconds)", "setting", what)
}

// DefaultCheckpointing returns the checkpoint settings before options:
// Flink's defaults (a 10-minute timeout, exactly-once, one checkpoint
// retained).
func DefaultCheckpointing(interval time.Duration) Checkpointing {
	return Checkpointing{Interval: interval, Timeout: 10 * time.Minute, ExactlyOnce: true, Retain: 1}
}

// Check refuses invalid checkpoint settings with fail, and checks each
// duration with millis.
func (c *Checkpointing) Check(fail func(error), millis func(string, time.Duration) int64) {
	if c.Interval <= 0 {
		fail(fmt.Errorf("checkpoint interval must be positive, got %v", c.Interval))
	}
	if c.Timeout <= 0 || c.MinPause < 0 || c.Retain < 1 || c.Tolerable < 0 {
		fail(fmt.Errorf("invalid checkpoint settings: timeout %v, min pause %v, retained %d, tolerable failures %d", c.Timeout, c.MinPause, c.Retain, c.Tolerable))
	}
	millis("checkpoint interval", c.Interval)
	millis("checkpoint timeout", c.Timeout)
	millis("min pause between checkpoints", c.MinPause)
	millis("aligned-checkpoint timeout", c.AlignedTimeout)
}

// FixedDelay restarts up to Attempts times, waiting Delay each time
// (weir.FixedDelayRestart).
type FixedDelay struct {
	Attempts int
	Delay    time.Duration
}

// String is the strategy's name in Flink's restart-strategy option.
func (FixedDelay) String() string { return "fixed-delay" }

// Next implements weir.RestartStrategy.
func (f FixedDelay) Next(attempt int) (time.Duration, bool) { return f.Delay, attempt <= f.Attempts }

// ExpDelay restarts up to Attempts times, waiting Initial, then twice as
// long each time, at most Max (weir.ExponentialDelayRestart).
type ExpDelay struct {
	Initial, Max time.Duration
	Attempts     int
}

// String is the strategy's name in Flink's restart-strategy option.
func (ExpDelay) String() string { return "exponential-delay" }

// Next implements weir.RestartStrategy.
func (e ExpDelay) Next(attempt int) (time.Duration, bool) {
	d := e.Initial
	for i := 1; i < attempt && d < e.Max; i++ {
		d *= 2
	}
	return min(d, e.Max), attempt <= e.Attempts
}

// RestartName names a restart strategy as Flink's restart-strategy option
// does (fixed-delay, exponential-delay); a strategy of the user's own is
// "custom" followed by its Go type, or its String if it has one.
func RestartName(s any) string {
	if n, ok := s.(fmt.Stringer); ok {
		return n.String()
	}
	return fmt.Sprintf("custom (%T)", s)
}
