package weir_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/weirtest"
)

var errUser = errors.New("user says no")

// keyedFail is a keyed function that panics or fails for one key, in
// ProcessElement or (with timer) in OnTimer.
type keyedFail struct {
	key   int64
	panic bool
	timer bool
}

func (f keyedFail) fail() error {
	if f.panic {
		panic(fmt.Sprintf("boom for key %d", f.key))
	}
	return fmt.Errorf("key %d: %w", f.key, errUser)
}

func (f keyedFail) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[int64]) error {
	if ctx.CurrentKey() == f.key {
		if f.timer {
			ts, _ := ctx.Timestamp()
			ctx.TimerService().RegisterEventTimeTimer(ts)
			return nil
		}
		return f.fail()
	}
	out.Collect(v)
	return nil
}

func (f keyedFail) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[int64]) error {
	return f.fail()
}

func keyedFailJob(f keyedFail) *weir.Environment {
	env := weir.NewEnvironment(weir.WithParallelism(2), quiet())
	strat := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
	src := weir.Generate(env, 1000, 0, func(i int64) int64 { return i % 50 }, strat)
	weir.Collect(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), f).Name("exploder"))
	return env
}

// Key 0 (a Long 0 in Flink) is in key group 94, which subtask 1 of 2 owns
// (vector V14).
const key0Subtask = "subtask 1"

func TestPanicInKeyedProcessNamesOperatorAndSubtask(t *testing.T) {
	err := run(t, keyedFailJob(keyedFail{key: 0, panic: true}))
	if err == nil {
		t.Fatal("panic did not fail the job")
	}
	msg := err.Error()
	for _, want := range []string{`"exploder"`, key0Subtask, "panicked", "boom for key 0", "goroutine ", "ProcessElement"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
}

func TestPanicInOnTimerNamesOperatorAndSubtask(t *testing.T) {
	err := run(t, keyedFailJob(keyedFail{key: 0, panic: true, timer: true}))
	if err == nil || !contains(err.Error(), `"exploder"`, key0Subtask, "panicked", "boom for key 0", "OnTimer") {
		t.Fatalf("got %v", err)
	}
}

func TestErrorFromKeyedProcessFunction(t *testing.T) {
	for _, timer := range []bool{false, true} {
		err := run(t, keyedFailJob(keyedFail{key: 0, timer: timer}))
		if !errors.Is(err, errUser) {
			t.Fatalf("timer=%v: error %v does not wrap the user's error", timer, err)
		}
		if !contains(err.Error(), `"exploder"`, key0Subtask, "key 0") {
			t.Fatalf("timer=%v: error %q does not name the operator and subtask", timer, err)
		}
		if strings.Contains(err.Error(), "goroutine ") {
			t.Fatalf("timer=%v: a returned error carries a stack: %v", timer, err)
		}
	}
}

func TestErrorFromFlatMapAndSink(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	src := weir.FromSlice(env, []string{"a b", "c FAIL", "d"})
	words := weir.FlatMap(src, func(line string, out weir.Collector[string]) error {
		for _, w := range strings.Fields(line) {
			if w == "FAIL" {
				return fmt.Errorf("bad word: %w", errUser)
			}
			out.Collect(w)
		}
		return nil
	}).Name("splitter")
	weir.Collect(words)
	err := run(t, env)
	if !errors.Is(err, errUser) || !contains(err.Error(), `"splitter"`, "subtask 0", "bad word") {
		t.Fatalf("flatMap: got %v", err)
	}

	env = weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.SinkFunc(weir.FromSlice(env, []int{1, 2, 3}), func(v int) error {
		if v == 2 {
			return errUser
		}
		return nil
	}).Name("picky-sink")
	if err := run(t, env); !errors.Is(err, errUser) || !strings.Contains(err.Error(), `"picky-sink"`) {
		t.Fatalf("sink: got %v", err)
	}

	env = weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.SinkFunc(weir.FromSlice(env, []int{1, 2, 3}), func(v int) error { panic("sink boom") }).Name("panicky-sink")
	if err := run(t, env); err == nil || !contains(err.Error(), `"panicky-sink"`, "sink boom", "goroutine ") {
		t.Fatalf("sink panic: got %v", err)
	}
}

// failOpen fails in Open.
type failOpen struct{ keyedFail }

func (failOpen) Open(weir.KeyedRuntimeContext[int64]) error { return errUser }

func TestErrorFromOpen(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2), quiet())
	src := weir.FromSlice(env, []int64{1})
	weir.Collect(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), failOpen{}).Name("unopenable"))
	err := run(t, env)
	if !errors.Is(err, errUser) || !strings.Contains(err.Error(), `"unopenable"`) {
		t.Fatalf("got %v", err)
	}
}

func TestPanicInKeySelectorFailsJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2), quiet())
	src := weir.Generate(env, 100, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	ks := weir.KeyBy(src, func(v int64) int64 {
		if v == 77 {
			panic("no key for 77")
		}
		return v
	})
	weir.Collect(weir.Process(ks, keyedFail{key: -1}))
	err := run(t, env)
	if err == nil || !contains(err.Error(), "panicked", "no key for 77") {
		t.Fatalf("got %v", err)
	}
}

func TestPanicInTimestampAssignerFailsJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	strat := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 {
		if v == 3 {
			panic("no timestamp for 3")
		}
		return v
	})
	weir.Collect(weir.FromSource[int64](env, sliceSrc([]int64{1, 2, 3}), strat, "stamped"))
	err := run(t, env)
	// The source's user code runs in the task, so the error may name the
	// whole chain ("stamped -> Collect").
	if err == nil || !contains(err.Error(), `"stamped`, "panicked", "no timestamp for 3") {
		t.Fatalf("got %v", err)
	}
}

// ptPanic panics in a processing-time timer; it reports each registration
// on registered.
type ptPanic struct{ registered chan<- int64 }

func (f ptPanic) ProcessElement(v int64, ctx weir.KeyedContext[int64], _ weir.Collector[int64]) error {
	at := ctx.CurrentProcessingTime() + 10
	ctx.TimerService().RegisterProcessingTimeTimer(at)
	f.registered <- at
	return nil
}

func (ptPanic) OnTimer(ts int64, ctx weir.OnTimerContext[int64], _ weir.Collector[int64]) error {
	panic(fmt.Sprintf("processing-time timer %d", ts))
}

func TestPanicInProcessingTimeTimerFailsJob(t *testing.T) {
	clk := weirtest.NewManualClock(100)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk), quiet())
	src := newChanSource[int64](1)
	in := weir.FromSource[int64](env, src, weir.NoWatermarks[int64](), "in")
	registered := make(chan int64, 1)
	weir.Collect(weir.Process(weir.KeyBy(in, func(v int64) int64 { return v }), ptPanic{registered}).Name("pt-panic"))
	h := start(t, env)
	src.send(t, h, 0, rec[int64](1, weir.NoTimestamp))
	clk.Set(recv(t, h, registered))
	err := wait(t, h)
	if err == nil || !contains(err.Error(), `"pt-panic"`, "subtask 0", "panicked", "processing-time timer 110") {
		t.Fatalf("got %v", err)
	}
}

// panicSource's reader panics.
type panicSource struct{}

func (panicSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{chanSplit(0)}, nil
}
func (panicSource) Reader(connector.Split) (connector.SplitReader[int], error) {
	return panicReader{}, nil
}

type panicReader struct{}

func (panicReader) Read(context.Context, []weir.Record[int]) ([]weir.Record[int], error) {
	panic("reader boom")
}
func (panicReader) Close() error { return nil }

// TestPanicInSourceFailsJob: user code that runs in a source's reader
// goroutine (a Generate function, a custom SplitReader) must fail the job
// like any other user code.
func TestPanicInSourceFailsJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.Generate(env, 100, 0, func(i int64) int64 {
		if i == 50 {
			panic("generator boom")
		}
		return i
	}, weir.NoWatermarks[int64]()))
	if err := run(t, env); err == nil || !contains(err.Error(), `"Generator"`, "panicked", "generator boom", "goroutine ") {
		t.Fatalf("generator: got %v", err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(1), quiet())
	weir.Collect(weir.FromSource[int](env, panicSource{}, weir.NoWatermarks[int](), "panicky-source"))
	if err := run(t, env); err == nil || !contains(err.Error(), `"panicky-source"`, "panicked", "reader boom") {
		t.Fatalf("source reader: got %v", err)
	}
}

