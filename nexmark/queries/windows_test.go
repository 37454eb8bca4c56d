package queries

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// windowConfig spans 25 s of event time per generator: several 10 s
// windows, sessions that close, and hot auctions that change.
var windowConfig = nexmark.Config{Events: 50_000, Rate: 2_000, Seed: 5}

// windowsOf returns the sliding windows (start, end) holding ts.
func windowsOf(ts, size, slide int64) [][2]int64 {
	var out [][2]int64
	for s := window.StartWithOffset(ts, 0, slide); s > ts-size; s -= slide {
		out = append(out, [2]int64{s, s + size})
	}
	return out
}

func TestQ5(t *testing.T) {
	s := generate(windowConfig, testParallelism)
	counts := map[[2]int64]map[int64]int64{}
	for _, b := range s.bids {
		for _, w := range windowsOf(b.DateTime, 10_000, 2_000) {
			if counts[w] == nil {
				counts[w] = map[int64]int64{}
			}
			counts[w][b.Auction]++
		}
	}
	var want []Q5Result
	for w, byAuction := range counts {
		var top int64
		for _, n := range byAuction {
			top = max(top, n)
		}
		for a, n := range byAuction {
			if n == top {
				want = append(want, Q5Result{Auction: a, Num: n, Start: w[0], End: w[1]})
			}
		}
	}
	if len(counts) < 10 {
		t.Fatalf("only %d windows", len(counts))
	}
	sameMultiset(t, "q5", run(t, windowConfig, Q5), want)
}

func TestQ7(t *testing.T) {
	s := generate(windowConfig, testParallelism)
	top := map[int64][]nexmark.Bid{}
	for _, b := range s.bids {
		w := window.StartWithOffset(b.DateTime, 0, 10_000)
		switch cur := top[w]; {
		case len(cur) == 0 || b.Price > cur[0].Price:
			top[w] = []nexmark.Bid{b}
		case b.Price == cur[0].Price:
			top[w] = append(cur, b)
		}
	}
	var want []nexmark.Bid
	for _, bs := range top {
		want = append(want, bs...)
	}
	if len(top) < 3 {
		t.Fatalf("only %d windows", len(top))
	}
	sameMultiset(t, "q7", derefs(run(t, windowConfig, Q7)), want)
}

func TestQ8(t *testing.T) {
	// At 200 events/s a person and their auctions often fall in different
	// windows; both outcomes occur.
	cfg := nexmark.Config{Events: 40_000, Rate: 200, Seed: 9}
	s := generate(cfg, testParallelism)
	sold := map[[2]int64]bool{}
	for _, a := range s.auctions {
		sold[[2]int64{a.Seller, window.StartWithOffset(a.DateTime, 0, 10_000)}] = true
	}
	var want []Q8Result
	missed := 0
	for _, p := range s.persons {
		w := window.StartWithOffset(p.DateTime, 0, 10_000)
		if sold[[2]int64{p.ID, w}] {
			want = append(want, Q8Result{ID: p.ID, Name: p.Name, Start: w})
		} else {
			missed++
		}
	}
	if missed == 0 {
		t.Fatal("every person sold in their window: the join condition is not tested")
	}
	sameMultiset(t, "q8", run(t, cfg, Q8), want)
}

func TestQ11(t *testing.T) {
	// At 500 events/s, gaps of 10 s between one bidder's bids occur.
	cfg := nexmark.Config{Events: 40_000, Rate: 500, Seed: 4}
	s := generate(cfg, testParallelism)
	times := map[int64][]int64{}
	for _, b := range s.bids {
		times[b.Bidder] = append(times[b.Bidder], b.DateTime)
	}
	var want []SessionResult
	multi := 0
	for bidder, ts := range times {
		slices.Sort(ts)
		start, last, n := ts[0], ts[0], int64(0)
		sessions := 0
		for _, x := range ts {
			if x-last > 10_000 { // windows [t, t+gap) that touch merge
				want = append(want, SessionResult{bidder, n, start, last + 10_000})
				start, n = x, 0
				sessions++
			}
			last = x
			n++
		}
		want = append(want, SessionResult{bidder, n, start, last + 10_000})
		if sessions > 0 {
			multi++
		}
	}
	if multi == 0 {
		t.Fatal("no bidder has two sessions")
	}
	sameMultiset(t, "q11", run(t, cfg, Q11), want)
}

// holdSource is the generator source whose readers, after the last event,
// wait for release instead of ending, so a test can move processing time
// while the job still runs.
type holdSource struct {
	connector.Source[nexmark.Event]
	release chan struct{}
}

func (h holdSource) Reader(sp connector.Split) (connector.SplitReader[nexmark.Event], error) {
	r, err := h.Source.Reader(sp)
	return &holdReader{SplitReader: r, release: h.release}, err
}

