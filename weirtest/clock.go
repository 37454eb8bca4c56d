package weirtest

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/hooks"
)

// ManualClock is a weir.Clock that moves only when told to, for tests that
// must not depend on timing: give it to a job with weir.WithClock, then Set
// or Advance it to fire processing-time timers and periodic watermarks. It
// is safe for concurrent use.
type ManualClock struct{ m *clock.Manual }

var _ weir.Clock = (*ManualClock)(nil)

// NewManualClock returns a manual clock standing at start ms.
func NewManualClock(start int64) *ManualClock { return &ManualClock{m: clock.NewManual(start)} }

// NowMillis returns the clock's time in ms.
func (c *ManualClock) NowMillis() int64 { return c.m.NowMillis() }

// AfterFunc implements weir.Clock: f runs once the clock reaches at, on the
// goroutine that moves it there (on a new goroutine if at has passed).
func (c *ManualClock) AfterFunc(at int64, f func()) (stop func() bool) { return c.m.AfterFunc(at, f) }

// Set moves the clock to t ms (never backwards) and runs, in order of
// their times, the callbacks that are then due, before it returns.
func (c *ManualClock) Set(t int64) { c.m.Set(t) }

// Advance moves the clock d ms forward, as Set(NowMillis() + d).
func (c *ManualClock) Advance(d int64) { c.m.Advance(d) }

// harnessClock is the harness's manual clock: weir.NewEnvironment hands
// it the environment's side of the harness (hooks.HarnessClock).
type harnessClock struct {
	*ManualClock
	env hooks.HarnessEnv
}

// BindHarness implements hooks.HarnessClock.
func (c *harnessClock) BindHarness(env hooks.HarnessEnv) { c.env = env }
