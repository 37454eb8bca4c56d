package weir_test

import (
	"math"
	"slices"
	"testing"

	"github.com/weirstream/weir"
)

func TestShuffleSpreadsRandomly(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 3000, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	// Subtask 0 generates [0, 1500): keep only those, then shuffle.
	skewed := weir.Filter(src, func(v int64) bool { return v < 1500 })
	res := weir.Collect(tagSubtasks(weir.Shuffle(skewed), 3))
	mustRun(t, env)
	got := res.Values()
	// Each subtask's share is binomial(1500, 1/3): 500 +- 18.
	if n := countBySubtask(got, 3); n[0] < 350 || n[1] < 350 || n[2] < 350 {
		t.Fatalf("shuffle: per-subtask counts %v, want about 500 each", n)
	}
	if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, 1500)) {
		t.Fatalf("shuffle lost or duplicated records: %d values", len(v))
	}
}

// TestRescalePointwise: with 2 upstream and 4 downstream subtasks, each
// upstream subtask sends round robin to its own two; with 4 and 2, each
// downstream subtask reads two upstream ones (Flink's POINTWISE pattern).
func TestRescalePointwise(t *testing.T) {
	for _, c := range []struct {
		up, down int
		// owner returns the downstream subtasks a value may reach: the
		// generator's subtask s emits [s*600/up, (s+1)*600/up).
		owners func(v int64) []int
	}{
		{2, 4, func(v int64) []int { return []int{int(v/300) * 2, int(v/300)*2 + 1} }},
		{4, 2, func(v int64) []int { return []int{int(v / 300)} }},
		{3, 3, func(v int64) []int { return []int{int(v / 200)} }},
	} {
		env := weir.NewEnvironment(weir.WithParallelism(c.up))
		src := weir.Generate(env, 600, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
		res := weir.Collect(tagSubtasks(weir.Rescale(src), c.down))
		mustRun(t, env)
		got := res.Values()
		for _, r := range got {
			if !slices.Contains(c.owners(r.V), r.Sub) {
				t.Fatalf("%d -> %d: record %d reached subtask %d, want one of %v", c.up, c.down, r.V, r.Sub, c.owners(r.V))
			}
		}
		for i, n := range countBySubtask(got, c.down) {
			if n != 600/c.down {
				t.Fatalf("%d -> %d: subtask %d got %d records, want %d (round robin)", c.up, c.down, i, n, 600/c.down)
			}
		}
		if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, 600)) {
			t.Fatalf("%d -> %d: values %v", c.up, c.down, v)
		}
	}
}

// TestRescaleWatermarksArePointwise: downstream subtask i of a 2 -> 2
// rescale edge reads only upstream subtask i, so its watermark is that
// subtask's alone; over a rebalance edge it would wait for both.
func TestRescaleWatermarksArePointwise(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithAutoWatermarkInterval(0))
	src := newChanSource[string](2)
	in := weir.FromSource(env, src, punctuatedStrategy[string](), "src")
	ch := make(chan seenWM, 16)
	weir.Collect(weir.ProcessStreamFunc(weir.Rescale(in), observeWM(ch)))
	h := start(t, env)
	src.send(t, h, 0, rec("a", 100))
	if got := recv(t, h, ch); got.V != "a" || got.WM != math.MinInt64 {
		t.Fatalf("first record: %+v", got)
	}
	src.send(t, h, 0, rec("a-sync", 100))
	if got := recv(t, h, ch); got.V != "a-sync" || got.WM != 100 {
		t.Fatalf("after a watermark of 100 on the only channel: %+v, want watermark 100", got)
	}
	src.close()
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionCustom(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := weir.Generate(env, 300, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	byMod := weir.PartitionCustom(src, func(k int64, n int) int { return int(k) % n }, func(v int64) int64 { return v % 7 })
	res := weir.Collect(tagSubtasks(byMod, 3))
	mustRun(t, env)
	got := res.Values()
	for _, r := range got {
		if want := int(r.V%7) % 3; r.Sub != want {
			t.Fatalf("record %d reached subtask %d, want %d", r.V, r.Sub, want)
		}
	}
	if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, 300)) {
		t.Fatalf("values %v", v)
	}
}

// TestPartitionCustomErrors: a partition out of range fails the job naming
// it and the record; nil functions fail the build.
func TestPartitionCustomErrors(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1), quiet())
	src := weir.FromSlice(env, []string{"ok", "bad"})
	weir.Collect(weir.Map(weir.PartitionCustom(src, func(k string, n int) int {
		if k == "bad" {
			return n
		}
		return 0
	}, func(s string) string { return s }), func(s string) string { return s }).SetParallelism(2))
	err := run(t, env)
	if err == nil || !contains(err.Error(), "custom partitioner returned partition 2 for 2 partitions (record bad)") {
		t.Fatalf("got %v", err)
	}
	env = weir.NewEnvironment()
	weir.Collect(weir.PartitionCustom[string](weir.FromSlice(env, []string{"a"}), nil, func(s string) string { return s }))
	if err := run(t, env); err == nil || !contains(err.Error(), "PartitionCustom", "is nil") {
		t.Fatalf("nil partitioner: %v", err)
	}
}
