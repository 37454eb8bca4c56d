package weir_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

type jrec struct {
	Key string
	ID  int
}

type jout struct {
	L, R int // -1: absent
	TS   int64
}

type oracleRec struct {
	left    bool
	rec     jrec
	ts      int64
	removed bool
	matched bool
	cleanup int64
}

// TestIntervalJoinAgainstOracle holds the interval join (inner and outer)
// against a brute-force model of Flink's rules on random inputs.
func TestIntervalJoinAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lower := rapid.Int64Range(-5, 5).Draw(t, "lower")
		upper := rapid.Int64Range(lower, lower+6).Draw(t, "upper")
		lexcl := rapid.Bool().Draw(t, "lowerExclusive")
		uexcl := rapid.Bool().Draw(t, "upperExclusive")
		kind := weir.OuterJoinKind(rapid.IntRange(0, 3).Draw(t, "kind"))
		L, U := lower, upper
		var opts []weir.IntervalJoinOption
		if lexcl {
			L++
			opts = append(opts, weir.LowerBoundExclusive())
		}
		if uexcl {
			U--
			opts = append(opts, weir.UpperBoundExclusive())
		}
		lateL, lateR := weir.NewOutputTag[jrec]("late-l"), weir.NewOutputTag[jrec]("late-r")
		opts = append(opts, weir.SideOutputLeftLateData(lateL), weir.SideOutputRightLateData(lateR))
		fn := func(l, r *jrec, ctx weir.JoinContext, out weir.Collector[jout]) error {
			o := jout{L: -1, R: -1, TS: ctx.Timestamp()}
			if l != nil {
				o.L = l.ID
			}
			if r != nil {
				o.R = r.ID
			}
			out.Collect(o)
			return nil
		}
		bounds := weir.Between(time.Duration(lower)*time.Millisecond, time.Duration(upper)*time.Millisecond)
		h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[jrec]) weir.DataStream[jout] {
			k := func(r jrec) string { return r.Key }
			if kind == 0 {
				return weir.IntervalJoinFunc(weir.KeyBy(a, k), weir.KeyBy(b, k), bounds,
					func(l, r jrec, ctx weir.JoinContext, out weir.Collector[jout]) error {
						return fn(&l, &r, ctx, out)
					}, opts...)
			}
			return weir.IntervalOuterJoinFunc(weir.KeyBy(a, k), weir.KeyBy(b, k), bounds, kind, fn, opts...)
		}, weirtest.SideOutputs(lateL, lateR))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		var wantLate []string
		wm := [2]int64{math.MinInt64, math.MinInt64}
		combined := int64(math.MinInt64)
		var stored []*oracleRec
		advance := func(to int64) {
			if to <= combined {
				return
			}
			combined = to
			for _, s := range stored {
				if !s.removed && s.cleanup <= combined {
					s.removed = true
					if !s.matched && ((s.left && (kind == weir.LeftOuter || kind == weir.FullOuter)) ||
						(!s.left && (kind == weir.RightOuter || kind == weir.FullOuter))) {
						o := jout{L: -1, R: -1, TS: s.ts}
						if s.left {
							o.L = s.rec.ID
						} else {
							o.R = s.rec.ID
						}
						want = append(want, fmt.Sprint(o))
					}
				}
			}
		}
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				left := rapid.Bool().Draw(t, "left")
				r := jrec{Key: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"), ID: i}
				ts := rapid.Int64Range(0, 30).Draw(t, "ts")
				var err error
				if left {
					err = h.ProcessElement1(0, r, ts)
				} else {
					err = h.ProcessElement2(0, r, ts)
				}
				if err != nil {
					t.Fatal(err)
				}
				if ts < combined {
					wantLate = append(wantLate, fmt.Sprint(left, r.ID, ts))
					continue
				}
				s := &oracleRec{left: left, rec: r, ts: ts}
				if left {
					s.cleanup = ts + max(U, 0)
				} else {
					s.cleanup = ts + max(-L, 0)
				}
				for _, o := range stored {
					if o.removed || o.left == left || o.rec.Key != r.Key {
						continue
					}
					lts, rts, lid, rid := ts, o.ts, r.ID, o.rec.ID
					if !left {
						lts, rts, lid, rid = o.ts, ts, o.rec.ID, r.ID
					}
					if lts+L <= rts && rts <= lts+U {
						o.matched, s.matched = true, true
						want = append(want, fmt.Sprint(jout{L: lid, R: rid, TS: max(lts, rts)}))
					}
				}
				stored = append(stored, s)
			default:
				in := rapid.IntRange(0, 1).Draw(t, "input")
				w := rapid.Int64Range(0, 35).Draw(t, "wm")
				var err error
				if in == 0 {
					err = h.ProcessWatermark1(0, w)
				} else {
					err = h.ProcessWatermark2(0, w)
				}
				if err != nil {
					t.Fatal(err)
				}
				wm[in] = max(wm[in], w)
				advance(min(wm[0], wm[1]))
			}
		}
		if err := h.EndInput(); err != nil {
			t.Fatal(err)
		}
		advance(math.MaxInt64)
		var got []string
		for _, r := range h.Output() {
			if r.TS != r.Value.TS {
				t.Fatalf("record %v carries timestamp %d", r.Value, r.TS)
			}
			got = append(got, fmt.Sprint(r.Value))
		}
		var gotLate []string
		for _, r := range weirtest.SideOutputOf(h.Events(), lateL) {
			gotLate = append(gotLate, fmt.Sprint(true, r.Value.ID, r.TS))
		}
		for _, r := range weirtest.SideOutputOf(h.Events(), lateR) {
			gotLate = append(gotLate, fmt.Sprint(false, r.Value.ID, r.TS))
		}
		slices.Sort(want)
		slices.Sort(got)
		slices.Sort(wantLate)
		slices.Sort(gotLate)
		if !slices.Equal(want, got) {
			t.Fatalf("bounds [%d,%d] kind %d\nwant %s\ngot  %s", L, U, kind, strings.Join(want, " "), strings.Join(got, " "))
		}
		if !slices.Equal(wantLate, gotLate) {
			t.Fatalf("late: want %v got %v", wantLate, gotLate)
		}
		_ = h.Close()
	})
}

