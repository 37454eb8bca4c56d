package weir_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// TestKeySelectorPanicNamesKeyBy: a key selector runs where records are
// routed to the keyed operator's subtasks, in the upstream task; its
// panic fails the job naming the keyBy (its default name, or the one set
// with Name), not the upstream operator.
func TestKeySelectorPanicNamesKeyBy(t *testing.T) {
	for _, name := range []string{"", "by word"} {
		env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()))
		words := weir.Generate(env, 100, 0, func(i int64) string { return string(rune('a' + i%3)) }, weir.NoWatermarks[string]())
		stamped := weir.AssignTimestampsAndWatermarks(words, weir.ForMonotonousTimestamps[string]().
			WithTimestampAssigner(func(string, int64) int64 { return 1 }))
		keyed := weir.KeyBy(stamped, func(w string) string {
			if w == "b" {
				panic("bad key b")
			}
			return w
		})
		want := `"KeyBy"`
		if name != "" {
			keyed, want = keyed.Name(name), `"by word"`
		}
		weir.Discard(weir.ProcessFunc(keyed, func(w string, _ weir.KeyedContext[string], out weir.Collector[string]) error {
			out.Collect(w)
			return nil
		}))
		h, err := env.ExecuteAsync(t.Context(), "keys")
		if err != nil {
			t.Fatal(err)
		}
		err = h.Wait()
		if err == nil {
			t.Fatal("a panicking key selector did not fail the job")
		}
		// The key sketch samples keys with the key selector under its
		// lock; the panic must not leave it held (Metrics reads it).
		h.Metrics()
		first, _, _ := strings.Cut(err.Error(), "\n")
		if !strings.Contains(first, want) || !strings.Contains(first, "bad key b") || !strings.Contains(first, "key selector") || strings.Contains(first, "Timestamps/Watermarks") {
			t.Errorf("want the keyBy %s blamed: %s", want, first)
		}
		if !strings.Contains(err.Error(), "goroutine ") {
			t.Errorf("the error has no stack: %v", err)
		}
	}
}

// TestJobWithoutSinkRefused: a job whose operators lead to no sink is
// refused when it is built, before any user function runs.
func TestJobWithoutSinkRefused(t *testing.T) {
	var called atomic.Int64
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Map(weir.Generate(env, 10, 0, func(i int64) int64 { called.Add(1); return i }, weir.NoWatermarks[int64]()),
		func(v int64) int64 { return v })
	err := env.Execute(t.Context(), "no sink")
	if err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Fatalf("a job without a sink: %v", err)
	}
	if called.Load() != 0 {
		t.Errorf("the refused job ran its generator %d times", called.Load())
	}
}

