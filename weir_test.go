package weir_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMapFilterCollect(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.FromSlice(env, []int{1, 2, 3, 4, 5, 6})
	sq := weir.Map(src, func(v int) int { return v * v })
	even := weir.Filter(sq, func(v int) bool { return v%2 == 0 })
	res := weir.Collect(even)
	if err := env.Execute(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	slices.Sort(got)
	if !slices.Equal(got, []int{4, 16, 36}) {
		t.Fatalf("got %v", got)
	}
}

type counter struct {
	count state.ValueState[int64]
}

func (c *counter) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	var err error
	c.count, err = weir.GetValueState(ctx, state.Value[int64]("count"))
	return err
}

func (c *counter) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[[2]int64]) error {
	n, _ := c.count.Value()
	n++
	c.count.Update(n)
	if n == 10 {
		out.Collect([2]int64{ctx.CurrentKey(), n})
	}
	return nil
}

func (c *counter) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[[2]int64]) error {
	return nil
}

func TestKeyedCount(t *testing.T) {
	for _, p := range []int{1, 2, 3} {
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(7))
		src := weir.Generate(env, 1000, 0, func(i int64) int64 { return i % 100 }, weir.NoWatermarks[int64]())
		counts := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &counter{})
		res := weir.Collect(counts)
		if err := env.Execute(context.Background(), "count"); err != nil {
			t.Fatal(err)
		}
		if res.Len() != 100 {
			t.Fatalf("p=%d: %d keys reached 10, want 100", p, res.Len())
		}
	}
}

type timerFn struct{}

func (timerFn) ProcessElement(v int64, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	ctx.TimerService().RegisterEventTimeTimer(ts + 10)
	return nil
}

func (timerFn) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	out.Collect(ctx.CurrentKey() + "@" + time.Duration(ts).String())
	return nil
}

func TestEventTimeTimers(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	recs := []weir.Record[int64]{{Value: 1, TS: 5}, {Value: 2, TS: 7}, {Value: 3, TS: 5}}
	src := weir.FromRecords(env, recs, weir.ForBoundedOutOfOrderness[int64](0))
	fired := weir.Process(weir.KeyBy(src, func(v int64) string { return map[bool]string{true: "odd", false: "even"}[v%2 == 1] }), timerFn{})
	res := weir.Collect(fired)
	if err := env.Execute(context.Background(), "timers"); err != nil {
		t.Fatal(err)
	}
	got := res.Records()
	if len(got) != 2 {
		t.Fatalf("got %v", got)
	}
	for _, r := range got {
		want := map[string]int64{"odd@15ns": 15, "even@17ns": 17}[r.Value]
		if want != r.TS {
			t.Fatalf("record %v: ts %d, want %d", r.Value, r.TS, want)
		}
	}
}

func TestPanicFailsJobWithOperatorAndStack(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	m := weir.Map(src, func(v int64) int64 {
		if v == 5000 {
			panic("boom")
		}
		return v
	}).Name("exploding-map")
	weir.Discard(m)
	err := env.Execute(context.Background(), "panic")
	if err == nil || !strings.Contains(err.Error(), "exploding-map") || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("unexpected error: %v", err)
	}
}

func TestCancel(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v }))
	weir.Discard(weir.KeyBy(src, func(v int64) int64 { return v % 7 }).Stream())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := env.Execute(ctx, "cancel")
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(0))
	weir.Discard(weir.FromSlice(env, []int{1}))
	if err := env.Execute(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "parallelism") {
		t.Fatalf("got %v", err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(1))
	weir.Discard(weir.Map[int, int](weir.FromSlice(env, []int{1}), nil))
	if err := env.Execute(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "Map") {
		t.Fatalf("got %v", err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(1))
	weir.Discard(weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, []int{1}), weir.ForBoundedOutOfOrderness[int](-time.Second)))
	if err := env.Execute(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("got %v", err)
	}
}

func TestMetricsCountRecordsAndWatermarks(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 1000, 0, func(i int64) int64 { return i },
		weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }))
	kept := weir.Filter(src, func(v int64) bool { return v%4 == 0 }).Name("quarter")
	weir.Discard(weir.KeyBy(kept, func(v int64) int64 { return v }).Stream())
	h, err := env.ExecuteAsync(context.Background(), "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	var srcOut, filterIn, filterOut, sinkIn int64
	for _, tm := range h.Metrics() {
		for _, om := range tm.Operators {
			switch om.Name {
			case "Generator":
				srcOut += om.RecordsOut
			case "quarter":
				filterIn += om.RecordsIn
				filterOut += om.RecordsOut
			case "Discard":
				sinkIn += om.RecordsIn
				if len(om.InputWatermarks) != 1 || om.InputWatermarks[0] != weir.MaxWatermark {
					t.Errorf("sink input watermarks %v, want the maximum at the end", om.InputWatermarks)
				}
			}
		}
	}
	if srcOut != 1000 || filterIn != 1000 || filterOut != 250 || sinkIn != 250 {
		t.Fatalf("source out %d, filter in %d out %d, sink in %d", srcOut, filterIn, filterOut, sinkIn)
	}
}
