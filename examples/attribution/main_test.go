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
	"github.com/weirstream/weir/weirtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testData = Data{Users: 5000}

// bruteForce computes the expected attributions, in click id order, with
// the timestamps they must carry (the click's), directly from the
// generators: for each click, every impression of its user at most 30
// minutes before it (both ends inclusive), the latest by timestamp, then id.
func bruteForce(d Data, n int) []weir.Record[Attribution] {
	byUser := map[int64][]Impression{}
	for j := range ImpressionsPerClick * int64(n) {
		imp := d.Impression(j)
		byUser[imp.User] = append(byUser[imp.User], imp)
	}
	out := make([]weir.Record[Attribution], n)
	for i := range int64(n) {
		c := d.Click(i)
		a := Attribution{Click: c}
		for _, imp := range byUser[c.User] {
			if imp.TS > c.TS || imp.TS < c.TS-30*60*1000 {
				continue
			}
			if !a.Attributed || imp.TS > a.Impression.TS || imp.TS == a.Impression.TS && imp.ID > a.Impression.ID {
				a.Impression, a.Attributed = imp, true
			}
		}
		out[i] = weir.Record[Attribution]{Value: a, TS: c.TS}
	}
	return out
}

// TestAttributionMatchesBruteForce runs the job at parallelism 1 and 3,
// with small batches and a 1 ms watermark interval (timers fire and state
// is cleaned up while data still flows) and with the defaults, and compares
// every attribution and its timestamp with the brute-force result.
func TestAttributionMatchesBruteForce(t *testing.T) {
	const n = 2000
	want := bruteForce(testData, n)
	for _, p := range []int{1, 3} {
		for _, opts := range [][]weir.Option{
			{weir.WithBufferSize(7), weir.WithAutoWatermarkInterval(time.Millisecond)},
			{}, // defaults
		} {
			t.Run(fmt.Sprintf("p=%d/options=%d", p, len(opts)), func(t *testing.T) {
				env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(p)}, opts...)...)
				res := Build(env, testData, n)
				ctx := t.Context() // no deadline: a hang ends at go test's -timeout
				if err := env.Execute(ctx, "attribution"); err != nil {
					t.Fatal(err)
				}
				got := res.Records()
				slices.SortFunc(got, func(a, b weir.Record[Attribution]) int { return cmpInt(a.Value.Click.ID, b.Value.Click.ID) })
				if !slices.Equal(got, want) {
					t.Fatalf("%d attributions, want %d; first difference: %s", len(got), len(want), firstDiff(got, want))
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
// exercises every path: clicks attributed to the impression they follow,
// to a later impression of the same user, at the window's edges, with
// several candidates, and clicks without any impression.
func TestGeneratedDataCoversEveryCase(t *testing.T) {
	const n = 2000
	counts := map[string]int{}
	byUser := map[int64][]Impression{}
	for j := range ImpressionsPerClick * int64(n) {
		imp := testData.Impression(j)
		byUser[imp.User] = append(byUser[imp.User], imp)
	}
	for i, r := range bruteForce(testData, n) {
		a := r.Value
		candidates := 0
		for _, imp := range byUser[a.Click.User] {
			if d := a.Click.TS - imp.TS; d >= 0 && d <= Window.Milliseconds() {
				candidates++
			}
		}
		followed := testData.Impression(ImpressionsPerClick * int64(i))
		switch {
		case !a.Attributed:
			counts["unattributed"]++
		case a.Impression.ID == followed.ID:
			counts["the followed impression"]++
		default:
			counts["another impression"]++
		}
		if candidates > 1 {
			counts["several candidates"]++
		}
		if a.Attributed && a.Impression.ID == followed.ID && candidates > 1 {
			counts["the followed one among several"]++
		}
		if a.Attributed {
			switch a.Click.TS - a.Impression.TS {
			case 0:
				counts["at the click's time"]++
			case Window.Milliseconds():
				counts["exactly 30 min before"]++
			}
		}
		if a.Click.User == followed.User && a.Click.TS-followed.TS == Window.Milliseconds()+1 {
			counts["1 ms too early"]++
		}
	}
	t.Logf("%v", counts)
	for _, name := range []string{"unattributed", "the followed impression", "another impression", "several candidates",
		"the followed one among several", "at the click's time", "exactly 30 min before", "1 ms too early"} {
		if counts[name] < 10 {
			t.Errorf("only %d clicks of kind %q in %d", counts[name], name, n)
		}
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
	check("click", clickOutOfOrderness, func(i int64) int64 { return testData.Click(i).TS })
	check("impression", impressionOutOfOrderness, func(i int64) int64 { return testData.Impression(i).TS })
}

// TestLatestInHarness drives the join and Latest step by step for one
// user: the window's edges, a tie on the timestamp, an impression after
// the click, a click without impressions, and when each result comes out.
func TestLatestInHarness(t *testing.T) {
	h, err := weirtest.NewTwoInput(func(c weir.DataStream[Click], i weir.DataStream[Impression]) weir.DataStream[Attribution] {
		return Attribute(Candidates(c, i))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const minute = 60_000
	imp := func(id, ts int64) {
		if err := h.ProcessElement2(0, Impression{ID: id, User: 7, TS: ts}, ts); err != nil {
			t.Fatal(err)
		}
	}
	click := func(id, ts int64) {
		if err := h.ProcessElement1(0, Click{ID: id, User: 7, TS: ts}, ts); err != nil {
			t.Fatal(err)
		}
	}
	wm := func(w int64) {
		if err := h.ProcessWatermark1(0, w); err != nil {
			t.Fatal(err)
		}
		if err := h.ProcessWatermark2(0, w); err != nil {
			t.Fatal(err)
		}
	}
	results := func() []string {
		var out []string
		for _, e := range h.TakeEvents() {
			if e.Kind == weirtest.KindRecord {
				a := e.Value.(Attribution)
				if a.Attributed {
					out = append(out, fmt.Sprintf("click %d <- %d @%d", a.Click.ID, a.Impression.ID, e.TS))
				} else {
					out = append(out, fmt.Sprintf("click %d <- none @%d", a.Click.ID, e.TS))
				}
			}
		}
		return out
	}
	expect := func(want ...string) {
		t.Helper()
		if got := results(); !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	}

	imp(1, 10*minute)     // exactly 30 min before click 100
	imp(2, 10*minute-1)   // 1 ms too early for click 100
	imp(3, 25*minute)     // a tie on the timestamp with impression 4:
	imp(4, 25*minute)     // the larger id wins
	click(100, 40*minute) // candidates 1, 3, 4
	imp(5, 40*minute)     // at the click's time: the latest
	imp(6, 40*minute+1)   // after the click
	click(101, 80*minute) // nothing in [50, 80] min
	expect()
	wm(40*minute - 1)
	expect()
	wm(40 * minute) // click 100's timers fire
	expect("click 100 <- 5 @2400000")
	click(102, 41*minute) // candidates 3, 4, 5 and 6, the latest
	wm(79 * minute)
	expect("click 102 <- 6 @2460000")
	wm(80 * minute) // click 101's cleanup: no impression
	expect("click 101 <- none @4800000")
}

func TestRunPrintsCounts(t *testing.T) {
	const n = 1000
	want := bruteForce(testData, n)
	var attributed, unattributed []Attribution
	for _, r := range want {
		if r.Value.Attributed {
			attributed = append(attributed, r.Value)
		} else {
			unattributed = append(unattributed, r.Value)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-clicks", fmt.Sprint(n), "-parallelism", "2", "-samples", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, w := range []string{
		fmt.Sprintf("attributed %d clicks against %d impressions of 5000 users at parallelism 2", n, 4*n),
		fmt.Sprintf("attributed:   %d ", len(attributed)),
		fmt.Sprintf("unattributed: %d ", len(unattributed)),
		"  " + attributed[0].String() + "\n",
		"  " + attributed[1].String() + "\n",
		"  " + unattributed[0].String() + "\n",
		"  " + unattributed[1].String() + "\n",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	if lines := strings.Count(s, "\n"); lines != 7 {
		t.Errorf("%d lines, want 7:\n%s", lines, s)
	}
	for _, args := range [][]string{{"-clicks", "-1"}, {"-users", "0"}} {
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
