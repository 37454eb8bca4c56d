package weir_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

func TestGenerateSplitsAcrossSubtasks(t *testing.T) {
	for _, c := range []struct{ n, p int }{{10, 3}, {2, 4}, {0, 2}, {1000, 2}} {
		env := weir.NewEnvironment(weir.WithParallelism(c.p))
		res := weir.Collect(tagSubtasks(weir.Generate(env, int64(c.n), 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), c.p))
		mustRun(t, env)
		got := res.Values()
		if v := sorted(valuesOf(got)); !slices.Equal(v, seq(0, int64(c.n))) {
			t.Fatalf("n=%d p=%d: values %v", c.n, c.p, v)
		}
		// Subtask s generates the contiguous range [n*s/p, n*(s+1)/p).
		for _, r := range got {
			if lo, hi := int64(c.n*r.Sub/c.p), int64(c.n*(r.Sub+1)/c.p); r.V < lo || r.V >= hi {
				t.Fatalf("n=%d p=%d: %d generated in subtask %d", c.n, c.p, r.V, r.Sub)
			}
		}
	}
}

// TestGenerateWithRate runs a generator limited to 1000 records per second
// on a manual clock that the test moves 2 ms at a time: record i is never
// produced before the clock reaches start+i ms, and after each step the
// generator catches up with what the rate allows (two more records).
func TestGenerateWithRate(t *testing.T) {
	const t0, n = 5000, 41
	clk := weirtest.NewManualClock(t0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk))
	type stamped struct{ i, at int64 }
	got := make(chan stamped, n)
	// The generator function runs when the record is produced.
	gen := weir.Generate(env, n, 1000, func(i int64) stamped { return stamped{i, clk.NowMillis()} }, weir.NoWatermarks[stamped]())
	weir.SinkFunc(gen, func(s stamped) error {
		got <- s
		return nil
	})
	h := start(t, env)
	next := int64(0)
	for now := int64(t0); next < n; now += 2 {
		clk.Set(now)
		for ; next < min(now-t0+1, n); next++ {
			s := recv(t, h, got)
			if s.i != next || s.at < t0+next {
				t.Fatalf("record %d produced at %d; want record %d, not before %d", s.i, s.at, next, t0+next)
			}
		}
	}
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("%d records too many", len(got))
	}
}

// TestGenerateWithRateRealClock checks that a small rate on the wall clock
// still finishes with every record.
func TestGenerateWithRateRealClock(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(weir.Generate(env, 20, 2000, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
	mustRun(t, env)
	if got := sorted(res.Values()); !slices.Equal(got, seq(0, 20)) {
		t.Fatalf("got %v", got)
	}
}

func TestGenerateUnboundedCancel(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	seen := make(chan int64, 1)
	weir.SinkFunc(weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), func(v int64) error {
		if v == 10_000 {
			seen <- v
		}
		return nil
	})
	h := start(t, env)
	recv(t, h, seen)
	h.Cancel()
	if err := wait(t, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after Cancel: %v", err)
	}
}

func TestGenerateNegativeRateFailsAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(weir.Generate(env, 1, -1, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()))
	if err := run(t, env); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Fatalf("got %v", err)
	}
}
