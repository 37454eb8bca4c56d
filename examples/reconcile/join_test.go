package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

// TestJoinAgreesWithCoProcess runs both versions on the same generated data
// at several parallelisms and checks that they report exactly the same
// matches and unmatched orders (the brute-force ones), with the timestamps
// each is documented to give, and no late records.
func TestJoinAgreesWithCoProcess(t *testing.T) {
	const n = 2500
	wantM, wantU := bruteForce(n)
	for _, p := range []int{1, 2, 3} {
		for _, opts := range [][]weir.Option{
			{weir.WithBufferSize(7), weir.WithAutoWatermarkInterval(time.Millisecond)},
			{}, // defaults
		} {
			t.Run(fmt.Sprintf("p=%d/options=%d", p, len(opts)), func(t *testing.T) {
				env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(p)}, opts...)...)
				cpMatches, cpUnmatched := Build(env, n)
				join := BuildJoin(env, n) // the same data, in the same job
				ctx := t.Context()        // no deadline: a hang ends at go test's -timeout
				if err := env.Execute(ctx, "both"); err != nil {
					t.Fatal(err)
				}

				// Matches: the same values; the join's carry max(order, payment).
				cpM := cpMatches.Values()
				slices.SortFunc(cpM, byID(func(m Match) int64 { return m.OrderID }))
				jRecs := join.Matches.Records()
				slices.SortFunc(jRecs, byID(func(r weir.Record[Match]) int64 { return r.Value.OrderID }))
				var jM []Match
				for _, r := range jRecs {
					jM = append(jM, r.Value)
					if want := max(r.Value.OrderTS, r.Value.PaymentTS); r.TS != want {
						t.Fatalf("join match %v at %d, want %d", r.Value, r.TS, want)
					}
				}
				if !slices.Equal(jM, cpM) || !slices.Equal(jM, wantM) {
					t.Fatalf("join: %d matches, coprocess: %d, brute force: %d; first difference: %s",
						len(jM), len(cpM), len(wantM), firstDiff(jM, wantM))
				}

				// Unmatched: the same orders; the join's at o.TS, the
				// coprocess version's at o.TS + Timeout.
				cpU := cpUnmatched.Records()
				slices.SortFunc(cpU, byID(func(r weir.Record[Order]) int64 { return r.Value.ID }))
				jU := join.Unmatched.Records()
				slices.SortFunc(jU, byID(func(r weir.Record[Order]) int64 { return r.Value.ID }))
				if !slices.Equal(cpU, wantU) {
					t.Fatalf("coprocess: %d unmatched, want %d", len(cpU), len(wantU))
				}
				shifted := make([]weir.Record[Order], len(jU))
				for i, r := range jU {
					shifted[i] = weir.Record[Order]{Value: r.Value, TS: r.TS + Timeout.Milliseconds()}
					if r.TS != r.Value.TS {
						t.Fatalf("join unmatched %v at %d, want its own timestamp", r.Value, r.TS)
					}
				}
				if !slices.Equal(shifted, wantU) {
					t.Fatalf("join: %d unmatched, want %d; first difference: %s", len(jU), len(wantU), firstDiff(shifted, wantU))
				}
				if join.LateOrders.Len() != 0 || join.LatePayments.Len() != 0 {
					t.Fatalf("late: %d orders, %d payments; the generated streams are never late",
						join.LateOrders.Len(), join.LatePayments.Len())
				}
			})
		}
	}
}

// everyEvent is a watermark generator that emits max timestamp - bound - 1
// with every event that raises the maximum, so that records come late for
// the join as soon as they are out of order by more than bound.
type everyEvent[T any] struct {
	bound, max int64
	seen       bool
}

func (g *everyEvent[T]) OnEvent(_ T, ts int64, out weir.WatermarkOutput) {
	if !g.seen || ts > g.max {
		g.max, g.seen = ts, true
		out.EmitWatermark(ts - g.bound - 1)
	}
}

func (g *everyEvent[T]) OnPeriodicEmit(weir.WatermarkOutput) {}

func perEvent[T any](bound time.Duration) weir.WatermarkStrategy[T] {
	return weir.ForGenerator(func() weir.WatermarkGenerator[T] { return &everyEvent[T]{bound: bound.Milliseconds()} })
}

