package weir

import (
	"fmt"
	"time"
)

// Durations. Weir keeps time in whole milliseconds, as Flink does (its
// Duration settings become milliseconds with toMillis). Every setting that
// takes a time.Duration follows one rule, checked when the job is built:
// a non-zero duration below 1 ms fails the job (it would become 0 ms,
// which is invalid or means something else for every such setting:
// no out-of-orderness, no periodic watermarks, no lateness, ...); any
// other duration with a sub-millisecond part is truncated toward zero,
// with one warning naming the setting. The window package's assigners,
// triggers and evictors follow the same rule (window.Truncated).

// millis returns d in whole milliseconds, failing the job for a non-zero
// d below 1 ms and warning when a remainder is dropped. what names the
// setting ("auto-watermark interval", `operator "Window(Reduce)": ...`).
func (e *Environment) millis(what string, d time.Duration) int64 {
	ms := d.Milliseconds()
	switch {
	case d != 0 && ms == 0:
		e.fail(fmt.Errorf("%s %v is less than a millisecond: Weir works in whole milliseconds, as Flink, and would truncate it to 0 ms", what, d))
	case time.Duration(ms)*time.Millisecond != d:
		e.warnTruncated(fmt.Sprintf("%s %v used as %d ms", what, d, ms))
	}
	return ms
}

// warnTruncated logs that a duration lost its sub-millisecond part.
func (e *Environment) warnTruncated(what string) {
	e.cfg.logger.Warn("duration truncated to whole milliseconds (Weir, as Flink, works in milliseconds)", "setting", what)
}

// durationSetting is a duration a watermark strategy was given, checked
// (millis) where the strategy is used.
type durationSetting struct {
	what string
	d    time.Duration
}
