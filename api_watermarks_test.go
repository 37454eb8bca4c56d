package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/weirtest"
)

// wmProbe drives a job whose source is a chanSource, observed by an
// observeWM function on ch, on a manual clock. tick moves the clock to t
// and returns the watermark the observer has once every processing-time
// callback due by t (the periodic watermark ticks) has run: the task checks
// due callbacks after each element, so after two probe elements the
// second one sees their effect. Probes carry no timestamp, so they do not
// move a generator's maximum timestamp (they do count as split activity).
type wmProbe struct {
	t     *testing.T
	h     *weir.JobHandle
	clk   *weirtest.ManualClock
	src   *chanSource[string]
	ch    chan seenWM
	split int // the split probes go to
}

func (p *wmProbe) element(split int, v string, ts int64) seenWM {
	p.t.Helper()
	p.src.send(p.t, p.h, split, rec(v, ts))
	got := recv(p.t, p.h, p.ch)
	if got.V != v {
		p.t.Fatalf("observer saw %v, want %s", got, v)
	}
	return got
}

func (p *wmProbe) tick(t int64) int64 {
	p.t.Helper()
	p.clk.Set(t)
	p.element(p.split, "probe", weir.NoTimestamp)
	return p.element(p.split, "probe", weir.NoTimestamp).WM
}

// startProbe runs a job of a chanSource with the given splits and
// strategy into an observeWM function, at parallelism 1 on a manual clock
// at 0, and returns its probe (probes go to split 0).
func startProbe(t *testing.T, splits int, strat weir.WatermarkStrategy[string]) *wmProbe {
	t.Helper()
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
	src := newChanSource[string](splits)
	in := weir.FromSource[string](env, src, strat, "events")
	ch := make(chan seenWM, 16)
	weir.Collect(weir.ProcessStreamFunc(in, observeWM(ch)))
	return &wmProbe{t: t, h: start(t, env), clk: clk, src: src, ch: ch}
}

// waitEnded waits until the source's metrics show split id ended, sending
// probe elements (on the probe split) to make the task step, which
// refreshes its metrics.
func (p *wmProbe) waitEnded(id string) {
	p.t.Helper()
	waitMetrics(p.t, p.h, "split "+id+" ended", func() { p.element(p.split, "probe", weir.NoTimestamp) }, func() bool {
		for _, om := range p.h.Metrics()[0].Operators {
			for _, sm := range om.Splits {
				if sm.ID == id && sm.Ended {
					return true
				}
			}
		}
		return false
	})
}

// TestBoundedOutOfOrdernessPeriodic runs vector V12 of the Flink reference
// end to end: a source with ForBoundedOutOfOrderness(3 ms), one periodic
// tick (every 200 ms of a manual clock) after each element; the
// downstream watermark is max timestamp - 3 - 1 and never goes back.
func TestBoundedOutOfOrdernessPeriodic(t *testing.T) {
	p := startProbe(t, 1, weir.ForBoundedOutOfOrderness[string](3*time.Millisecond))
	h, src := p.h, p.src

	if wm := p.tick(200); wm != weir.MinWatermark {
		t.Fatalf("watermark before any event: %d, want MIN", wm)
	}
	steps := []struct{ ts, wm int64 }{{10, 6}, {7, 6}, {15, 11}, {12, 11}}
	at := int64(200)
	for _, s := range steps {
		p.element(0, fmt.Sprint(s.ts), s.ts)
		at += 200
		if wm := p.tick(at); wm != s.wm {
			t.Fatalf("after event %d and a tick: watermark %d, want %d", s.ts, wm, s.wm)
		}
	}
	src.close()
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
}

// wmTimers registers an event-time timer at each element's timestamp and
// reports, when it fires, the watermark that fired it.
type wmTimers struct{}

func (wmTimers) ProcessElement(v int64, ctx weir.KeyedContext[int64], _ weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	ctx.TimerService().RegisterEventTimeTimer(ts)
	return nil
}

func (wmTimers) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[string]) error {
	wm := fmt.Sprint(ctx.CurrentWatermark())
	if ctx.CurrentWatermark() == weir.MaxWatermark {
		wm = "MAX"
	}
	out.Collect(fmt.Sprintf("%d@%s", ts, wm))
	return nil
}

// TestBoundedOutOfOrdernessLastWatermark: with no periodic emission, a
// bounded source emits no watermark of its generator at its end, only the
// maximum: every timer fires at MAX. Flink 2.2.1 gives the same (a
// FileSource of the lines 10, 7, 15, 12 with forBoundedOutOfOrderness(3 ms),
// auto-watermark interval 0, parallelism 1 and 2: [7@MAX, 10@MAX, 12@MAX,
// 15@MAX]): its reader releases a finished split's output without a last
// periodic emission, and the task's end of data emits MAX.
func TestBoundedOutOfOrdernessLastWatermark(t *testing.T) {
	for _, p := range []int{1, 2} {
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithAutoWatermarkInterval(0))
		recs := []weir.Record[int64]{rec[int64](0, 10), rec[int64](0, 7), rec[int64](0, 15), rec[int64](0, 12)}
		src := weir.FromRecords(env, recs, weir.ForBoundedOutOfOrderness[int64](3*time.Millisecond))
		res := weir.Collect(weir.Process(weir.KeyBy(src, func(int64) int64 { return 0 }), wmTimers{}))
		mustRun(t, env)
		if got, want := res.Values(), []string{"7@MAX", "10@MAX", "12@MAX", "15@MAX"}; !slices.Equal(got, want) {
			t.Fatalf("p=%d: timers fired %v, want %v", p, got, want)
		}
	}
}