func TestBuildErrorsNameTheOperator(t *testing.T) {
	cases := []struct {
		name  string
		build func(env *weir.Environment)
		want  []string
	}{
		{"nil keyed process", func(env *weir.Environment) {
			weir.Collect(weir.Process[int64, int64, int64](weir.KeyBy(weir.FromSlice(env, []int64{1}), func(v int64) int64 { return v }), nil))
		}, []string{"KeyedProcess", "nil"}},
		{"nil process", func(env *weir.Environment) {
			weir.Collect(weir.ProcessStream[int64, int64](weir.FromSlice(env, []int64{1}), nil))
		}, []string{"Process", "nil"}},
		{"nil flatMap", func(env *weir.Environment) {
			weir.Collect(weir.FlatMap[int64, int64](weir.FromSlice(env, []int64{1}), nil))
		}, []string{"FlatMap", "nil"}},
		{"nil key selector", func(env *weir.Environment) {
			weir.Collect(weir.KeyBy[int64](weir.FromSlice(env, []int64{1}), nil).Stream())
		}, []string{"KeyBy", "nil"}},
		{"nil keyed co-process", func(env *weir.Environment) {
			a := weir.KeyBy(weir.FromSlice(env, []int64{1}), func(v int64) int64 { return v })
			weir.Collect(weir.KeyedCoProcess[int64, int64, int64, int64](weir.ConnectKeyed(a, a), nil))
		}, []string{"KeyedCoProcess", "nil"}},
		{"nil sink", func(env *weir.Environment) {
			weir.SinkFunc[int64](weir.FromSlice(env, []int64{1}), nil)
		}, []string{"SinkFunc", "nil"}},
		{"operator parallelism above max", func(env *weir.Environment) {
			weir.Collect(weir.Map(weir.FromSlice(env, []int64{1}), func(v int64) int64 { return v }).Name("huge").SetParallelism(129))
		}, []string{"huge", "129"}},
		{"operator parallelism zero", func(env *weir.Environment) {
			weir.Collect(weir.Map(weir.FromSlice(env, []int64{1}), func(v int64) int64 { return v }).Name("none").SetParallelism(0))
		}, []string{"none", "0"}},
		{"zero idleness", func(env *weir.Environment) {
			weir.Collect(weir.Generate(env, 1, 0, func(i int64) int64 { return i }, weir.ForMonotonousTimestamps[int64]().WithIdleness(0)))
		}, []string{"Generator", "idleness"}},
		{"streams of two environments", func(env *weir.Environment) {
			other := weir.NewEnvironment(weir.WithParallelism(1))
			weir.Collect(weir.Union(weir.FromSlice(env, []int64{1}), weir.FromSlice(other, []int64{2})))
		}, []string{"union", "environments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			c.build(env)
			err := run(t, env)
			if err == nil || !contains(err.Error(), c.want...) {
				t.Fatalf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
	env := weir.NewEnvironment(weir.WithParallelism(200))
	weir.Collect(weir.FromSlice(env, []int{1}))
	if err := run(t, env); err == nil || !contains(err.Error(), "parallelism", "200") {
		t.Fatalf("parallelism above max: got %v", err)
	}
}

func TestEnvironmentRunsOneJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(weir.FromSlice(env, []int{1}))
	mustRun(t, env)
	if err := run(t, env); err == nil {
		t.Fatal("a second Execute on one environment ran")
	}
	if err := run(t, weir.NewEnvironment()); err == nil || !strings.Contains(err.Error(), "no operators") {
		t.Fatalf("empty job: got %v", err)
	}
}

// TestOperatorErrorIsPublic checks that a failure of a user function is
// found with errors.As as the public *weir.OperatorError, with its
// operator, subtask, cause and, for a panic, stack.
func TestOperatorErrorIsPublic(t *testing.T) {
	cause := errors.New("bad record")
	for _, panics := range []bool{false, true} {
		env := weir.NewEnvironment(weir.WithParallelism(1))
		out := weir.MapErr(weir.FromSlice(env, []int{1, 2, 3}), func(v int) (int, error) {
			if v == 2 {
				if panics {
					panic(cause)
				}
				return 0, cause
			}
			return v, nil
		})
		weir.Discard(out)
		err := env.Execute(context.Background(), "operator-error")
		var oe *weir.OperatorError
		if !errors.As(err, &oe) {
			t.Fatalf("panics=%v: errors.As(%v, *weir.OperatorError) = false", panics, err)
		}
		if oe.Operator != "Map" || oe.Subtask != 0 || !errors.Is(oe.Err, cause) || (oe.Stack != "") != panics {
			t.Errorf("panics=%v: got operator %q subtask %d err %v stack %t", panics, oe.Operator, oe.Subtask, oe.Err, oe.Stack != "")
		}
		if !errors.Is(err, cause) {
			t.Errorf("panics=%v: errors.Is(err, cause) = false: %v", panics, err)
		}
	}
}