// TestJoinWithLateRecords gives both streams watermarks far tighter than
// their real disorder, emitted with every event, so that orders and
// payments come late for the join (how many depends on how the two inputs
// interleave). Whatever the timing, every order is reported exactly once,
// as matched, unmatched or late; every match and every late record is a
// real one; and a late payment is never joined.
func TestJoinWithLateRecords(t *testing.T) {
	const n = 2500
	wantM, _ := bruteForce(n)
	paid := map[int64]Payment{}
	for i := range int64(n) {
		if p, ok := PaymentFor(i); ok {
			paid[i] = p
		}
	}
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(16), weir.WithAutoWatermarkInterval(time.Millisecond))
			res := buildJoin(env, n, perEvent[Order](time.Second), perEvent[Payment](time.Second))
			ctx := t.Context() // no deadline: a hang ends at go test's -timeout
			if err := env.Execute(ctx, "late"); err != nil {
				t.Fatal(err)
			}
			seen := map[int64]string{}
			report := func(id int64, how string) {
				if prev, ok := seen[id]; ok {
					t.Fatalf("order %d reported %s and %s", id, prev, how)
				}
				seen[id] = how
			}
			for _, m := range res.Matches.Values() {
				report(m.OrderID, "matched")
				if _, ok := slices.BinarySearchFunc(wantM, m.OrderID, func(w Match, id int64) int { return cmpInt(w.OrderID, id) }); !ok {
					t.Fatalf("%v is not a real match", m)
				}
			}
			for _, o := range res.Unmatched.Values() {
				report(o.ID, "unmatched")
			}
			for _, o := range res.LateOrders.Values() {
				report(o.ID, "late")
				if OrderAt(o.ID) != o {
					t.Fatalf("late order %v was never generated", o)
				}
			}
			if len(seen) != n {
				t.Fatalf("%d orders reported, want %d", len(seen), n)
			}
			for _, lp := range res.LatePayments.Values() {
				if paid[lp.OrderID] != lp {
					t.Fatalf("late payment %v was never generated", lp)
				}
				if seen[lp.OrderID] == "matched" {
					t.Fatalf("late payment %v was joined", lp)
				}
			}
			t.Logf("matched %d, unmatched %d, late orders %d, late payments %d",
				res.Matches.Len(), res.Unmatched.Len(), res.LateOrders.Len(), res.LatePayments.Len())
			if res.LateOrders.Len()+res.LatePayments.Len() == 0 {
				t.Errorf("no late records: the test checks nothing")
			}
		})
	}
}