// TestMonotonousTimestampsWithAssigner checks a timestamp assigner at the
// source; with no periodic emission the timers fire at the end's MAX, as
// in Flink 2.2.1 (FileSource of 3, 5, 9, forMonotonousTimestamps, interval
// 0: [3@MAX, 5@MAX, 9@MAX]; the same with assignTimestampsAndWatermarks,
// where MAX passes the assigner before its finish would emit).
func TestMonotonousTimestampsWithAssigner(t *testing.T) {
	for _, mid := range []bool{false, true} {
		env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(0))
		strat := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
		var src weir.DataStream[int64]
		if mid {
			src = weir.AssignTimestampsAndWatermarks(weir.FromSource[int64](env, sliceSrc([]int64{3, 5, 9}), weir.NoWatermarks[int64](), "values"), strat)
		} else {
			src = weir.FromSource[int64](env, sliceSrc([]int64{3, 5, 9}), strat, "values")
		}
		res := weir.Collect(weir.Process(weir.KeyBy(src, func(int64) int64 { return 0 }), wmTimers{}))
		mustRun(t, env)
		if got, want := res.Values(), []string{"3@MAX", "5@MAX", "9@MAX"}; !slices.Equal(got, want) {
			t.Fatalf("assigner in the middle %v: timers fired %v, want %v", mid, got, want)
		}
	}
}

// TestFinishedSplitReleasesWatermark: a split that ends leaves its
// source's watermark combination, as Flink's SourceReaderBase releases a
// finished split's output (unregistered from the multiplexer, with no
// last periodic emission); the next periodic emission combines the splits
// still reading. (Before, the ended split held the source at its last
// watermark until every split had ended.)
func TestFinishedSplitReleasesWatermark(t *testing.T) {
	p := startProbe(t, 2, weir.ForBoundedOutOfOrderness[string](0))
	h, src := p.h, p.src

	p.element(1, "b5", 5)
	p.element(0, "a100", 100)
	if wm := p.tick(200); wm != 4 {
		t.Fatalf("tick 200: watermark %d, want 4", wm)
	}
	// Split 1 reads 9 and ends before the next periodic emission: its 8 is
	// never emitted (a last emission would hold the source at 8).
	p.element(1, "b9", 9)
	close(src.chans[1])
	p.waitEnded("chan-1")
	if wm := p.tick(400); wm != 99 {
		t.Fatalf("tick 400, split 1 ended: watermark %d, want 99 (split 0's)", wm)
	}
	close(src.chans[0])
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
}

// sliceSrc is a one-split source of values without timestamps.
func sliceSrc[T any](vs []T) connector.Source[T] {
	recs := make([]weir.Record[T], len(vs))
	for i, v := range vs {
		recs[i] = rec(v, weir.NoTimestamp)
	}
	return &preloaded[T]{recs: recs}
}

// preloaded is a one-split source that reads a fixed batch.
type preloaded[T any] struct{ recs []weir.Record[T] }

func (p *preloaded[T]) Splits(int) ([]connector.Split, error) {
	return []connector.Split{chanSplit(0)}, nil
}
func (p *preloaded[T]) Reader(connector.Split) (connector.SplitReader[T], error) {
	return &preloadedReader[T]{recs: p.recs}, nil
}

type preloadedReader[T any] struct{ recs []weir.Record[T] }

func (r *preloadedReader[T]) Read(_ context.Context, buf []weir.Record[T]) ([]weir.Record[T], error) {
	buf = append(buf, r.recs...)
	r.recs = nil
	return buf, io.EOF
}
func (r *preloadedReader[T]) Close() error { return nil }

