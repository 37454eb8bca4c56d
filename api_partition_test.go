package weir_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// countBySubtask returns how many records each of p subtasks saw.
func countBySubtask[T any](recs []At[T], p int) []int {
	n := make([]int, p)
	for _, r := range recs {
		n[r.Sub]++
	}
	return n
}

// valuesOf drops the subtasks.
func valuesOf[T any](recs []At[T]) []T {
	out := make([]T, len(recs))
	for i, r := range recs {
		out[i] = r.V
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func sorted[T interface{ ~int | ~int64 | ~string }](v []T) []T {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

func TestUnionMergesStreamsOfDifferentParallelism(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(3))
	a := weir.FromSlice(env, []int64{1000, 1001, 1002})
	b := weir.Generate(env, 50, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	c := weir.Map(weir.Generate(env, 10, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()).SetParallelism(3),
		func(v int64) int64 { return 2000 + v })
	res := weir.Collect(weir.Union(a, b, c))
	mustRun(t, env)
	want := append(append(seq(0, 50), 1000, 1001, 1002), seq(2000, 2010)...)
	if got := sorted(res.Values()); !slices.Equal(got, want) {
		t.Fatalf("union gave %v, want %v", got, want)
	}
}

func TestUnionWithItselfDuplicates(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	a := weir.Generate(env, 20, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	res := weir.Collect(weir.Union(a, a))
	mustRun(t, env)
	want := sorted(append(seq(0, 20), seq(0, 20)...))
	if got := sorted(res.Values()); !slices.Equal(got, want) {
		t.Fatalf("union of a stream with itself gave %v, want every value twice", got)
	}
}

// punctuated emits a watermark equal to every event's timestamp.
type punctuated[T any] struct{}

func (punctuated[T]) OnEvent(_ T, ts int64, out weir.WatermarkOutput) { out.EmitWatermark(ts) }
func (punctuated[T]) OnPeriodicEmit(weir.WatermarkOutput)             {}

func punctuatedStrategy[T any]() weir.WatermarkStrategy[T] {
	return weir.ForGenerator(func() weir.WatermarkGenerator[T] { return punctuated[T]{} })
}

// seenWM is what an observing function reports for each record.
type seenWM struct {
	V      string
	TS, WM int64
}

// observeWM passes records on and reports each with the operator's current
// watermark on ch.
func observeWM(ch chan<- seenWM) func(string, weir.Context, weir.Collector[string]) error {
	return func(v string, ctx weir.Context, out weir.Collector[string]) error {
		ts, _ := ctx.Timestamp()
		ch <- seenWM{V: v, TS: ts, WM: ctx.CurrentWatermark()}
		out.Collect(v)
		return nil
	}
}

// TestUnionOneValveOverAllChannels checks that the operator after a union
// of a parallelism-1 and a parallelism-2 source (three channels) takes the
// minimum watermark over all three channels. After each record the test
// sends a second record on the same channel and waits for it: the
// watermark of the first has then passed the valve, so the watermark the
// operator reports is exact.
func TestUnionOneValveOverAllChannels(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(0))
	srcA := newChanSource[string](1)
	srcB := newChanSource[string](2)
	a := weir.FromSource[string](env, srcA, punctuatedStrategy[string](), "A").SetParallelism(1)
	b := weir.FromSource[string](env, srcB, punctuatedStrategy[string](), "B").SetParallelism(2)
	ch := make(chan seenWM, 16)
	weir.Collect(weir.ProcessStreamFunc(weir.Union(a, b), observeWM(ch)))
	h := start(t, env)

	type step struct {
		src   int // 0: A, 1: B split 0 (subtask 0), 2: B split 1 (subtask 1)
		ts    int64
		after int64 // the valve's watermark once ts has passed it
	}
	steps := []step{
		{0, 100, math.MinInt64}, // B's channels have no watermark yet
		{1, 50, math.MinInt64},  // B subtask 1 still has none
		{2, 60, 50},
		{1, 80, 60},
		{2, 150, 80},
		{1, 300, 100},
		{0, 400, 150},
		{2, 500, 300},
	}
	send := func(src int, v string, ts int64) {
		if src == 0 {
			srcA.send(t, h, 0, rec(v, ts))
		} else {
			srcB.send(t, h, src-1, rec(v, ts))
		}
	}
	for i, s := range steps {
		v := fmt.Sprintf("r%d", i)
		send(s.src, v, s.ts)
		if got := recv(t, h, ch); got.V != v {
			t.Fatalf("step %d: saw %v, want %s", i, got, v)
		}
		// A sync record on the same channel, with a non-advancing timestamp.
		send(s.src, v+"-sync", s.ts)
		got := recv(t, h, ch)
		if got.V != v+"-sync" || got.WM != s.after {
			t.Fatalf("step %d (ts %d on source %d): saw %+v, want watermark %d", i, s.ts, s.src, got, s.after)
		}
	}
	srcA.close()
	srcB.close()
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
}

func TestRebalanceSpreadsRoundRobin(t *testing.T) {
	build := func(rebalance bool) []At[int64] {
		env := weir.NewEnvironment(weir.WithParallelism(2))
		src := weir.Generate(env, 400, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
		// Subtask 0 generates [0, 200), subtask 1 [200, 400): keep subtask 0's.
		skewed := weir.Filter(src, func(v int64) bool { return v < 200 })
		if rebalance {
			skewed = weir.Rebalance(skewed)
		}
		res := weir.Collect(tagSubtasks(skewed, 2))
		mustRun(t, env)
		return res.Values()
	}
	got := build(true)
	if n := countBySubtask(got, 2); n[0] != 100 || n[1] != 100 {
		t.Fatalf("rebalance: per-subtask counts %v, want [100 100]", n)
	}
	if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, 200)) {
		t.Fatalf("rebalance: values %v", v)
	}
	// Without Rebalance the edge is forward: everything stays in subtask 0.
	got = build(false)
	if n := countBySubtask(got, 2); n[0] != 200 || n[1] != 0 {
		t.Fatalf("default forward edge: per-subtask counts %v, want [200 0]", n)
	}
}

func TestBroadcastPartitionSendsToEverySubtask(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.FromSlice(env, []string{"a", "b", "c", "d", "e"})
	res := weir.Collect(tagSubtasks(weir.BroadcastPartition(src), 3))
	mustRun(t, env)
	per := map[int][]string{}
	for _, r := range res.Values() {
		per[r.Sub] = append(per[r.Sub], r.V)
	}
	for s := range 3 {
		if got := sorted(per[s]); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
			t.Fatalf("subtask %d saw %v, want every record", s, got)
		}
	}
}

func TestGlobalSendsToFirstSubtask(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 100, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	res := weir.Collect(tagSubtasks(weir.Global(src), 3))
	mustRun(t, env)
	got := res.Values()
	if n := countBySubtask(got, 3); n[0] != 100 {
		t.Fatalf("global: per-subtask counts %v, want all 100 in subtask 0", n)
	}
	if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, 100)) {
		t.Fatalf("global: values %v", v)
	}
}

