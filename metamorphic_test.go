package weir_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
	"github.com/weirstream/weir/window"
)

// TestMetamorphic builds random event-time pipelines (maps, filters,
// re-keying, tumbling, sliding and session windows, a timer-driven keyed
// process function, an inner or outer interval join or a window join or
// coGroup, unions, rebalances) over random
// input, and runs each under several configurations that must not change
// its result: other parallelisms, one-record batches with one credit
// (constant backpressure), no chaining, the Pebble state backend, and
// checkpoints (aligned, unaligned, incremental on Pebble) with a failure,
// then a restart or a restore at another parallelism, into an
// exactly-once sink. The
// input is never late (every source split's disorder stays within its
// watermark bound), and every stage's output is a function of its input
// only, so every configuration must commit the same records with the same
// timestamps as the first.
//
// A failing trial names its seed and pipeline; rerun it alone with
// -run 'TestMetamorphic/seed=N'. WEIR_METAMORPHIC_TRIALS sets the number
// of trials (default 8).
func TestMetamorphic(t *testing.T) {
	trials := 8
	if s := os.Getenv("WEIR_METAMORPHIC_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("WEIR_METAMORPHIC_TRIALS=%q: %v", s, err)
		}
		trials = n
	}
	for seed := range uint64(trials) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			p := newMetaPipeline(seed)
			t.Logf("pipeline: %s", p)
			var want []string
			for i, c := range metaConfigs {
				got := p.run(t, c)
				if i == 0 {
					want = got
					if len(want) == 0 {
						t.Logf("the pipeline emits nothing")
					}
					continue
				}
				if diff := metaDiff(got, want); diff != "" {
					t.Fatalf("config %q differs from %q: %s", c.name, metaConfigs[0].name, diff)
				}
			}
		})
	}
}

// mev is the event every stage takes and emits.
type mev struct {
	K, TS, V int64
}

// metaConfig is one way of running a pipeline.
type metaConfig struct {
	name     string
	opts     func(t *testing.T) []weir.Option
	failOnce bool // checkpoints, one injected failure and a restart
	// rescaleTo, if set, makes the failure final: the job is started
	// again at this parallelism from the latest checkpoint.
	rescaleTo int
	// dirStore keeps the checkpoints in a directory (incremental with
	// the Pebble backend) instead of in memory.
	dirStore bool
	ckOpts   []weir.CheckpointOption
}

var metaConfigs = []metaConfig{
	{name: "p=1", opts: func(*testing.T) []weir.Option { return []weir.Option{weir.WithParallelism(1)} }},
	{name: "p=2", opts: func(*testing.T) []weir.Option { return []weir.Option{weir.WithParallelism(2)} }},
	{name: "p=3, 1-record batches, 1 credit", opts: func(*testing.T) []weir.Option {
		return []weir.Option{weir.WithParallelism(3), weir.WithBufferSize(1), weir.WithBufferCredits(1)}
	}},
	{name: "p=2, no chaining", opts: func(*testing.T) []weir.Option {
		return []weir.Option{weir.WithParallelism(2), weir.WithChaining(false)}
	}},
	{name: "p=2, Pebble state", opts: func(t *testing.T) []weir.Option {
		return []weir.Option{weir.WithParallelism(2), weir.WithStateBackend(pebble.New(t.TempDir()))}
	}},
	{name: "p=2, checkpoints, a failure and a restart", failOnce: true, opts: func(*testing.T) []weir.Option {
		return []weir.Option{weir.WithParallelism(2), weir.WithBufferSize(16),
			weir.WithRestartStrategy(weir.FixedDelayRestart(1, time.Millisecond))}
	}},
	{name: "p=2, checkpoints, a failure, restored at p=3", failOnce: true, rescaleTo: 3, opts: func(*testing.T) []weir.Option {
		return []weir.Option{weir.WithParallelism(2), weir.WithBufferSize(16)}
	}},
	{name: "p=2, unaligned checkpoints, a failure and a restart", failOnce: true, ckOpts: []weir.CheckpointOption{weir.UnalignedCheckpoints()},
		opts: func(*testing.T) []weir.Option {
			return []weir.Option{weir.WithParallelism(2), weir.WithBufferSize(4), weir.WithBufferCredits(1),
				weir.WithRestartStrategy(weir.FixedDelayRestart(1, time.Millisecond))}
		}},
	{name: "p=3, Pebble, incremental checkpoints, a failure, restored at p=2", failOnce: true, rescaleTo: 2, dirStore: true,
		opts: func(t *testing.T) []weir.Option {
			return []weir.Option{weir.WithParallelism(3), weir.WithBufferSize(16), weir.WithStateBackend(pebble.New(t.TempDir()))}
		}},
}

