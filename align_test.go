package weir_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/clock"
)

// paced is a test source whose splits produce records at a pace set by
// the manual clock: split s makes perStep[s] records per clock step of
// stepMs, record i with timestamp i*tsStep[s], n[s] in all. The splits
// run at different event-time speeds: the fast one runs ahead of the slow
// one in event time at the same processing time. Readers report to the
// pacer when they have caught up with the clock, so that the test
// advances it only when every reader it waits for has read all it may.
type paced struct {
	clk     *weir.ManualClock
	stepMs  int64
	only    int // the one split of this source, or -1 for all
	n       []int64
	perStep []int64
	tsStep  []int64
	p       *pacer
}

type pacer struct {
	mu     sync.Mutex
	caught map[int]int64 // split -> clock time it caught up with
	ended  map[int]bool
	wake   chan struct{}
}

func newPacer() *pacer {
	return &pacer{caught: map[int]int64{}, ended: map[int]bool{}, wake: make(chan struct{}, 1)}
}

func (p *pacer) report(split int, now int64, ended bool) {
	p.mu.Lock()
	p.caught[split] = now
	if ended {
		p.ended[split] = true
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// allEnded reports whether splits 0..n-1 have all ended.
func (p *pacer) allEnded(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ended) == n
}

// ready reports whether split has read all the clock allows at now.
func (p *pacer) ready(split int, now int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended[split] || p.caught[split] >= now
}

type pacedSplit int

func (s pacedSplit) SplitID() string { return fmt.Sprintf("paced-%d", int(s)) }

func (s *paced) Splits(int) ([]weir.Split, error) {
	if s.only >= 0 {
		return []weir.Split{pacedSplit(s.only)}, nil
	}
	var out []weir.Split
	for i := range s.n {
		out = append(out, pacedSplit(i))
	}
	return out, nil
}

func (s *paced) Reader(sp weir.Split) (weir.SplitReader[pacedRec], error) {
	return &pacedReader{s: s, split: int(sp.(pacedSplit))}, nil
}

type pacedRec struct {
	Split int
	I     int64
}

type pacedReader struct {
	s     *paced
	split int
	next  int64
}

func (r *pacedReader) Read(ctx context.Context, buf []weir.Record[pacedRec]) ([]weir.Record[pacedRec], error) {
	s, sp := r.s, r.split
	for {
		now := s.clk.NowMillis()
		allowed := min(s.n[sp], (now/s.stepMs+1)*s.perStep[sp])
		if r.next < allowed {
			for ; r.next < allowed; r.next++ {
				buf = append(buf, weir.Record[pacedRec]{Value: pacedRec{sp, r.next}, TS: r.next * s.tsStep[sp]})
			}
			if r.next == s.n[sp] {
				s.p.report(sp, now, true)
				return buf, io.EOF
			}
			return buf, nil
		}
		s.p.report(sp, now, false)
		if err := clock.Sleep(ctx, s.clk, (now/s.stepMs+1)*s.stepMs); err != nil {
			return buf, err
		}
	}
}

func (r *pacedReader) Close() error { return nil }

// skewRun is one run of the skewed interval join.
type skewRun struct {
	pairs []string
	peak  float64 // the join's most buffered records
	// pausedSeen reports whether the fast split was ever seen paused.
	pausedSeen bool
	maxDrift   float64
}

// runSkewedJoin joins a fast split (event time 10x faster) with a slow one
// on equal timestamps, both read at the same pace of the manual clock, in
// one source with two splits or (twoSources) one source each, aligned in
// one group when align is set.
func runSkewedJoin(t *testing.T, align, twoSources bool) skewRun {
	t.Helper()
	const (
		step     = 10   // ms of processing time per clock step
		nSlow    = 3000 // slow split: 10 records per step, 1 ms apart
		drift    = 100 * time.Millisecond
		fastSkew = 10 // the fast split's records are 10 ms apart
	)
	clk := weir.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk),
		weir.WithAutoWatermarkInterval(step*time.Millisecond), weir.WithBufferSize(16))
	p := newPacer()
	src := func(only int) *paced {
		return &paced{clk: clk, stepMs: step, only: only, p: p,
			n: []int64{nSlow / fastSkew, nSlow}, perStep: []int64{10, 10}, tsStep: []int64{fastSkew, 1}}
	}
	strategy := weir.ForMonotonousTimestamps[pacedRec]()
	if align {
		strategy = strategy.WithWatermarkAlignment("skew", drift, step*time.Millisecond)
	}
	var fast, slow weir.DataStream[pacedRec]
	if twoSources {
		fast = weir.FromSource[pacedRec](env, src(0), strategy, "fast")
		slow = weir.FromSource[pacedRec](env, src(1), strategy, "slow")
	} else {
		both := weir.FromSource[pacedRec](env, src(-1), strategy, "paced")
		fast = weir.Filter(both, func(r pacedRec) bool { return r.Split == 0 })
		slow = weir.Filter(both, func(r pacedRec) bool { return r.Split == 1 })
	}
	key := func(pacedRec) int { return 0 }
	joined := weir.IntervalJoin(weir.KeyBy(fast, key), weir.KeyBy(slow, key), weir.Between(0, 0),
		weir.ProcessJoinFunc[pacedRec, pacedRec, string](func(l, r pacedRec, ctx weir.JoinContext, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%d@%d=%d@%d", l.I, ctx.LeftTimestamp(), r.I, ctx.RightTimestamp()))
			return nil
		}))
	got := weir.Collect(joined)
	h := start(t, env)

	var run skewRun
	gauges := func() {
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, g := range om.Gauges {
					switch g.Name {
					case "interval_join_buffered_records_peak":
						run.peak = max(run.peak, g.Value)
					case "watermark_alignment_drift_ms":
						run.maxDrift = max(run.maxDrift, g.Value)
					case "watermark_alignment_split_paused":
						if g.Labels["split"] == "paced-0" {
							run.pausedSeen = true
						}
					}
				}
			}
		}
	}
	// splitPaused reports whether alignment pauses split s now.
	splitPaused := func(s int) bool {
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, g := range om.Gauges {
					if g.Name == "watermark_alignment_split_paused" && g.Labels["split"] == pacedSplit(s).SplitID() {
						return true
					}
				}
			}
		}
		return false
	}
	// Advance the clock a step at a time once every split has read what
	// the clock allows; an aligned split may instead be paused (then it
	// reads nothing until a later alignment update).
	deadline := time.After(60 * time.Second)
	for !p.allEnded(2) {
		now := clk.NowMillis()
		ok := true
		for s := range 2 {
			if !p.ready(s, now) && !(align && splitPaused(s)) {
				ok = false
			}
		}
		if ok {
			gauges()
			clk.Advance(step)
			continue
		}
		select {
		case <-p.wake:
		case <-h.Done():
			t.Fatalf("job ended early: %v", h.Wait())
		case <-time.After(time.Millisecond): // re-read the pause gauges
		case <-deadline:
			t.Fatal("the splits did not catch up with the clock")
		}
	}
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
	gauges()
	run.pairs = got.Values()
	slices.Sort(run.pairs)
	return run
}