func TestForwardKeepsSubtask(t *testing.T) {
	for _, chained := range []bool{true, false} {
		t.Run(fmt.Sprintf("chained=%v", chained), func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(3), weir.WithChaining(chained))
			src := weir.Generate(env, 300, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
			// Tag at the source's parallelism, then forward to a second tagger.
			first := tagSubtasks(src, 3)
			second := weir.ProcessStreamFunc(weir.Forward(first),
				func(v At[int64], _ weir.Context, out weir.Collector[[2]At[int64]]) error {
					out.Collect([2]At[int64]{v, {}})
					return nil
				})
			tagged := weir.Collect(tagSubtasks(second, 3))
			mustRun(t, env)
			got := tagged.Values()
			if len(got) != 300 {
				t.Fatalf("got %d records, want 300", len(got))
			}
			for _, r := range got {
				if r.Sub != r.V[0].Sub {
					t.Fatalf("record %d left subtask %d for subtask %d", r.V[0].V, r.V[0].Sub, r.Sub)
				}
				// Generate gives subtask s the range [100s, 100s+100).
				if want := int(r.V[0].V / 100); r.Sub != want {
					t.Fatalf("record %d in subtask %d, want %d", r.V[0].V, r.Sub, want)
				}
			}
		})
	}
}

func TestForwardWithDifferentParallelismFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 10, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	m := weir.Map(weir.Forward(src), func(v int64) int64 { return v }).Name("widen").SetParallelism(3)
	res := weir.Collect(m)
	err := run(t, env)
	if err == nil {
		t.Fatal("forward from parallelism 2 to 3 ran")
	}
	msg := err.Error()
	for _, want := range []string{"widen", "Generator", "forward", "2", "3"} {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(want)) {
			t.Fatalf("error %q does not mention %q", msg, want)
		}
	}
	if res.Len() != 0 {
		t.Fatalf("records flowed in a job that failed to build")
	}
}

// keySubtask records the subtask each key reaches.
type keySubtask struct{ sub int }

func (k *keySubtask) Open(ctx weir.KeyedRuntimeContext[int64]) error {
	k.sub = ctx.Subtask()
	return nil
}

func (k *keySubtask) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[At[int64]]) error {
	if ctx.CurrentKey() != v {
		return fmt.Errorf("current key %d for record %d", ctx.CurrentKey(), v)
	}
	out.Collect(At[int64]{Sub: k.sub, V: v})
	return nil
}

func (k *keySubtask) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[At[int64]]) error {
	return nil
}

// TestKeyByRoutesByKeyGroup checks the subtask of some keys against the
// key-group table of the Flink reference (V14: Long keys, max parallelism
// 128).
func TestKeyByRoutesByKeyGroup(t *testing.T) {
	want := map[int][]int64{ // parallelism -> subtask of keys 0, 1, 2, 3, 42
		2: {1, 1, 1, 1, 0},
		3: {2, 2, 2, 2, 0},
		4: {2, 2, 3, 3, 0},
	}
	keys := []int64{0, 1, 2, 3, 42}
	for p, subs := range want {
		env := weir.NewEnvironment(weir.WithParallelism(p))
		src := weir.FromSlice(env, keys)
		res := weir.Collect(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &keySubtask{}))
		mustRun(t, env)
		got := map[int64]int{}
		for _, r := range res.Values() {
			got[r.V] = r.Sub
		}
		for i, k := range keys {
			if got[k] != int(subs[i]) {
				t.Errorf("p=%d: key %d went to subtask %d, want %d", p, k, got[k], subs[i])
			}
		}
	}
}
