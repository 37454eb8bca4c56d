package weir_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

var (
	oddTag  = weir.NewOutputTag[string]("odd")
	bigTag  = weir.NewOutputTag[int64]("big")
	lateTag = weir.NewOutputTag[string]("late")
)

// splitOddEven sends even values to the main output (times 10), odd ones
// to "odd" as strings and values above 100 also to "big".
func splitOddEven(v int64, ctx weir.Context, out weir.Collector[int64]) error {
	if v%2 == 0 {
		out.Collect(v * 10)
	} else {
		weir.Output(ctx, oddTag, strconv.FormatInt(v, 10))
	}
	if v > 100 {
		weir.Output(ctx, bigTag, v)
	}
	return nil
}

func TestSideOutputFromProcessStream(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.FromRecords(env, []weir.Record[int64]{rec[int64](1, 10), rec[int64](2, 20), rec[int64](3, 30), rec[int64](4, 40), rec[int64](101, 50), rec[int64](102, 60)},
		weir.NoWatermarks[int64]())
	main := weir.ProcessStreamFunc(src, splitOddEven).SetParallelism(1)
	mainRes := weir.Collect(main)
	odd := weir.SideOutput(main, oddTag)
	oddRes := weir.Collect(odd)                                                       // chained, parallelism 2 vs 1: network
	oddAgain := weir.Collect(weir.Map(odd, func(s string) string { return s + "!" })) // a second consumer of the tag
	big := weir.Collect(weir.SideOutput(main, bigTag))
	mustRun(t, env)

	check := func(name string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("main", sortRecords(mainRes.Records()), []weir.Record[int64]{rec[int64](1020, 60), rec[int64](20, 20), rec[int64](40, 40)})
	// Side output records carry the input record's timestamp.
	check("odd", sortRecords(oddRes.Records()), []weir.Record[string]{rec("1", 10), rec("101", 50), rec("3", 30)})
	check("odd again", sorted(oddAgain.Values()), []string{"1!", "101!", "3!"})
	check("big", sortRecords(big.Records()), []weir.Record[int64]{rec[int64](101, 50), rec[int64](102, 60)})
}

func sortRecords[T any](r []weir.Record[T]) []weir.Record[T] {
	slices.SortFunc(r, func(a, b weir.Record[T]) int { return strings.Compare(fmt.Sprint(a.Value), fmt.Sprint(b.Value)) })
	return r
}

func TestSideOutputWithoutConsumerIsDropped(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []int64{1, 2, 3, 4})
	main := weir.ProcessStreamFunc(src, splitOddEven)
	res := weir.Collect(main)
	mustRun(t, env)
	if got := sorted(res.Values()); !slices.Equal(got, []int64{20, 40}) {
		t.Fatalf("main output %v", got)
	}
}

func TestSideOutputRecordWithoutTimestamp(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []int64{1})
	main := weir.ProcessStreamFunc(src, splitOddEven)
	res := weir.Collect(weir.SideOutput(main, oddTag))
	mustRun(t, env)
	if got := res.Records(); len(got) != 1 || got[0].TS != weir.NoTimestamp {
		t.Fatalf("side output of a record without timestamp: %v", got)
	}
}

// lateSplitter is a keyed function: on-time records register a timer at
// ts+5; late records (ts <= watermark) go to the "late" side output; timers
// emit the key on the main output and "fired" on the "late" output too.
type lateSplitter struct{}

func (lateSplitter) ProcessElement(v string, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	ts, _ := ctx.Timestamp()
	if ts <= ctx.CurrentWatermark() {
		weir.Output(ctx, lateTag, "late "+v)
		return nil
	}
	ctx.TimerService().RegisterEventTimeTimer(ts + 5)
	out.Collect("on time " + v)
	return nil
}

func (lateSplitter) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("timer %s@%d", ctx.CurrentKey(), ts))
	weir.Output(ctx, lateTag, fmt.Sprintf("side timer %s@%d", ctx.CurrentKey(), ts))
	return nil
}

