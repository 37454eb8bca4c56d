package engine

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
)

// TestTaskTimersWakeWithoutInput: two processing-time callbacks due at
// the same time, each scheduling its next run, keep running on a task
// that gets no input. (The first one's Schedule used to arm the wake-up
// for the second, already due and about to run, so no wake-up came for
// the later ones: an aligned source paused by watermark alignment, which
// reads nothing, stopped updating its alignment and hung.)
func TestTaskTimersWakeWithoutInput(t *testing.T) {
	clk := clock.NewManual(0)
	task := NewTask("timers", 0, clk)
	task.SetInbox(make(chan message))
	task.SetDone(func() bool { return false })
	fired := make(chan int64, 16)
	var tick func(at int64) error
	tick = func(at int64) error {
		fired <- at
		task.Schedule(at+10, tick)
		return nil
	}
	task.Schedule(10, tick)
	task.Schedule(10, tick)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- task.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for step := int64(1); step <= 5; step++ {
		clk.Set(step * 10)
		for range 2 {
			select {
			case at := <-fired:
				if at != step*10 {
					t.Fatalf("a callback ran for %d at %d", at, step*10)
				}
			case <-time.After(10 * time.Second): // a hang guard, not a timing
				t.Fatalf("the callbacks due at %d did not run", step*10)
			}
		}
	}
}
