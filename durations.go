package weir

import (
	"time"

	"github.com/weirstream/weir/internal/job"
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
// d below 1 ms and warning when a remainder is dropped (job.Millis).
func (e *Environment) millis(what string, d time.Duration) int64 {
	return job.Millis(what, d, e.fail, e.cfg.logger)
}

// warnTruncated logs that a duration lost its sub-millisecond part.
func (e *Environment) warnTruncated(what string) { job.WarnTruncated(e.cfg.logger, what) }

// durationSetting is a duration a watermark strategy was given, checked
// (millis) where the strategy is used.
type durationSetting struct {
	what string
	d    time.Duration
}
