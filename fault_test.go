package weir_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The fault-injection test of issue 6: a job with a keyed window, an
// interval join and a keyed two-input co-process, a deterministic source
// and the transactional file sink, checkpointing every few hundred
// records, while an injector panics a random task at a random record
// several times per run. The committed output must equal that of a
// fault-free run, record for record.

// ftEv is an event of the fault test.
type ftEv struct {
	K  int64
	TS int64
	V  int64
}

const (
	ftN    = 8000
	ftHalf = ftN / 2
	ftKeys = 16
)

// ftBuckets counts each side's records per key and 100 ms bucket in map
// state and emits the counts at the bucket's end (an event-time timer):
// the output depends on the records, not on how the inputs interleave.
type ftBuckets struct {
	counts state.MapState[string, int64]
}

func (f *ftBuckets) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.counts, err = weir.GetMapState(ctx, state.Map[string, int64]("counts"))
	return err
}

func (f *ftBuckets) add(side string, ts int64, ctx weir.KeyedContext[int64]) error {
	end := ts/100*100 + 100
	k := side + strconv.FormatInt(end, 10)
	n, _ := f.counts.Get(k)
	f.counts.Put(k, n+1)
	ctx.TimerService().RegisterEventTimeTimer(end)
	return nil
}

func (f *ftBuckets) ProcessElement1(e ftEv, ctx weir.KeyedContext[int64], _ weir.Collector[string]) error {
	return f.add("L", e.TS, ctx)
}

func (f *ftBuckets) ProcessElement2(e ftEv, ctx weir.KeyedContext[int64], _ weir.Collector[string]) error {
	return f.add("R", e.TS, ctx)
}

func (f *ftBuckets) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[string]) error {
	end := strconv.FormatInt(ts, 10)
	l, _ := f.counts.Get("L" + end)
	r, _ := f.counts.Get("R" + end)
	f.counts.Remove("L" + end)
	f.counts.Remove("R" + end)
	out.Collect(fmt.Sprintf("co k=%d end=%d L=%d R=%d", ctx.CurrentKey(), ts, l, r))
	return nil
}

// ftSum sums an Aggregate's values.
type ftSum struct{}

func (ftSum) CreateAccumulator() [2]int64     { return [2]int64{} }
func (ftSum) Add(e ftEv, a [2]int64) [2]int64 { return [2]int64{a[0] + 1, a[1] + e.V} }
func (ftSum) GetResult(a [2]int64) [2]int64   { return a }
func (ftSum) Merge(a, b [2]int64) [2]int64    { return [2]int64{a[0] + b[0], a[1] + b[1]} }
func ftKey(e ftEv) int64                      { return e.K }
func ftStamp(e ftEv, _ int64) int64           { return e.TS }
func ftOdd(e ftEv) bool                       { return e.V%2 == 1 }
func ftEven(e ftEv) bool                      { return e.V%2 == 0 }
func ftPair(l, r ftEv) string                 { return fmt.Sprintf("ij %d-%d", l.V, r.V) }
func ftWindowLine(a [2]int64) string          { return fmt.Sprintf("win n=%d sum=%d", a[0], a[1]) }

// ftInjector panics at planned points: fault i fires at the at[i]-th
// record seen by stage[i] (counted across that stage's subtasks, since the
// previous fault), once.
type ftInjector struct {
	stage []int
	at    []int64
	next  atomic.Int64 // index of the next fault
	seen  []atomic.Int64
	fired atomic.Int64
}

func newInjector(rng *rand.Rand, faults, stages int) *ftInjector {
	in := &ftInjector{seen: make([]atomic.Int64, stages)}
	for range faults {
		in.stage = append(in.stage, rng.IntN(stages))
		in.at = append(in.at, 1+rng.Int64N(3000))
	}
	return in
}