func TestSideOutputFromKeyedProcess(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	// Punctuated watermarks: each record's timestamp becomes the watermark,
	// so a@3 after a@10 is late (3 <= 10), and so is the second a@20.
	recs := []weir.Record[string]{rec("a", 10), rec("a", 3), rec("a", 20), rec("a", 20)}
	src := weir.FromRecords(env, recs, punctuatedStrategy[string]())
	ks := weir.KeyBy(src, func(v string) string { return v })
	main := weir.Process(ks, lateSplitter{})
	mainRes := weir.Collect(main)
	side := weir.Collect(weir.SideOutput(main, lateTag))
	mustRun(t, env)
	wantMain := []weir.Record[string]{rec("on time a", 10), rec("on time a", 20), rec("timer a@15", 15), rec("timer a@25", 25)}
	if got := mainRes.Records(); fmt.Sprint(got) != fmt.Sprint(wantMain) {
		t.Errorf("main: got %v, want %v", got, wantMain)
	}
	// The record at 20 after the watermark 20 is late; a timer's side
	// output carries the timer's time.
	wantSide := []weir.Record[string]{rec("late a", 3), rec("side timer a@15", 15), rec("late a", 20), rec("side timer a@25", 25)}
	if got := side.Records(); fmt.Sprint(got) != fmt.Sprint(wantSide) {
		t.Errorf("side: got %v, want %v", got, wantSide)
	}
}

func TestSideOutputWrongTypeFailsJob(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	src := weir.FromSlice(env, []int64{1, 2})
	wrong := weir.NewOutputTag[int64]("odd") // same id as oddTag (string)
	main := weir.ProcessStreamFunc(src,
		func(v int64, ctx weir.Context, out weir.Collector[int64]) error {
			weir.Output(ctx, wrong, v)
			return nil
		}).Name("mistyped")
	weir.Collect(weir.SideOutput(main, oddTag))
	err := run(t, env)
	if err == nil {
		t.Fatal("emitting an int64 to a string side output did not fail the job")
	}
	for _, want := range []string{"mistyped", `"odd"`, "string", "int64", "subtask 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestSideOutputTagWithTwoTypesFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []int64{1})
	main := weir.ProcessStreamFunc(src, splitOddEven).Name("twotypes")
	weir.Collect(weir.SideOutput(main, oddTag))
	weir.Collect(weir.SideOutput(main, weir.NewOutputTag[int]("odd")))
	err := run(t, env)
	if err == nil || !strings.Contains(err.Error(), "twotypes") || !strings.Contains(err.Error(), "string") || !strings.Contains(err.Error(), "int") {
		t.Fatalf("got %v, want a build error naming the operator and both types", err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(1))
	main = weir.ProcessStreamFunc(weir.FromSlice(env, []int64{1}), splitOddEven)
	weir.Collect(weir.SideOutput(main, weir.NewOutputTag[string]("")))
	if err := run(t, env); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty tag id: got %v", err)
	}
}

// TestSideOutputCarriesWatermarks checks that a side-output edge receives
// the operator's watermarks: each record reaches the side consumer after the
// watermark of the record before it (punctuated watermarks), chained and
// over the network.
func TestSideOutputCarriesWatermarks(t *testing.T) {
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("consumer parallelism %d", p), func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			recs := []weir.Record[string]{rec("x", 10), rec("y", 20), rec("z", 30)}
			src := weir.FromRecords(env, recs, punctuatedStrategy[string]())
			all := weir.ProcessStreamFunc(src,
				func(v string, ctx weir.Context, _ weir.Collector[string]) error {
					weir.Output(ctx, oddTag, v)
					return nil
				})
			side := weir.SideOutput(all, oddTag) // chained at parallelism 1
			if p > 1 {
				side = weir.Rebalance(side)
			}
			seen := weir.ProcessStreamFunc(side,
				func(v string, ctx weir.Context, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%s wm=%d", v, ctx.CurrentWatermark()))
					return nil
				}).SetParallelism(p)
			res := weir.Collect(seen)
			mustRun(t, env)
			got := sorted(res.Values())
			// Rebalanced over two subtasks, y goes to another subtask than
			// x, which has received the watermark 10 all the same.
			want := []string{fmt.Sprintf("x wm=%d", weir.MinWatermark), "y wm=10", "z wm=20"}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

// TestUnionOfMainAndSideOutput unions an operator's main output with its
// own side output.
func TestUnionOfMainAndSideOutput(t *testing.T) {
	for _, p := range []int{1, 2} {
		env := weir.NewEnvironment(weir.WithParallelism(p))
		main := weir.ProcessStreamFunc(weir.FromSlice(env, []int64{1, 2, 3, 4}), splitOddEven)
		odd := weir.Map(weir.SideOutput(main, oddTag), func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return -n })
		both := weir.Collect(weir.Union(main, odd))
		mainOnly := weir.Collect(main)
		mustRun(t, env)
		if got := sorted(both.Values()); !slices.Equal(got, []int64{-3, -1, 20, 40}) {
			t.Fatalf("p=%d: union %v", p, got)
		}
		if got := sorted(mainOnly.Values()); !slices.Equal(got, []int64{20, 40}) {
			t.Fatalf("p=%d: main %v", p, got)
		}
	}
}
