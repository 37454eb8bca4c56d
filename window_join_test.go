package weir_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

type click struct {
	User int
	At   int64
}

// TestWindowJoinAndCoGroupAgainstBatch joins two generated streams in
// tumbling 10 ms windows at parallelism 3 and compares with a nested loop
// over the same data; coGroup is checked against per-window groups.
func TestWindowJoinAndCoGroupAgainstBatch(t *testing.T) {
	const n = 600
	mk := func(salt int64) func(i int64) click {
		return func(i int64) click { return click{User: int((i*7 + salt) % 13), At: i / 3} }
	}
	strategy := weir.ForBoundedOutOfOrderness[click](0).WithTimestampAssigner(func(c click, _ int64) int64 { return c.At })
	env := weir.NewEnvironment(weir.WithParallelism(3))
	a := weir.Generate(env, n, 0, mk(1), strategy)
	b := weir.Generate(env, n, 0, mk(5), strategy)
	user := func(c click) int { return c.User }
	jw := weir.WindowJoin(weir.KeyBy(a, user), weir.KeyBy(b, user), window.TumblingEventTime(10*time.Millisecond))
	pairs := weir.Collect(weir.Join(jw, func(x, y click) string { return fmt.Sprint(x, y) }))
	groups := weir.Collect(weir.CoGroup(jw, weir.CoGroupFunction[int, click, click, string, window.TimeWindow](
		func(k int, w window.TimeWindow, ls, rs []click, out weir.Collector[string]) error {
			out.Collect(fmt.Sprint(k, w.Start, len(ls), len(rs)))
			return nil
		})))
	if err := env.Execute(t.Context(), "join"); err != nil {
		t.Fatal(err)
	}
	var as, bs []click
	for i := range int64(n) {
		as, bs = append(as, mk(1)(i)), append(bs, mk(5)(i))
	}
	var want []string
	type wk struct {
		k     int
		start int64
	}
	count := map[wk][2]int{}
	for _, x := range as {
		c := count[wk{x.User, x.At / 10 * 10}]
		c[0]++
		count[wk{x.User, x.At / 10 * 10}] = c
		for _, y := range bs {
			if x.User == y.User && x.At/10 == y.At/10 {
				want = append(want, fmt.Sprint(x, y))
			}
		}
	}
	for _, y := range bs {
		c := count[wk{y.User, y.At / 10 * 10}]
		c[1]++
		count[wk{y.User, y.At / 10 * 10}] = c
	}
	got := pairs.Values()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("join: %d pairs, want %d", len(got), len(want))
	}
	for _, r := range pairs.Records() {
		if (r.TS+1)%10 != 0 {
			t.Fatalf("pair %v at %d: not a window max timestamp", r.Value, r.TS)
		}
	}
	var wantG []string
	for k, c := range count {
		wantG = append(wantG, fmt.Sprint(k.k, k.start, c[0], c[1]))
	}
	gotG := groups.Values()
	slices.Sort(gotG)
	slices.Sort(wantG)
	if !slices.Equal(gotG, wantG) {
		t.Fatalf("coGroup: %d groups, want %d", len(gotG), len(wantG))
	}
}