// metaQuiet keeps the runs' logs (injected failures, restarts) out of the
// test output.
var metaQuiet = weir.WithLogger(slog.New(slog.DiscardHandler))

// metaPipeline is a generated input and a chain of stages over it.
type metaPipeline struct {
	seed      uint64
	n         int64 // events
	keys      int64
	disorder  int64 // ms: each event is at most this much behind its split's latest
	stages    []metaStage
	describes []string
}

type metaStage func(weir.DataStream[mev]) weir.DataStream[mev]

func (p *metaPipeline) String() string {
	return fmt.Sprintf("%d events, %d keys, disorder %d ms: source -> %s", p.n, p.keys, p.disorder, strings.Join(p.describes, " -> "))
}

// event is input event i: 1 ms apart plus a jitter below the disorder
// bound, so no event is late at any parallelism of the source.
func (p *metaPipeline) event(i int64) mev {
	h := splitmix(p.seed<<32 ^ uint64(i))
	return mev{K: int64(h % uint64(p.keys)), TS: 1000 + i + int64(h>>8%uint64(p.disorder)), V: int64(h >> 20 % 1000)}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func newMetaPipeline(seed uint64) *metaPipeline {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &metaPipeline{seed: seed, n: 500 + r.Int64N(1500), keys: 1 + r.Int64N(12), disorder: 1 + r.Int64N(30)}
	// behind: an outer join emits unmatched records at their own
	// timestamps once the watermark has passed their cleanup time, which
	// an event-time stage downstream may see as late depending on how the
	// watermarks interleave: after one, only stateless stages follow.
	joined, unioned, behind := false, false, false
	for range 1 + r.IntN(4) {
		k := r.IntN(11)
		if behind && k != 0 && k != 1 && k != 2 && k != 8 {
			k = 10
		}
		switch {
		case k == 0:
			a, b := 1+r.Int64N(9), r.Int64N(100)
			p.add(fmt.Sprintf("map(v*%d+%d)", a, b), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Map(s, func(e mev) mev { e.V = (e.V*a + b) % 1_000_003; return e })
			})
		case k == 1:
			m := 2 + r.Int64N(5)
			p.add(fmt.Sprintf("filter((v+k)%%%d!=0)", m), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Filter(s, func(e mev) bool { return (e.V+e.K)%m != 0 })
			})
		case k == 2:
			nk := 1 + r.Int64N(8)
			p.add(fmt.Sprintf("rekey(%d)", nk), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Rebalance(weir.Map(s, func(e mev) mev { e.K = (e.K*7 + e.V) % nk; return e }))
			})
		case k == 3:
			size := 5 + r.Int64N(200)
			p.add(fmt.Sprintf("tumbling(%d ms).reduce(sum)", size), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Reduce(weir.Window(metaKeyed(s), window.TumblingEventTime(time.Duration(size)*time.Millisecond)), metaSum)
			})
		case k == 4:
			slide := 5 + r.Int64N(60)
			size := slide * (1 + r.Int64N(4))
			if r.IntN(2) == 0 {
				size += r.Int64N(slide) // sizes that are not a multiple of the slide too
			}
			p.add(fmt.Sprintf("sliding(%d ms, %d ms).aggregate(count,sum)", size, slide), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Aggregate(weir.Window(metaKeyed(s), window.SlidingEventTime(time.Duration(size)*time.Millisecond, time.Duration(slide)*time.Millisecond)), metaCountSum{})
			})
		case k == 5:
			gap := 1 + r.Int64N(25)
			p.add(fmt.Sprintf("sessions(%d ms).reduce(sum)", gap), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Reduce(weir.Window(metaKeyed(s), window.EventTimeSessions(time.Duration(gap)*time.Millisecond)), metaSum)
			})
		case k == 6:
			bucket := 2 + r.Int64N(100)
			p.add(fmt.Sprintf("process(buckets of %d ms)", bucket), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Process(metaKeyed(s), &metaBuckets{bucket: bucket})
			})
		case k == 7 && !joined:
			joined = true
			lo, hi := -r.Int64N(6), r.Int64N(6)
			kind := r.IntN(4) // inner, left, right or full outer
			names := []string{"intervalJoin", "intervalLeftOuterJoin", "intervalRightOuterJoin", "intervalFullOuterJoin"}
			behind = kind != 0
			p.add(fmt.Sprintf("%s(self, filtered copy, [%d, %d] ms)", names[kind], lo, hi), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				l, r := metaKeyed(s), metaKeyed(metaOther(s))
				b := weir.Between(time.Duration(lo)*time.Millisecond, time.Duration(hi)*time.Millisecond)
				if kind == 0 {
					return weir.IntervalJoinFunc(l, r, b, func(l, r mev, _ weir.JoinContext, out weir.Collector[mev]) error {
						out.Collect(mev{K: l.K, TS: max(l.TS, r.TS), V: (l.V*3 + r.V) % 1_000_003})
						return nil
					})
				}
				outer := []weir.OuterJoinKind{0, weir.LeftOuter, weir.RightOuter, weir.FullOuter}[kind]
				return weir.IntervalOuterJoinFunc(l, r, b, outer, func(l, r *mev, ctx weir.JoinContext, out weir.Collector[mev]) error {
					e := mev{TS: ctx.Timestamp(), V: 1}
					if l != nil {
						e.K, e.V = l.K, e.V*3+l.V
					}
					if r != nil {
						e.K, e.V = r.K, (e.V*5+r.V)%1_000_003
					}
					out.Collect(e)
					return nil
				})
			})
		case k == 9 && !joined:
			joined = true
			size := 2 + r.Int64N(25)
			co := r.IntN(2) == 0
			name := "windowJoin"
			if co {
				name = "coGroup"
			}
			p.add(fmt.Sprintf("%s(self, filtered copy, tumbling %d ms)", name, size), func(s weir.DataStream[mev]) weir.DataStream[mev] {
				j := weir.WindowJoin(metaKeyed(s), metaKeyed(metaOther(s)), window.TumblingEventTime(time.Duration(size)*time.Millisecond))
				if co {
					return weir.CoGroup(j, weir.CoGroupFunction[int64, mev, mev, mev, window.TimeWindow](func(k int64, w window.TimeWindow, ls, rs []mev, out weir.Collector[mev]) error {
						var sum int64
						for _, e := range ls {
							sum += e.V
						}
						for _, e := range rs {
							sum += 3 * e.V
						}
						out.Collect(mev{K: k, TS: w.Start, V: (sum*1000 + int64(len(ls))*10 + int64(len(rs))) % 1_000_003})
						return nil
					}))
				}
				return weir.Join(j, func(l, r mev) mev { return mev{K: l.K, TS: max(l.TS, r.TS), V: (l.V*3 + r.V) % 1_000_003} })
			})
		case k == 8 && !unioned:
			unioned = true
			p.add("union(self, map(v+1))", func(s weir.DataStream[mev]) weir.DataStream[mev] {
				return weir.Union(s, weir.Map(s, func(e mev) mev { e.V++; return e }))
			})
		default:
			p.add("rebalance", weir.Rebalance[mev])
		}
	}
	return p
}

