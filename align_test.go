package weir_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/weirtest"
)

// paced is a test source whose splits are written to at a pace set by
// the manual clock, as Kafka partitions by producers: split s gets
// spec[s].perStep new records in each clock step of stepMs, at the middle
// of the step (so that reading never races the periodic watermark and the
// alignment update, which run at whole steps), record i with timestamp
// i*spec[s].spacing, spec[s].n in all. A reader reads at the middle of a
// step only, at most perStep records (its fetch capacity): a split that
// alignment paused reads its backlog at that pace once it resumes, not
// all at once. The splits run at
// different event-time speeds at the same processing time.
type paced struct {
	clk    *weirtest.ManualClock
	stepMs int64
	only   int // the one split of this source, or -1 for all
	spec   []pacedSpec
	p      *pacer
}

type pacedSpec struct{ n, perStep, spacing int64 }

// pacer tells the test what the readers did: the clock time each split
// caught up with (read all it may and waits for the clock), which ended,
// and how many records they returned in all.
// The splits' watermark generators tell it the clock time of each
// split's last periodic emission and the watermark it emitted.
type pacer struct {
	mu     sync.Mutex
	caught map[int]int64
	ended  map[int]bool
	read   int64
	ticked map[int]int64
	wms    map[int]int64
	// endedAt is the clock time at which each ended split ended.
	endedAt map[int]int64
}

func newPacer() *pacer {
	return &pacer{caught: map[int]int64{}, ended: map[int]bool{}, ticked: map[int]int64{}, wms: map[int]int64{}, endedAt: map[int]int64{}}
}

// endTimes returns when each ended split ended.
func (p *pacer) endTimes() map[int]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps(p.endedAt)
}

func (p *pacer) state() (caught map[int]int64, ended map[int]bool, read int64, ticked, wms map[int]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps(p.caught), maps(p.ended), p.read, maps(p.ticked), maps(p.wms)
}

// pacedGen is the monotonous watermark generator (the highest timestamp
// minus 1) of one split, telling the pacer of each periodic emission.
type pacedGen struct {
	split int
	max   int64
	clk   *weirtest.ManualClock
	p     *pacer
}

func (g *pacedGen) OnEvent(_ pacedRec, ts int64, _ weir.WatermarkOutput) { g.max = max(g.max, ts) }

func (g *pacedGen) OnPeriodicEmit(out weir.WatermarkOutput) {
	wm := int64(weir.MinWatermark)
	if g.max > weir.MinWatermark {
		wm = g.max - 1
		out.EmitWatermark(wm)
	}
	g.p.mu.Lock()
	g.p.ticked[g.split], g.p.wms[g.split] = g.clk.NowMillis(), wm
	g.p.mu.Unlock()
}

// pacedStrategy makes the generators of the given splits, in split
// order (a source makes one per split, in order).
func pacedStrategy(clk *weirtest.ManualClock, p *pacer, splits ...int) weir.WatermarkStrategy[pacedRec] {
	var mu sync.Mutex
	next := 0
	return weir.ForGenerator(func() weir.WatermarkGenerator[pacedRec] {
		mu.Lock()
		defer mu.Unlock()
		g := &pacedGen{split: splits[next%len(splits)], max: weir.MinWatermark, clk: clk, p: p}
		next++
		return g
	})
}

