package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bruteForce computes the expected result directly from the generators.
func bruteForce(n int) (matches []Match, unmatched []weir.Record[Order]) {
	for i := range int64(n) {
		o := OrderAt(i)
		// In time: at most 15 minutes apart, both bounds inclusive (written
		// out here rather than calling the job's own check).
		if p, ok := PaymentFor(i); ok && p.TS-o.TS <= 15*60*1000 && o.TS-p.TS <= 15*60*1000 {
			matches = append(matches, Match{OrderID: i, OrderTS: o.TS, PaymentTS: p.TS, Amount: p.Amount})
			continue
		}
		unmatched = append(unmatched, weir.Record[Order]{Value: o, TS: o.TS + Timeout.Milliseconds()})
	}
	return matches, unmatched
}

func byID[T any](id func(T) int64) func(a, b T) int {
	return func(a, b T) int { return cmpInt(id(a), id(b)) }
}

// TestReconcileMatchesBruteForce runs the job at several parallelisms, with
// small batches and a 1 ms watermark interval so that timers fire and state
// is cleaned up while data still flows, and compares every match and every
// unmatched order (with its timer timestamp) with the brute-force result.
func TestReconcileMatchesBruteForce(t *testing.T) {
	const n = 4000
	wantM, wantU := bruteForce(n)
	for _, p := range []int{1, 2, 3, 4} {
		for _, opts := range [][]weir.Option{
			{weir.WithBufferSize(7), weir.WithAutoWatermarkInterval(time.Millisecond)},
			{}, // defaults
		} {
			t.Run(fmt.Sprintf("p=%d/options=%d", p, len(opts)), func(t *testing.T) {
				env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(p)}, opts...)...)
				matches, unmatched := Build(env, n)
				ctx := t.Context() // no deadline: a hang ends at go test's -timeout
				if err := env.Execute(ctx, "reconcile"); err != nil {
					t.Fatal(err)
				}
				gotM := matches.Values()
				slices.SortFunc(gotM, byID(func(m Match) int64 { return m.OrderID }))
				if !slices.Equal(gotM, wantM) {
					t.Fatalf("%d matches, want %d; first difference: %s", len(gotM), len(wantM), firstDiff(gotM, wantM))
				}
				gotU := unmatched.Records()
				slices.SortFunc(gotU, byID(func(r weir.Record[Order]) int64 { return r.Value.ID }))
				if !slices.Equal(gotU, wantU) {
					t.Fatalf("%d unmatched, want %d; first difference: %s", len(gotU), len(wantU), firstDiff(gotU, wantU))
				}
			})
		}
	}
}

func firstDiff[T comparable](got, want []T) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// TestGeneratedDataCoversEveryCase makes sure the brute-force comparison
// exercises every path: payments before and after their order, payments
// exactly at the limit and 1 ms too late, later payments, unpaid orders.
func TestGeneratedDataCoversEveryCase(t *testing.T) {
	const n = 4000
	counts := map[string]int{}
	for i := range int64(n) {
		o := OrderAt(i)
		p, ok := PaymentFor(i)
		d := p.TS - o.TS
		switch {
		case !ok:
			counts["unpaid"]++
		case d == Timeout.Milliseconds():
			counts["at the limit"]++
		case d == Timeout.Milliseconds()+1:
			counts["1 ms late"]++
		case d > Timeout.Milliseconds():
			counts["late"]++
		case d < 0:
			counts["early"]++
		default:
			counts["on time"]++
		}
	}
	t.Logf("%v", counts)
	for _, name := range []string{"unpaid", "at the limit", "1 ms late", "late", "early", "on time"} {
		if counts[name] < 5 {
			t.Errorf("only %d %s payments in %d orders", counts[name], name, n)
		}
	}
	if frac := float64(counts["on time"]) / n; frac < 0.85 || frac > 0.95 {
		t.Errorf("%.2f of the orders are paid within 0..10 min, want about 0.9", frac)
	}
}

// TestStreamsAreNeverLate checks the premise of the exact comparison: in
// index order (each generator subtask reads a contiguous range of it), no
// record is as old as the watermark before it (max - d - 1).
func TestStreamsAreNeverLate(t *testing.T) {
	const n = 100_000
	check := func(name string, d time.Duration, ts func(i int64) int64) {
		maxTS := int64(-1 << 62)
		for i := range int64(n) {
			v := ts(i)
			if v <= maxTS-d.Milliseconds()-1 {
				t.Fatalf("%s %d (ts %d) is late: max before it %d, out-of-orderness %v", name, i, v, maxTS, d)
			}
			maxTS = max(maxTS, v)
		}
	}
	check("order", orderOutOfOrderness, func(i int64) int64 { return OrderAt(i).TS })
	check("payment", paymentOutOfOrderness, func(i int64) int64 { return paymentAt(i).TS })
}

func TestRunPrintsCounts(t *testing.T) {
	const n = 2000
	wantM, wantU := bruteForce(n)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-orders", fmt.Sprint(n), "-parallelism", "2", "-samples", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		fmt.Sprintf("reconciled %d orders at parallelism 2", n),
		fmt.Sprintf("matched:   %d\n", len(wantM)),
		fmt.Sprintf("unmatched: %d ", len(wantU)),
		"  matched   " + wantM[0].String() + "\n",
		"  matched   " + wantM[1].String() + "\n",
		"  unmatched " + wantU[0].Value.String(),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if lines := strings.Count(s, "\n"); lines != 7 {
		t.Errorf("%d lines, want 7:\n%s", lines, s)
	}
	if err := run(context.Background(), []string{"-orders", "-1"}, &out); err == nil {
		t.Error("negative -orders accepted")
	}
}