func (p *metaPipeline) add(d string, s metaStage) {
	p.describes = append(p.describes, d)
	p.stages = append(p.stages, s)
}

func metaKeyed(s weir.DataStream[mev]) weir.KeyedStream[int64, mev] {
	return weir.KeyBy(s, func(e mev) int64 { return e.K })
}

// metaOther is the second input of the joins: a changed copy of s
// without some of its events, so that outer joins have unmatched ones.
func metaOther(s weir.DataStream[mev]) weir.DataStream[mev] {
	return weir.Map(weir.Filter(s, func(e mev) bool { return e.V%3 != 0 }), func(e mev) mev { e.V = e.V*31 + 7; return e })
}

func metaSum(a, b mev) mev { return mev{K: a.K, TS: max(a.TS, b.TS), V: (a.V + b.V) % 1_000_003} }

// metaCountSum aggregates a count and a sum (order-independent).
type metaCountSum struct{}

func (metaCountSum) CreateAccumulator() mev { return mev{} }
func (metaCountSum) Add(e mev, acc mev) mev {
	return mev{K: e.K, TS: max(acc.TS, e.TS), V: acc.V + e.V%1000*1000 + 1}
}
func (metaCountSum) GetResult(acc mev) mev { return acc }
func (metaCountSum) Merge(a, b mev) mev    { return mev{K: a.K, TS: max(a.TS, b.TS), V: a.V + b.V} }

// metaBuckets keeps a key's elements and, at the end of each bucket of
// event time, emits the count and sum of those up to that end (an
// event-time timer): a function of the input, not of how it interleaves.
type metaBuckets struct {
	bucket int64
	held   state.ListState[mev] // TS holds the record timestamp
}

func (f *metaBuckets) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	f.held, err = weir.GetListState(ctx, state.List[mev]("held"))
	return err
}

func (f *metaBuckets) ProcessElement(e mev, ctx weir.KeyedContext[int64], _ weir.Collector[mev]) error {
	ts, _ := ctx.Timestamp()
	f.held.Add(mev{K: e.K, TS: ts, V: e.V})
	ctx.TimerService().RegisterEventTimeTimer((ts/f.bucket+1)*f.bucket - 1)
	return nil
}