func maps[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type pacedSplit int

func (s pacedSplit) SplitID() string { return fmt.Sprintf("paced-%d", int(s)) }

func (s *paced) Splits(int) ([]connector.Split, error) {
	if s.only >= 0 {
		return []connector.Split{pacedSplit(s.only)}, nil
	}
	var out []connector.Split
	for i := range s.spec {
		out = append(out, pacedSplit(i))
	}
	return out, nil
}

func (s *paced) Reader(sp connector.Split) (connector.SplitReader[pacedRec], error) {
	return &pacedReader{s: s, split: int(sp.(pacedSplit)), at: -1}, nil
}

type pacedRec struct {
	Split int
	I     int64
}

type pacedReader struct {
	s     *paced
	split int
	next  int64
	at    int64 // the clock reading the reader last read at
	used  int64 // records read at that reading
}

// written is the number of records of spec written by clock time now.
func (s *paced) written(spec pacedSpec, now int64) int64 {
	half := s.stepMs / 2
	if now < half {
		return 0
	}
	return min(spec.n, ((now-half)/s.stepMs+1)*spec.perStep)
}

func (r *pacedReader) Read(ctx context.Context, buf []weir.Record[pacedRec]) ([]weir.Record[pacedRec], error) {
	s, sp := r.s, r.s.spec[r.split]
	for {
		now := s.clk.NowMillis()
		if now != r.at {
			r.at, r.used = now, 0
		}
		// Records are written, and read, at the middle of a step only.
		if take := min(s.written(sp, now)-r.next, sp.perStep-r.used); take > 0 && now%s.stepMs == s.stepMs/2 {
			for range take {
				buf = append(buf, weir.Record[pacedRec]{Value: pacedRec{r.split, r.next}, TS: r.next * sp.spacing})
				r.next++
			}
			r.used += take
			s.p.mu.Lock()
			s.p.read += take
			if r.next == sp.n {
				s.p.ended[r.split] = true
				s.p.endedAt[r.split] = now
			}
			s.p.mu.Unlock()
			if r.next == sp.n {
				return buf, io.EOF
			}
			return buf, nil
		}
		s.p.mu.Lock()
		s.p.caught[r.split] = now
		s.p.mu.Unlock()
		if err := clock.Sleep(ctx, s.clk, now+1); err != nil {
			return buf, err
		}
	}
}

func (r *pacedReader) Close() error { return nil }

// skew is the job of the alignment tests: a fast split (event time 5x
// faster than the slow one) joined with a slow one on equal timestamps.
type skew struct {
	step    int64 // ms of processing time per clock step
	fast    pacedSpec
	slow    pacedSpec
	drift   time.Duration
	idle    time.Duration // idleness timeout, 0 for none
	aligned bool
	two     bool // one source each instead of one source of two splits
}

func newSkew() skew {
	return skew{
		step: 10,
		// 50 ms of event time per step, 200 records: ts 0, 10, ..., 1990.
		fast: pacedSpec{n: 200, perStep: 5, spacing: 10},
		// 10 ms of event time per step, 2000 records: ts 0, 1, ..., 1999.
		slow:  pacedSpec{n: 2000, perStep: 10, spacing: 1},
		drift: 100 * time.Millisecond,
	}
}

// skewRun is what one run of the skewed join saw.
type skewRun struct {
	pairs []string
	peak  float64 // the join's most buffered records (its peak gauge)
	// fastPaused counts the samples in which alignment paused the fast
	// split, idleSeen those in which a split was idle, maxDrift the
	// largest drift gauge.
	fastPaused, idleSeen int
	maxDrift             float64
}

// run runs the job to its end, stepping the manual clock by half steps
// whenever every split has read what the clock allows (or is paused by
// alignment) and the join has received every record read.
func (k skew) run(t *testing.T) skewRun {
	t.Helper()
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk), weir.WithLogger(quietLogger()),
		weir.WithAutoWatermarkInterval(time.Duration(k.step)*time.Millisecond), weir.WithBufferSize(16))
	p := newPacer()
	src := func(only int) *paced {
		return &paced{clk: clk, stepMs: k.step, only: only, p: p, spec: []pacedSpec{k.fast, k.slow}}
	}
	strategy := func(splits ...int) weir.WatermarkStrategy[pacedRec] {
		s := pacedStrategy(clk, p, splits...)
		if k.idle > 0 {
			s = s.WithIdleness(k.idle)
		}
		if k.aligned {
			s = s.WithWatermarkAlignment("skew", k.drift, time.Duration(k.step)*time.Millisecond)
		}
		return s
	}
	var fast, slow weir.DataStream[pacedRec]
	if k.two {
		fast = weir.FromSource[pacedRec](env, src(0), strategy(0), "fast")
		slow = weir.FromSource[pacedRec](env, src(1), strategy(1), "slow")
	} else {
		both := weir.FromSource[pacedRec](env, src(-1), strategy(0, 1), "paced")
		fast = weir.Filter(both, func(r pacedRec) bool { return r.Split == 0 })
		slow = weir.Filter(both, func(r pacedRec) bool { return r.Split == 1 })
	}
	key := func(pacedRec) int { return 0 }
	joined := weir.IntervalJoinFunc(weir.KeyBy(fast, key), weir.KeyBy(slow, key), weir.Between(0, 0),
		func(l, r pacedRec, ctx weir.JoinContext, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%d@%d=%d@%d", l.I, ctx.LeftTimestamp(), r.I, ctx.RightTimestamp()))
			return nil
		})
	got := weir.Collect(joined)
	h := start(t, env)

	var run skewRun
	// look reads the metrics: the records the join received, whether the
	// fast and slow splits are paused, the gauges.
	look := func() (joinIn int64, paused, idle map[int]bool, joinWMs []int64) {
		paused, idle = map[int]bool{}, map[int]bool{}
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, g := range om.Gauges {
					switch g.Name {
					case "interval_join_buffered_records_peak":
						run.peak = max(run.peak, g.Value)
						joinIn, joinWMs = om.RecordsIn, om.InputWatermarks
					case "watermark_alignment_drift_ms":
						run.maxDrift = max(run.maxDrift, g.Value)
					}
				}
				for _, sm := range om.Splits {
					for s := range 2 {
						if sm.ID == pacedSplit(s).SplitID() {
							paused[s], idle[s] = sm.Paused, sm.Idle
							if sm.Idle {
								run.idleSeen++
							}
						}
					}
				}
			}
		}
		return joinIn, paused, idle, joinWMs
	}
	// The join's inputs: the watermark each gets from the splits behind
	// it (a source's is its active splits' lowest), unknown (false) once
	// they have all ended (the source then sends the maximum) or are idle.
	// An ended split leaves its source's combination (Flink releases a
	// finished split's output), which the next periodic emission, at the
	// next whole step after its end, combines anew.
	inputs := [][]int{{0}, {1}}
	if !k.two {
		inputs = [][]int{{0, 1}, {0, 1}}
	}
	wantWM := func(in []int, wms map[int]int64, ended, idle map[int]bool, endedAt map[int]int64, now int64) (int64, bool) {
		low, live := int64(math.MaxInt64), false
		for _, s := range in {
			if idle[s] || ended[s] && now/k.step*k.step > endedAt[s] {
				continue
			}
			w, ok := wms[s]
			if !ok {
				w = weir.MinWatermark
			}
			low, live = min(low, w), live || !ended[s]
		}
		return low, live
	}
	guard := time.After(30 * time.Second) // a hang guard, not a timing