// TestStreamsOfTwoEnvironmentsRefused: every operation that combines two
// streams refuses streams of two environments, when the job is built
// (Execute of either environment fails before anything runs).
func TestStreamsOfTwoEnvironmentsRefused(t *testing.T) {
	type build func(a, b weir.DataStream[int64])
	id := func(v int64) int64 { return v }
	sink := func(ds weir.DataStream[int64]) { weir.Discard(ds) }
	tumbling := window.TumblingEventTime(time.Second)
	cases := map[string]build{
		"Union": func(a, b weir.DataStream[int64]) { sink(weir.Union(a, b)) },
		"Union of three": func(a, b weir.DataStream[int64]) {
			sink(weir.Union(a, weir.Map(a, id), b))
		},
		"Connect": func(a, b weir.DataStream[int64]) {
			sink(weir.CoProcess(weir.Connect(a, b), coPass{}))
		},
		"ConnectKeyed": func(a, b weir.DataStream[int64]) {
			sink(weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(a, id), weir.KeyBy(b, id)), keyedCoPass{}))
		},
		"KeyByConnected": func(a, b weir.DataStream[int64]) {
			sink(weir.KeyedCoProcess(weir.KeyByConnected(weir.Connect(a, b), id, id), keyedCoPass{}))
		},
		"IntervalJoin": func(a, b weir.DataStream[int64]) {
			sink(weir.IntervalJoinFunc(weir.KeyBy(a, id), weir.KeyBy(b, id), weir.Between(0, time.Second),
				func(l, _ int64, _ weir.JoinContext, out weir.Collector[int64]) error {
					out.Collect(l)
					return nil
				}))
		},
		"WindowJoin": func(a, b weir.DataStream[int64]) {
			sink(weir.Join(weir.WindowJoin(weir.KeyBy(a, id), weir.KeyBy(b, id), tumbling), func(l, _ int64) int64 { return l }))
		},
		"CoGroup": func(a, b weir.DataStream[int64]) {
			sink(weir.CoGroup(weir.WindowJoin(weir.KeyBy(a, id), weir.KeyBy(b, id), tumbling),
				weir.CoGroupFunction[int64, int64, int64, int64, window.TimeWindow](func(int64, window.TimeWindow, []int64, []int64, weir.Collector[int64]) error { return nil })))
		},
		"ConnectBroadcast": func(a, b weir.DataStream[int64]) {
			sink(weir.ProcessBroadcast(weir.ConnectBroadcast(a, weir.Broadcast(b)), broadcastPass{}))
		},
		"ConnectKeyedBroadcast": func(a, b weir.DataStream[int64]) {
			sink(weir.ProcessKeyedBroadcast(weir.ConnectKeyedBroadcast(weir.KeyBy(a, id), weir.Broadcast(b)), keyedBroadcastPass{}))
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var called atomic.Int64
			gen := func(env *weir.Environment) weir.DataStream[int64] {
				return weir.Generate(env, 10, 0, func(i int64) int64 { called.Add(1); return i },
					weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }))
			}
			env1 := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(quietLogger()))
			env2 := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(quietLogger()))
			c(gen(env1), gen(env2))
			for i, env := range []*weir.Environment{env1, env2} {
				err := env.Execute(t.Context(), name)
				if err == nil || !strings.Contains(err.Error(), "environment") {
					t.Errorf("Execute of environment %d: %v", i+1, err)
				}
			}
			if called.Load() != 0 {
				t.Errorf("the refused jobs ran their generators %d times", called.Load())
			}
		})
	}
}

type coPass struct{}