func (f *metaBuckets) OnTimer(ts int64, ctx weir.OnTimerContext[int64], out weir.Collector[mev]) error {
	var keep []mev
	var n, sum int64
	for e := range f.held.All() {
		if e.TS <= ts {
			n, sum = n+1, sum+e.V
		} else {
			keep = append(keep, e)
		}
	}
	if n > 0 {
		out.Collect(mev{K: ctx.CurrentKey(), TS: ts, V: (sum*7 + n) % 1_000_003})
		f.held.Update(keep)
	}
	return nil
}

// run runs the pipeline under c and returns its committed output, sorted:
// each record as "key ts-field value @timestamp".
func (p *metaPipeline) run(t *testing.T, c metaConfig) []string {
	t.Helper()
	if !c.failOnce {
		env := weir.NewEnvironment(append(c.opts(t), metaQuiet)...)
		col := weir.Collect(p.build(env, nil, nil))
		if err := env.Execute(t.Context(), "metamorphic"); err != nil {
			t.Fatalf("config %q: %v", c.name, err)
		}
		got := col.Values()
		slices.Sort(got)
		return got
	}
	var store weir.CheckpointStore = weir.NewMemoryCheckpointStore()
	if c.dirStore {
		var err error
		if store, err = weir.NewDirCheckpointStore(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var failed atomic.Bool
	execute := func(opts []weir.Option, inject *atomic.Bool) error {
		env := weir.NewEnvironment(append(opts, metaQuiet)...)
		env.EnableCheckpointing(time.Millisecond, append([]weir.CheckpointOption{weir.CheckpointStoreIn(store), weir.RestoreFromLatest()}, c.ckOpts...)...)
		// The failing run's source holds in the middle of each split until
		// a checkpoint has completed, and the map fails at the first
		// event after that: the failure always comes after a checkpoint,
		// however slow the machine. The restored run has the same graph.
		fail := func(e mev) mev { return e }
		var gate *ckGate
		if inject != nil {
			gate = newCkGate(store, nil)
			fail = func(e mev) mev {
				if gate.open() && inject.CompareAndSwap(false, true) {
					panic("injected failure")
				}
				return e
			}
		}
		lines := p.build(env, fail, gate)
		file.Sink(lines, dir, func(s string) []byte { return []byte(s) })
		return env.Execute(t.Context(), "metamorphic")
	}
	err := execute(c.opts(t), &failed)
	if c.rescaleTo > 0 && failed.Load() {
		if err == nil {
			t.Fatalf("config %q: the job survived a failure without restarts", c.name)
		}
		err = execute(append(c.opts(t), weir.WithParallelism(c.rescaleTo)), nil)
	}
	if err != nil {
		t.Fatalf("config %q: %v", c.name, err)
	}
	if !failed.Load() {
		t.Fatalf("config %q: the injected failure never happened", c.name)
	}
	got, err := file.ReadCommittedLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// build adds the pipeline to env: the source as fast as it goes, a map
// calling fail on every event if fail is set, the stages and the
// formatting of the output. A run with fail set (a configuration with a
// failure) reads a heldGenerate source held by gate (nil: never held) at
// parallelism 2, since the generator's splits depend on its parallelism
// and a restore at another one must find the same splits; the source has
// a UID because its chaining to the map, and so its automatic id and those
// after it (as in Flink), change with the map's parallelism.
func (p *metaPipeline) build(env *weir.Environment, fail func(mev) mev, gate *ckGate) weir.DataStream[string] {
	strategy := weir.ForBoundedOutOfOrderness[mev](time.Duration(p.disorder) * time.Millisecond).
		WithTimestampAssigner(func(e mev, _ int64) int64 { return e.TS })
	var s weir.DataStream[mev]
	if fail == nil {
		s = weir.Generate(env, p.n, 0, p.event, strategy).UID("source")
	} else {
		s = weir.Map(heldGenerate(env, p.n, p.event, gate, strategy).SetParallelism(2).UID("source"), fail)
	}
	for _, st := range p.stages {
		s = st(s)
	}
	return weir.ProcessStreamFunc(s, func(e mev, ctx weir.Context, out weir.Collector[string]) error {
		ts, _ := ctx.Timestamp()
		out.Collect(fmt.Sprintf("%d %d %d @%d", e.K, e.TS, e.V, ts))
		return nil
	})
}

// metaDiff describes how two sorted outputs differ, or returns "".
func metaDiff(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	missing, extra := 0, 0
	var first []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing++
			if len(first) < 3 {
				first = append(first, "missing "+want[i])
			}
			i++
		case i == len(want) || got[j] < want[i]:
			extra++
			if len(first) < 3 {
				first = append(first, "extra "+got[j])
			}
			j++
		default:
			i++
			j++
		}
	}
	return fmt.Sprintf("%d records, want %d: %d missing, %d extra (%s)", len(got), len(want), missing, extra, strings.Join(first, "; "))
}