steps:
	for {
		now := clk.NowMillis()
		caught, ended, read, ticked, wms := p.state()
		endedAt := p.endTimes()
		joinIn, paused, idle, joinWMs := look()
		ready := joinIn == read
		for s := range 2 {
			// A reader has read what the clock allows when it waits for
			// the clock (from the start: the task has opened), or it is
			// paused.
			if c, ok := caught[s]; !ended[s] && (!ok || c < now) && !paused[s] {
				ready = false
			}
			// At a whole step the periodic emission (and the alignment
			// update, which runs just before it) has run; an idle split's
			// generator is not asked.
			if now > 0 && now%k.step == 0 && !ended[s] && !idle[s] && ticked[s] != now {
				ready = false
			}
		}
		// The join has the watermarks emitted, before the next reads.
		for i, in := range inputs {
			if w, live := wantWM(in, wms, ended, idle, endedAt, now); live && (len(joinWMs) != 2 || joinWMs[i] != w) {
				ready = false
			}
		}
		if ready && len(ended) == 2 {
			break
		}
		if ready {
			select {
			case <-guard:
				t.Fatalf("no end at %d ms: caught %v, ended %v, read %d, join received %d, paused %v, metrics %+v", now, caught, ended, read, joinIn, paused, h.Metrics())
			default:
			}
			if paused[0] {
				run.fastPaused++
			}
			clk.Advance(k.step / 2)
			continue
		}
		select {
		case <-h.Done():
			// What the readers did before the job ended, read again.
			_, ended, read, _, _ = p.state()
			joinIn, _, _, _ = look()
			if len(ended) == 2 && joinIn == read {
				break steps // the last records and the maximum watermark went through
			}
			t.Fatalf("job ended early (%v): caught %v, ended %v, read %d, join received %d", h.Wait(), caught, ended, read, joinIn)
		case <-guard:
			t.Fatalf("stuck at %d ms: caught %v, ended %v, read %d, join received %d, paused %v, idle %v", now, caught, ended, read, joinIn, paused, idle)
		case <-time.After(200 * time.Microsecond): // poll the metrics again
		}
	}
	// The sources have ended; the maximum watermark empties the join.
	if err := wait(t, h); err != nil {
		t.Fatal(err)
	}
	run.pairs = got.Values()
	slices.Sort(run.pairs)
	return run
}

// alignedBound is the most records the join may buffer with alignment,
// derived from the drift, the update interval (one step here) and the
// fetch size (a reader reads at most perStep records per step). The join
// holds the records above its watermark, the slow split's (its lowest).
// The fast split fetches at step k's half only if, at the alignment
// update of step k, its watermark (emitted at step k-1, from the fetches
// up to step k-2) was within the drift of the group's lowest watermark
// as reported at step k-1 (the slow split's, from its fetches up to
// step k-2, or one step older when the other subtask has not reported
// yet; the subtask's own report, when the group is one source, is at
// least as new). So the fast split may be up to the drift ahead of the
// slow one's last-but-one fetch, plus two fetches: the one its watermark
// did not show yet (one update interval of lag) and the one under way
// when the pause came (read after the pause, as Flink's fetcher hands on
// what it fetched). Against the slow watermark the join has at that
// moment (one slow fetch newer, minus 1 for monotonous watermarks),
// that is drift + 2 fast fetches - 1 slow fetch + 1 ms of fast event
// time; the slow records held are the last fetch and the one record at
// the slow watermark + 1.
func (k skew) alignedBound() float64 {
	fastFetchMs := k.fast.perStep * k.fast.spacing
	slowFetchMs := k.slow.perStep * k.slow.spacing
	ahead := k.drift.Milliseconds() + 2*fastFetchMs - slowFetchMs + 1
	fastHeld := (ahead + k.fast.spacing - 1) / k.fast.spacing
	slowHeld := (slowFetchMs + 1 + k.slow.spacing - 1) / k.slow.spacing
	return float64(fastHeld + slowHeld)
}