type holdReader struct {
	connector.SplitReader[nexmark.Event]
	release chan struct{}
	done    bool
}

func (h *holdReader) Read(ctx context.Context, buf []weir.Record[nexmark.Event]) ([]weir.Record[nexmark.Event], error) {
	if h.done {
		select {
		case <-h.release:
			return buf, io.EOF
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
	out, err := h.SplitReader.Read(ctx, buf)
	if err == io.EOF {
		h.done = true
		err = nil
	}
	return out, err
}

func TestQ12(t *testing.T) {
	cfg := nexmark.Config{Events: 20_000, Seed: 2}
	s := generate(cfg, testParallelism)
	want := map[int64]int64{}
	for _, b := range s.bids {
		want[b.Bidder]++
	}
	clock := weirtest.NewManualClock(1_000)
	env := weir.NewEnvironment(weir.WithParallelism(testParallelism), weir.WithClock(clock))
	src := holdSource{Source: nexmark.Source(cfg), release: make(chan struct{})}
	out := Q12(weir.FromSource(env, connector.Source[nexmark.Event](src), nexmark.Watermarks(cfg), "Nexmark"))
	var mu sync.Mutex
	var got []SessionResult
	weir.SinkFunc(out, func(r SessionResult) error {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		return nil
	}).Name(ResultsSink)
	h, err := env.ExecuteAsync(context.Background(), "q12")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	// windowIn is the number of bids that reached the window operator and
	// the lowest watermark its subtasks have seen.
	windowIn := func() (n, wm int64) {
		wm = weir.MaxWatermark
		for _, tm := range h.Metrics() {
			for _, o := range tm.Operators {
				if o.Name == "Q12 window" {
					n += o.RecordsIn
					for _, w := range o.InputWatermarks {
						wm = min(wm, w)
					}
				}
			}
		}
		return n, wm
	}
	// All bids reach the window [0, 10 s) of processing time. The record
	// counter moves before a batch is processed, so the clock first moves
	// within the window, which makes the sources emit watermarks: they
	// travel behind the last bids, and once the window operator has seen
	// them it has processed every bid. Then the clock passes the window's
	// end and every bidder's count comes out.
	waitFor(t, func() bool { n, _ := windowIn(); return n == int64(len(s.bids)) })
	clock.Set(5_000)
	waitFor(t, func() bool { _, wm := windowIn(); return wm > 0 })
	clock.Set(10_000)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(want) })
	close(src.release)
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	var wantRows []SessionResult
	for b, n := range want {
		wantRows = append(wantRows, SessionResult{Bidder: b, Count: n, Start: 0, End: 10_000})
	}
	sameMultiset(t, "q12", got, wantRows)
}

// waitFor waits until cond holds, polling (no deadline: a slow machine
// may take long; a hang ends at go test's -timeout with every stack).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(2 * time.Millisecond)
	}
}

// The tie and merge paths of the aggregates, which random prices and
// counts rarely reach.
func TestAggregateTiesAndMerges(t *testing.T) {
	var h highestBids
	acc := h.CreateAccumulator()
	for _, p := range []int64{5, 9, 3, 9, 7} {
		acc = h.Add(&nexmark.Bid{Price: p, Bidder: p * 10}, acc)
	}
	if len(acc) != 2 || acc[0].Price != 9 || acc[1].Price != 9 {
		t.Fatalf("highest bids %+v", acc)
	}
	m := h.Merge(acc, []nexmark.Bid{{Price: 9, Bidder: 1}, {Price: 12}})
	if len(m) != 1 || m[0].Price != 12 || len(h.Merge(acc, []nexmark.Bid{{Price: 9}})) != 3 {
		t.Fatalf("merge %+v", m)
	}
	var hot hottestAuctions
	a := hot.Add(auctionBids{1, 4}, hot.Add(auctionBids{2, 4}, hot.Add(auctionBids{3, 1}, nil)))
	if len(a) != 2 || len(hot.Merge(a, []auctionBids{{5, 4}})) != 3 || len(hot.Merge(a, []auctionBids{{5, 6}})) != 1 {
		t.Fatalf("hottest %+v", a)
	}
	var c auctionCount
	if r := c.Merge(c.Add(&nexmark.Bid{Auction: 7}, c.CreateAccumulator()), auctionBids{7, 3}); r != (auctionBids{7, 4}) {
		t.Fatalf("count merge %+v", r)
	}
	var j joinUser
	p := j.Add(newUser{ID: 1, Name: "x", Person: true}, j.CreateAccumulator())
	s := j.Add(newUser{ID: 1, Auction: true}, j.CreateAccumulator())
	if r := j.Merge(s, p); !r.Person || !r.Auction || r.Name != "x" {
		t.Fatalf("join merge %+v", r)
	}
	if r := j.Merge(p, j.CreateAccumulator()); r.Auction {
		t.Fatalf("join merge without auction %+v", r)
	}
}