func (coPass) ProcessElement1(v int64, _ weir.Context, out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (coPass) ProcessElement2(v int64, _ weir.Context, out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}

type keyedCoPass struct{}

func (keyedCoPass) ProcessElement1(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (keyedCoPass) ProcessElement2(v int64, _ weir.KeyedContext[int64], out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (keyedCoPass) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	return nil
}

type broadcastPass struct{}

func (broadcastPass) ProcessElement(v int64, _ weir.ReadOnlyBroadcastContext, out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (broadcastPass) ProcessBroadcastElement(int64, weir.BroadcastContext, weir.Collector[int64]) error {
	return nil
}

type keyedBroadcastPass struct{}

func (keyedBroadcastPass) ProcessElement(v int64, _ weir.KeyedReadOnlyBroadcastContext[int64], out weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (keyedBroadcastPass) ProcessBroadcastElement(int64, weir.KeyedBroadcastContext[int64], weir.Collector[int64]) error {
	return nil
}
func (keyedBroadcastPass) OnTimer(int64, weir.KeyedBroadcastOnTimerContext[int64], weir.Collector[int64]) error {
	return nil
}

// TestSubMillisecondDurations: Weir works in whole milliseconds, as Flink.
// A non-zero duration below 1 ms (which would become 0 ms, where 0 is
// invalid or means something else) fails the job when it is built, saying
// it was truncated; a duration with a sub-millisecond remainder is
// truncated with one warning naming the setting.
func TestSubMillisecondDurations(t *testing.T) {
	const tiny = 500 * time.Microsecond
	bounded := func(env *weir.Environment, s weir.WatermarkStrategy[int64]) {
		weir.Discard(weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, []int64{1}), s))
	}
	keyed := func(env *weir.Environment) weir.KeyedStream[int64, int64] {
		return weir.KeyBy(weir.FromRecords(env, []weir.Record[int64]{{Value: 1, TS: 1}}, weir.ForMonotonousTimestamps[int64]()), func(v int64) int64 { return v })
	}
	sum := func(a, b int64) int64 { return a + b }
	refused := map[string]struct {
		opts  []weir.Option
		build func(env *weir.Environment)
	}{
		"out-of-orderness": {build: func(env *weir.Environment) { bounded(env, weir.ForBoundedOutOfOrderness[int64](tiny)) }},
		"idleness": {build: func(env *weir.Environment) {
			bounded(env, weir.ForMonotonousTimestamps[int64]().WithIdleness(tiny))
		}},
		"auto-watermark interval": {opts: []weir.Option{weir.WithAutoWatermarkInterval(tiny)}, build: func(env *weir.Environment) {
			weir.Discard(weir.FromSlice(env, []int64{1}))
		}},
		"tumbling window size": {build: func(env *weir.Environment) {
			weir.Discard(weir.Reduce(weir.Window(keyed(env), window.TumblingEventTime(tiny)), sum))
		}},
		"sliding window slide": {build: func(env *weir.Environment) {
			weir.Discard(weir.Reduce(weir.Window(keyed(env), window.SlidingEventTime(time.Second, tiny)), sum))
		}},
		"session gap": {build: func(env *weir.Environment) {
			weir.Discard(weir.Reduce(weir.Window(keyed(env), window.EventTimeSessions(tiny)), sum))
		}},
		"allowed lateness": {build: func(env *weir.Environment) {
			weir.Discard(weir.Reduce(weir.Window(keyed(env), window.TumblingEventTime(time.Second)).AllowedLateness(tiny), sum))
		}},
		"interval join bound": {build: func(env *weir.Environment) {
			k := keyed(env)
			weir.Discard(weir.IntervalJoinFunc(k, k, weir.Between(-tiny, time.Second),
				func(l, _ int64, _ weir.JoinContext, out weir.Collector[int64]) error { return nil }))
		}},
		"checkpoint interval": {build: func(env *weir.Environment) {
			env.EnableCheckpointing(tiny)
			weir.Discard(weir.FromSlice(env, []int64{1}))
		}},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(1), weir.WithLogger(quietLogger())}, c.opts...)...)
			c.build(env)
			err := env.Execute(context.Background(), name)
			if err == nil || !strings.Contains(err.Error(), "500µs") || !strings.Contains(err.Error(), "millisecond") {
				t.Fatalf("%s of 500µs: %v", name, err)
			}
		})
	}

	// A remainder is truncated, with one warning naming the setting.
	remainders := map[string]struct {
		text  string // in the warning
		build func(env *weir.Environment)
	}{
		"window size": {"1.5ms used as 1 ms", func(env *weir.Environment) {
			weir.Discard(weir.Reduce(weir.Window(keyed(env), window.TumblingEventTime(1500*time.Microsecond)), sum))
		}},
		"async timeout": {"timeout 2.5005s used as 2500 ms", func(env *weir.Environment) {
			weir.Discard(weir.OrderedWait(weir.FromSlice(env, []int64{1}), passAsync(), 2500*time.Millisecond+500*time.Microsecond, 1))
		}},
		"async retry delay": {"retry delay 1.25ms used as 1 ms", func(env *weir.Environment) {
			weir.Discard(weir.UnorderedWaitWithRetry(weir.FromSlice(env, []int64{1}), passAsync(), time.Second, 1,
				weir.FixedDelayRetry[int64](1, 1250*time.Microsecond).IfError(func(error) bool { return true })))
		}},
	}
	for name, c := range remainders {
		t.Run(name, func(t *testing.T) {
			logs := &captured{}
			env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(logs.logger()))
			c.build(env)
			if err := env.Execute(context.Background(), "remainder"); err != nil {
				t.Fatal(err)
			}
			warned := 0
			for _, r := range logs.all() {
				if r.level == "WARN" && strings.Contains(r.text, c.text) {
					warned++
				}
			}
			if warned != 1 {
				t.Errorf("%d warnings saying %q; logged: %v", warned, c.text, logs.all())
			}
		})
	}
}

// passAsync answers every request with its input at once.
func passAsync() *weir.AsyncCall[int64, int64] {
	return weir.AsyncFunc(func(_ context.Context, v int64) ([]int64, error) { return []int64{v}, nil })
}