// TestWithIdlenessIdleSplit runs a source subtask with two splits, each with
// its own ForBoundedOutOfOrderness(0).WithIdleness(1 s) generator, on a
// manual clock with 200 ms ticks. Split 1 gets one element at 5 and then
// nothing; split 0 is at 100. The watermark is min(99, 4) until split 1 is
// idle: the first quiet tick (400) starts its timer, and it is idle at the
// first tick strictly more than 1000 ms later (1600). Then the watermark
// follows split 0 alone; split 1 rejoins once it has events again, without
// pulling the watermark back. Without WithIdleness the watermark stays 4.
func TestWithIdlenessIdleSplit(t *testing.T) {
	for _, idleness := range []bool{true, false} {
		t.Run(fmt.Sprintf("idleness=%v", idleness), func(t *testing.T) {
			strat := weir.ForBoundedOutOfOrderness[string](0)
			if idleness {
				strat = strat.WithIdleness(time.Second)
			}
			p := startProbe(t, 2, strat)
			h, src := p.h, p.src

			p.element(1, "b5", 5)
			p.element(0, "a100", 100)
			for at := int64(200); at <= 1400; at += 200 {
				if wm := p.tick(at); wm != 4 {
					t.Fatalf("tick %d: watermark %d, want 4", at, wm)
				}
			}
			want := int64(99)
			if !idleness {
				want = 4
			}
			if wm := p.tick(1600); wm != want {
				t.Fatalf("tick 1600: watermark %d, want %d", wm, want)
			}
			if !idleness {
				src.close()
				if err := wait(t, h); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Split 1 wakes up at 300: the watermark stays at 99 (min of
			// 299 and 99); split 0 moves to 500: now 299.
			p.element(1, "b300", 300)
			if wm := p.tick(1800); wm != 99 {
				t.Fatalf("tick 1800: watermark %d, want 99", wm)
			}
			p.element(0, "a500", 500)
			if wm := p.tick(2000); wm != 299 {
				t.Fatalf("tick 2000: watermark %d, want 299", wm)
			}
			src.close()
			if err := wait(t, h); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAssignTimestampsAndWatermarksMidPipeline checks that the assigner
// replaces timestamps, drops upstream watermarks (except the final MAX) and
// generates its own.
func TestAssignTimestampsAndWatermarksMidPipeline(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(0))
	recs := []weir.Record[int64]{rec[int64](1, 100), rec[int64](2, 200), rec[int64](30, 300)}
	up := weir.FromRecords(env, recs, punctuatedStrategy[int64]()) // watermarks 100, 200, 300 upstream
	assigned := weir.AssignTimestampsAndWatermarks(up,
		weir.ForBoundedOutOfOrderness[int64](0).WithTimestampAssigner(func(v int64, ts int64) int64 { return v*10 + ts/100 }))
	seen := weir.ProcessStreamFunc(assigned,
		func(v int64, ctx weir.Context, out weir.Collector[string]) error {
			ts, _ := ctx.Timestamp()
			out.Collect(fmt.Sprintf("%d@%d wm=%d", v, ts, ctx.CurrentWatermark()))
			return nil
		})
	res := weir.Collect(seen)
	timers := weir.Collect(weir.Process(weir.KeyBy(assigned, func(int64) int64 { return 0 }), wmTimers{}))
	mustRun(t, env)
	min := weir.MinWatermark
	want := []string{fmt.Sprintf("1@11 wm=%d", min), fmt.Sprintf("2@22 wm=%d", min), fmt.Sprintf("30@303 wm=%d", min)}
	if got := res.Values(); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Upstream watermarks 100..300 would fire the timers at 11 and 22; they
	// are dropped. The upstream MAX is forwarded first, as in Flink, so the
	// assigner's last periodic watermark (302) at the end is suppressed.
	if got, want := timers.Values(), []string{"11@MAX", "22@MAX", "303@MAX"}; !slices.Equal(got, want) {
		t.Fatalf("timers %v, want %v", got, want)
	}
}

// TestRestoredEndedSplitHoldsNothing: a split that had ended when the
// savepoint was taken is not read again after the restore, and does not
// hold its source's watermark either (Flink's reader no longer has a
// finished split: its state left with it). Before, such a split was
// registered at MIN and held the source at MIN until every split ended.
func TestRestoredEndedSplitHoldsNothing(t *testing.T) {
	job := func(opts ...weir.Option) (*weir.Environment, *chanSource[string], chan seenWM) {
		clk := weirtest.NewManualClock(0)
		env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(1), weir.WithClock(clk), weir.WithLogger(quietLogger())}, opts...)...)
		env.EnableCheckpointing(time.Hour)
		src := newChanSource[string](2)
		in := weir.FromSource[string](env, src, weir.ForBoundedOutOfOrderness[string](0), "events")
		ch := make(chan seenWM, 16)
		weir.Collect(weir.ProcessStreamFunc(in, observeWM(ch)))
		return env, src, ch
	}
	env, src, ch := job()
	h := start(t, env)
	p := &wmProbe{t: t, h: h, clk: env.Clock().(*weirtest.ManualClock), src: src, ch: ch, split: 0}
	p.element(1, "b5", 5)
	close(src.chans[1])
	p.waitEnded("chan-1")
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}

	env, src, ch = job(weir.RestoreFromSavepoint(path))
	h = start(t, env)
	p = &wmProbe{t: t, h: h, clk: env.Clock().(*weirtest.ManualClock), src: src, ch: ch, split: 0}
	p.element(0, "a100", 100)
	if wm := p.tick(200); wm != 99 {
		t.Fatalf("after the restore, tick 200: watermark %d, want 99 (split 0's; split 1 had ended)", wm)
	}
	close(src.chans[0])
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
}
