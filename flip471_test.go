package weir_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

// countingGen emits max timestamp - 1 on each periodic tick and counts
// the ticks it saw.
type countingGen struct {
	max   int64
	ticks *atomic.Int64
}

func (g *countingGen) OnEvent(_ int64, ts int64, _ weir.WatermarkOutput) { g.max = max(g.max, ts) }

func (g *countingGen) OnPeriodicEmit(out weir.WatermarkOutput) {
	g.ticks.Add(1)
	if g.max > weir.MinWatermark {
		out.EmitWatermark(g.max - 1)
	}
}

// TestIdlenessNotDeclaredUnderBackpressure (FLIP-471): a split whose task
// is blocked by backpressure for longer than the idleness timeout is not
// declared idle when the task can go on: the idleness clock is the task's
// input-activity clock, which stands still while a send waits for credit.
// Split A had a record and then none; its idleness timer has started when
// a record of split B blocks the task (the sink holds the only credit);
// the clock moves 2 s on, then the sink lets go. The periodic ticks that
// were due run at once: on the processing clock A would have been without
// records for 2 s and go idle, and the source's watermark would jump to
// B's; on the activity clock A was without records for 0 ms. Once the
// task runs for more than the timeout without records from A, A goes
// idle.
func TestIdlenessNotDeclaredUnderBackpressure(t *testing.T) {
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk), weir.WithLogger(quietLogger()),
		weir.WithAutoWatermarkInterval(10*time.Millisecond), weir.WithBufferCredits(1), weir.WithBufferSize(1))
	src := newChanSource[int64](2)
	var ticks []*atomic.Int64 // per split, in split order
	strategy := weir.ForGenerator(func() weir.WatermarkGenerator[int64] {
		c := new(atomic.Int64)
		ticks = append(ticks, c)
		return &countingGen{max: weir.MinWatermark, ticks: c}
	}).WithIdleness(100 * time.Millisecond)
	in := weir.FromSource(env, src, strategy, "src")
	got, release := make(chan struct{}, 1), make(chan struct{})
	first := true
	weir.SinkFunc(weir.Rebalance(in), func(int64) error {
		if first {
			first = false
			got <- struct{}{}
			<-release
		}
		return nil
	})
	h, err := env.ExecuteAsync(t.Context(), "backpressure")
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
		h.Cancel()
		h.Wait()
	}()
	srcWM := func() int64 {
		if m := operatorMetrics(h, "src"); len(m) == 1 {
			return m[0].OutputWatermark
		}
		return weir.MinWatermark
	}
	waitTicks := func(n int64) {
		waitMetrics(t, h, "periodic ticks", func() {}, func() bool { return len(ticks) == 2 && ticks[1].Load() >= n })
	}
	src.send(t, h, 0, rec[int64](1, 100)) // A's record; the sink holds it
	select {
	case <-got:
	case <-h.Done():
		t.Fatalf("job ended: %v", h.Wait())
	}
	clk.Set(10) // A had a record: its idleness timer is reset
	waitTicks(1)
	clk.Set(20) // no new record: A's idleness timer starts
	waitTicks(2)
	src.send(t, h, 1, rec[int64](2, 5000)) // B's record: the task blocks sending it
	waitMetrics(t, h, "backpressure", func() {}, func() bool {
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				if om.Name == "src" && tm.BackPressured > 0 {
					return true
				}
			}
		}
		return false
	})
	clk.Set(2000)
	close(release)
	released = true
	waitTicks(2 + 198) // the ticks 30..2000, run when the send went through
	clk.Set(2010)
	waitTicks(201)
	if wm := srcWM(); wm != 99 {
		t.Fatalf("source watermark %d after the backpressure, want 99 (split A still active; 4999 means A was declared idle)", wm)
	}
	// Without records, A goes idle after 100 ms of unblocked time.
	now := int64(2010)
	waitMetrics(t, h, "split A idle", func() { now += 10; clk.Set(now) }, func() bool { return srcWM() == 4999 })
	if now < 2110 {
		t.Fatalf("split A went idle at %d ms, less than 100 ms after the task could read again", now)
	}
}