// unalignedFloor is the least the join must buffer without alignment:
// when the fast split has ended, the slow one has read only as far as the
// same number of steps allows, and every fast record above that is held.
func (k skew) unalignedFloor() float64 {
	steps := (k.fast.n + k.fast.perStep - 1) / k.fast.perStep
	slowTS := steps * k.slow.perStep * k.slow.spacing
	return float64((k.fast.n*k.fast.spacing - slowTS) / k.fast.spacing)
}

// TestWatermarkAlignmentBoundsIntervalJoin (issue 19): an interval join
// of a fast split with a slow one buffers the fast records until the
// slow watermark catches up. Without alignment the buffer grows with the
// skew (all the fast records above the slow split's progress); with it,
// the fast split is paused whenever it runs more than the drift ahead and
// the buffer stays under the bound the drift and the rates give; the
// joined pairs are the same. Both for two splits of one source (FLIP-217,
// the split is paused) and for two sources in one group (FLIP-182, the
// fast source's subtask waits).
func TestWatermarkAlignmentBoundsIntervalJoin(t *testing.T) {
	for _, two := range []bool{false, true} {
		name := "splits of one source"
		if two {
			name = "two sources"
		}
		t.Run(name, func(t *testing.T) {
			k := newSkew()
			k.two = two
			free := k.run(t)
			k.aligned = true
			aligned := k.run(t)
			bound, floor := k.alignedBound(), k.unalignedFloor()
			t.Logf("peak buffered: unaligned %v (floor %v), aligned %v (bound %v); aligned drift up to %v ms, fast split paused in %d samples",
				free.peak, floor, aligned.peak, bound, aligned.maxDrift, aligned.fastPaused)
			if want := int(k.fast.n); len(free.pairs) != want || !slices.Equal(free.pairs, aligned.pairs) {
				t.Fatalf("results differ: %d pairs unaligned, %d aligned, want %d", len(free.pairs), len(aligned.pairs), want)
			}
			if free.peak < floor {
				t.Errorf("unaligned, the join buffered at most %v records, want at least %v", free.peak, floor)
			}
			if aligned.peak > bound {
				t.Errorf("aligned, the join buffered up to %v records, want at most %v", aligned.peak, bound)
			}
			if aligned.fastPaused == 0 || free.fastPaused != 0 {
				t.Errorf("the fast split was paused in %d samples aligned, %d unaligned", aligned.fastPaused, free.fastPaused)
			}
		})
	}
}

// TestAlignmentPausedSplitNotIdle (FLIP-471): a split that alignment
// pauses for longer than its idleness timeout is not declared idle: its
// idleness clock stands still while it is paused. (With the processing
// clock instead, the fast split would go idle in every long pause.)
func TestAlignmentPausedSplitNotIdle(t *testing.T) {
	for _, two := range []bool{false, true} {
		t.Run(fmt.Sprint("two sources ", two), func(t *testing.T) {
			k := newSkew()
			k.two, k.aligned = two, true
			// The fast split is paused for about drift/slow speed = 10
			// steps at a time; the timeout is 3 steps.
			k.idle = 3 * time.Duration(k.step) * time.Millisecond
			run := k.run(t)
			if run.fastPaused < 10 {
				t.Fatalf("the fast split was paused in only %d samples", run.fastPaused)
			}
			if run.idleSeen != 0 {
				t.Fatalf("a split was idle in %d samples", run.idleSeen)
			}
			if len(run.pairs) != int(k.fast.n) {
				t.Fatalf("%d pairs, want %d", len(run.pairs), k.fast.n)
			}
		})
	}
}

// TestWatermarkAlignmentBoundsIntervalJoinLong runs a longer skew when
// WEIR_ALIGN_E2E=1.
func TestWatermarkAlignmentBoundsIntervalJoinLong(t *testing.T) {
	if os.Getenv("WEIR_ALIGN_E2E") != "1" {
		t.Skip("WEIR_ALIGN_E2E=1 runs the long variant")
	}
	k := newSkew()
	k.fast.n, k.slow.n = 2000, 20000
	free := k.run(t)
	k.aligned = true
	aligned := k.run(t)
	t.Logf("peak buffered: unaligned %v, aligned %v (bound %v)", free.peak, aligned.peak, k.alignedBound())
	if aligned.peak > k.alignedBound() || free.peak < k.unalignedFloor() || !slices.Equal(free.pairs, aligned.pairs) {
		t.Fatal("alignment did not bound the join")
	}
}