// TestWatermarkAlignmentBoundsIntervalJoin is the end-to-end test of
// issue 19. It is not yet in the suite (WEIR_ALIGN_E2E=1 runs it): in its
// first runs the aligned join still buffered 272 records against 300
// unaligned with one source of two splits, and the two-source case did
// not finish; see the branch's report.
func TestWatermarkAlignmentBoundsIntervalJoin(t *testing.T) {
	if os.Getenv("WEIR_ALIGN_E2E") != "1" {
		t.Skip("WEIR_ALIGN_E2E=1 runs the unfinished end-to-end alignment test")
	}
	for _, two := range []bool{false, true} {
		name := "splits of one source"
		if two {
			name = "two sources"
		}
		t.Run(name, func(t *testing.T) {
			free := runSkewedJoin(t, false, two)
			aligned := runSkewedJoin(t, true, two)
			t.Logf("peak buffered: unaligned %v, aligned %v; aligned drift up to %v ms, fast split paused: %v",
				free.peak, aligned.peak, aligned.maxDrift, aligned.pausedSeen)
			if len(free.pairs) != 300 || !slices.Equal(free.pairs, aligned.pairs) {
				t.Fatalf("results differ: %d pairs unaligned, %d aligned", len(free.pairs), len(aligned.pairs))
			}
		})
	}
}