// TestJoinAndCoProcessStepByStep drives both versions with the same
// records and watermarks in test harnesses and shows each documented
// difference: the bounds at ±15 minutes, the timestamps, and late records.
func TestJoinAndCoProcessStepByStep(t *testing.T) {
	const minute = 60_000
	type step struct {
		order   *Order
		payment *Payment
		wm      int64
	}
	ord := func(id, ts int64) step { return step{order: &Order{ID: id, TS: ts, Amount: 100 * id}} }
	pay := func(id, ts int64) step { return step{payment: &Payment{OrderID: id, TS: ts, Amount: 100 * id}} }
	wm := func(w int64) step { return step{wm: w} }
	steps := []step{
		ord(1, 10*minute), pay(1, 25*minute), // exactly 15 min after: matched
		ord(2, 10*minute), pay(2, 25*minute+1), // 1 ms too late: order 2 unmatched
		pay(3, 8*minute), ord(3, 10*minute), // paid 2 min before the order
		ord(4, 30*minute), pay(4, 15*minute), // paid exactly 15 min before
		wm(20 * minute),
		ord(5, 19*minute),     // late
		pay(6, 19*minute),     // late
		ord(6, 20*minute),     // on the watermark: not late
		wm(25 * minute),       // order 2's cleanup
		wm(34 * minute),       // late order 5's timer in Reconciler
		wm(35 * minute),       // order 6's cleanup in the join
		wm(weir.MaxWatermark), // the end
	}
	type harness interface {
		ProcessElement1(ch int, v Order, ts int64) error
		ProcessElement2(ch int, v Payment, ts int64) error
		ProcessWatermark1(ch int, wm int64) error
		ProcessWatermark2(ch int, wm int64) error
		TakeEvents() []weirtest.Event
		Close() error
	}
	// run feeds the steps and renders what comes out after each.
	run := func(h harness) [][]string {
		defer h.Close()
		var out [][]string
		for _, s := range steps {
			var err error
			switch {
			case s.order != nil:
				err = h.ProcessElement1(0, *s.order, s.order.TS)
			case s.payment != nil:
				err = h.ProcessElement2(0, *s.payment, s.payment.TS)
			default:
				if err = h.ProcessWatermark1(0, s.wm); err == nil {
					err = h.ProcessWatermark2(0, s.wm)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, e := range h.TakeEvents() {
				switch {
				case e.Kind == weirtest.KindRecord:
					m := e.Value.(Match)
					lines = append(lines, fmt.Sprintf("matched %d @%dm%+dms", m.OrderID, e.TS/minute, e.TS%minute))
				case e.Kind == weirtest.KindSide && e.Tag == UnmatchedTag.TagID():
					lines = append(lines, fmt.Sprintf("unmatched %d @%dm", e.Value.(Order).ID, e.TS/minute))
				case e.Kind == weirtest.KindSide && e.Tag == LateOrdersTag.TagID():
					lines = append(lines, fmt.Sprintf("late order %d", e.Value.(Order).ID))
				case e.Kind == weirtest.KindSide && e.Tag == LatePaymentsTag.TagID():
					lines = append(lines, fmt.Sprintf("late payment %d", e.Value.(Payment).OrderID))
				}
			}
			slices.Sort(lines)
			out = append(out, lines)
		}
		return out
	}
	joinH, err := weirtest.NewTwoInput(ReconcileJoin,
		weirtest.SideOutputs(UnmatchedTag, LateOrdersTag, LatePaymentsTag))
	if err != nil {
		t.Fatal(err)
	}
	cpH, err := weirtest.NewTwoInput(func(o weir.DataStream[Order], p weir.DataStream[Payment]) weir.DataStream[Match] {
		return weir.KeyedCoProcess(weir.ConnectKeyed(
			weir.KeyBy(o, func(o Order) int64 { return o.ID }),
			weir.KeyBy(p, func(p Payment) int64 { return p.OrderID })),
			&Reconciler{})
	}, weirtest.SideOutputs(UnmatchedTag))
	if err != nil {
		t.Fatal(err)
	}
	gotJoin, gotCP := run(joinH), run(cpH)
	wantJoin := [][]string{
		nil, {"matched 1 @25m+0ms"}, // max of both timestamps
		nil, nil,
		nil, {"matched 3 @10m+0ms"},
		nil, {"matched 4 @30m+0ms"},
		nil,
		{"late order 5"},
		{"late payment 6"},
		nil,
		{"unmatched 2 @10m"}, // at the order's own timestamp
		nil,
		{"unmatched 6 @20m"}, // payment 6 was late
		nil,
	}
	wantCP := [][]string{
		nil, {"matched 1 @25m+0ms"}, // the timestamp of the record that arrived second
		nil, nil,
		nil, {"matched 3 @10m+0ms"},
		nil, {"matched 4 @15m+0ms"},
		nil,
		nil,                    // no lateness check: order 5 waits, its timer (34 min) is not due yet
		nil,                    // payment 6 waits
		{"matched 6 @20m+0ms"}, // and matches order 6
		{"unmatched 2 @25m"},   // at the timer: o.TS + 15 min
		{"unmatched 5 @34m"},   // the late order, reported unmatched
		nil,
		nil,
	}
	for i := range steps {
		if !slices.Equal(gotJoin[i], wantJoin[i]) {
			t.Errorf("join, step %d: got %q, want %q", i, gotJoin[i], wantJoin[i])
		}
		if !slices.Equal(gotCP[i], wantCP[i]) {
			t.Errorf("coprocess, step %d: got %q, want %q", i, gotCP[i], wantCP[i])
		}
	}
}

func TestRunJoinMode(t *testing.T) {
	const n = 2000
	wantM, wantU := bruteForce(n)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-mode", "join", "-orders", fmt.Sprint(n), "-parallelism", "2", "-samples", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		fmt.Sprintf("reconciled %d orders with an interval join at parallelism 2", n),
		fmt.Sprintf("matched:   %d\n", len(wantM)),
		fmt.Sprintf("unmatched: %d ", len(wantU)),
		"late:      0 orders, 0 payments\n",
		"  matched   " + wantM[0].String() + "\n",
		"  matched   " + wantM[1].String() + "\n",
		"  unmatched " + wantU[0].Value.String() + "\n",
		"  unmatched " + wantU[1].Value.String() + "\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if lines := strings.Count(s, "\n"); lines != 8 {
		t.Errorf("%d lines, want 8:\n%s", lines, s)
	}
	if err := run(context.Background(), []string{"-mode", "window"}, &out); err == nil {
		t.Error("-mode window accepted")
	}
}