func TestIntervalJoinInvertedBoundsFailAtBuild(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	a := weir.KeyBy(weir.FromSlice(env, []int{1}), func(v int) int { return v })
	b := weir.KeyBy(weir.FromSlice(env, []int{1}), func(v int) int { return v })
	j := weir.IntervalJoinFunc(a, b, weir.Between(10*time.Minute, 0),
		func(l, r int, _ weir.JoinContext, out weir.Collector[int]) error { return nil })
	weir.Discard(j)
	err := env.Execute(t.Context(), "inverted")
	if err == nil || !strings.Contains(err.Error(), "IntervalJoin") || !strings.Contains(err.Error(), "lower bound") {
		t.Fatalf("got %v", err)
	}
}

// TestIntervalJoinOrdersPayments is the README's worked example: payments
// 0 to 10 minutes after their order, with orders on the left.
func TestIntervalJoinOrdersPayments(t *testing.T) {
	type ev struct {
		Order int
		At    int64
	}
	min := int64(time.Minute / time.Millisecond)
	env := weir.NewEnvironment(weir.WithParallelism(2))
	strategy := weir.ForBoundedOutOfOrderness[ev](0).WithTimestampAssigner(func(e ev, _ int64) int64 { return e.At })
	orders := weir.FromRecords(env, []weir.Record[ev]{{Value: ev{1, 0}}, {Value: ev{2, 0}}, {Value: ev{3, 0}}}, strategy)
	payments := weir.FromRecords(env, []weir.Record[ev]{{Value: ev{1, 5 * min}}, {Value: ev{2, 11 * min}}, {Value: ev{3, -1 * min}}}, strategy)
	k := func(e ev) int { return e.Order }
	res := weir.Collect(weir.IntervalJoinFunc(weir.KeyBy(orders, k), weir.KeyBy(payments, k), weir.Between(0, 10*time.Minute),
		func(o, p ev, _ weir.JoinContext, out weir.Collector[int]) error {
			out.Collect(o.Order)
			return nil
		}))
	if err := env.Execute(t.Context(), "payments"); err != nil {
		t.Fatal(err)
	}
	if got := res.Values(); !slices.Equal(got, []int{1}) {
		t.Fatalf("matched orders %v, want [1]", got)
	}
}

type countingJoin struct {
	n              int
	opened, closed bool
	seen           *atomic.Int64
	subtasks       *sync.Map
}

func (c *countingJoin) Open(ctx weir.RuntimeContext) error {
	c.opened = true
	c.subtasks.Store(ctx.Subtask(), c)
	return nil
}

func (c *countingJoin) Close() error { c.closed = true; return nil }

func (c *countingJoin) ProcessElement(l, r int, _ weir.JoinContext, out weir.Collector[int]) error {
	c.n++ // per-subtask state: a data race if subtasks shared the instance
	c.seen.Add(1)
	return nil
}

// TestIntervalJoinFunctionPerSubtask checks that each subtask gets its own
// copy of a pointer-to-struct join function, opened and closed.
func TestIntervalJoinFunctionPerSubtask(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	strategy := weir.ForMonotonousTimestamps[int]().WithTimestampAssigner(func(v int, _ int64) int64 { return int64(v) })
	a := weir.Generate(env, 2000, 0, func(i int64) int { return int(i) }, strategy)
	b := weir.Generate(env, 2000, 0, func(i int64) int { return int(i) }, strategy)
	id := func(v int) int { return v }
	var seen atomic.Int64
	var subs sync.Map
	fn := &countingJoin{seen: &seen, subtasks: &subs}
	weir.Discard(weir.IntervalJoin(weir.KeyBy(a, id), weir.KeyBy(b, id), weir.Between(0, 0), fn))
	if err := env.Execute(t.Context(), "per-subtask"); err != nil {
		t.Fatal(err)
	}
	total := 0
	subs.Range(func(_, v any) bool {
		c := v.(*countingJoin)
		if c == fn || !c.opened || !c.closed {
			t.Errorf("subtask function shared with the original or not opened/closed: %+v", c)
		}
		total += c.n
		return true
	})
	if total != 2000 || seen.Load() != 2000 {
		t.Fatalf("per-subtask counts sum to %d (seen %d), want 2000", total, seen.Load())
	}
}