// hook returns the identity map of stage s that panics when planned.
func hook[T any](in *ftInjector, s int) func(T) T {
	return func(v T) T {
		i := in.next.Load()
		if i >= int64(len(in.stage)) || in.stage[i] != s {
			return v
		}
		if in.seen[s].Add(1) == in.at[i] && in.next.CompareAndSwap(i, i+1) {
			for j := range in.seen {
				in.seen[j].Store(0)
			}
			in.fired.Add(1)
			panic(fmt.Sprintf("injected fault %d in stage %d", i, s))
		}
		return v
	}
}

// runFaultJob runs the job, with the injector's faults if in is not nil,
// and returns the committed lines.
func runFaultJob(t *testing.T, p int, in *ftInjector) []string {
	t.Helper()
	out, cps := t.TempDir(), t.TempDir()
	st, err := weir.NewDirCheckpointStore(cps)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithBufferSize(32),
		weir.WithRestartStrategy(weir.FixedDelayRestart(100, 0)),
		weir.WithLogger(slog.New(slog.DiscardHandler)))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st))
	if in == nil {
		in = &ftInjector{seen: make([]atomic.Int64, 5)}
	}
	// Both generator splits move through event time together; keys come
	// in bursts. The source keeps parallelism 2 so its splits (and their
	// positions) are the same in every run.
	src := weir.Generate(env, ftN, 0, func(i int64) ftEv {
		pos := i % ftHalf
		return ftEv{K: (pos / 3) % ftKeys, TS: pos, V: i}
	}, weir.ForMonotonousTimestamps[ftEv]().WithTimestampAssigner(ftStamp)).SetParallelism(2)
	src = weir.Map(src, hook[ftEv](in, 0))
	win := weir.Map(weir.Aggregate(weir.Window(weir.KeyBy(src, ftKey), window.TumblingEventTime(50*time.Millisecond)), ftSum{}), ftWindowLine)
	win = weir.Map(win, hook[string](in, 1))
	joined := weir.IntervalJoinFunc(weir.KeyBy(weir.Filter(src, ftOdd), ftKey), weir.KeyBy(weir.Filter(src, ftEven), ftKey),
		weir.Between(-2*time.Millisecond, 3*time.Millisecond),
		func(l, r ftEv, _ weir.JoinContext, out weir.Collector[string]) error {
			out.Collect(ftPair(l, r))
			return nil
		})
	joined = weir.Map(joined, hook[string](in, 2))
	co := weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(weir.Filter(src, ftOdd), ftKey), weir.KeyBy(weir.Filter(src, ftEven), ftKey)), &ftBuckets{})
	co = weir.Map(co, hook[string](in, 3))
	all := weir.Map(weir.Union(win, joined, co), hook[string](in, 4))
	file.Sink(all, out, func(s string) []byte { return []byte(s) })
	if err := env.Execute(t.Context(), "faults"); err != nil {
		t.Fatalf("job failed (after %d injected faults): %v", in.fired.Load(), err)
	}
	lines, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

// TestExactlyOnceUnderFaults: see above. WEIR_FAULT_TRIALS sets the number
// of trials (default 2); each trial injects 1 to 4 faults at random
// stages and records, at parallelism 1 to 3.
func TestExactlyOnceUnderFaults(t *testing.T) {
	trials := 2
	if s := os.Getenv("WEIR_FAULT_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WEIR_FAULT_TRIALS=%q: want a positive integer", s)
		}
		trials = n
	}
	want := runFaultJob(t, 2, nil)
	if len(want) < 2000 {
		t.Fatalf("the fault-free run committed only %d lines", len(want))
	}
	for trial := range trials {
		seed := uint64(trial)
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		p := 1 + rng.IntN(3)
		in := newInjector(rng, 1+rng.IntN(4), 5)
		got := runFaultJob(t, p, in)
		if !slices.Equal(got, want) {
			missing, extra := diffLines(want, got)
			t.Fatalf("trial %d (seed %d, parallelism %d, %d faults fired of %d planned): %d lines committed, want %d; missing %v, extra %v",
				trial, seed, p, in.fired.Load(), len(in.stage), len(got), len(want), head(missing), head(extra))
		}
		t.Logf("trial %d: parallelism %d, %d faults injected, %d lines equal", trial, p, in.fired.Load(), len(got))
	}
}
