package weir_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
	"github.com/weirstream/weir/weirtest"
)

// parityCount counts per key in a ValueState and keeps, in a MapState, how
// many of the counts so far were even; it emits "key:count:evens".
type parityCount struct {
	n     state.ValueState[int64]
	evens state.MapState[string, int64]
}

func (c *parityCount) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if c.n, err = weir.GetValueState(ctx, state.Value[int64]("n")); err != nil {
		return err
	}
	c.evens, err = weir.GetMapState(ctx, state.Map[string, int64]("parity"))
	return err
}

func (c *parityCount) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	n, _ := c.n.Value()
	n++
	c.n.Update(n)
	e, _ := c.evens.Get("even")
	if n%2 == 0 {
		e++
		c.evens.Put("even", e)
	}
	out.Collect(fmt.Sprintf("%d:%d:%d", ctx.CurrentKey(), n, e))
	return nil
}

func (c *parityCount) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// TestPebbleStateSurvivesFailure runs a keyed count on the Pebble state
// backend with checkpoints to a directory store, fails once after a
// checkpoint and restores at another parallelism: every running count of
// every key is committed exactly once, so the Pebble state came back as of
// the checkpoint. A variant restores a heap checkpoint into Pebble (full
// snapshots restore into any backend). The other way round, an incremental
// Pebble checkpoint holds Pebble's files, which the heap backend refuses
// to read without Pebble (TestHeapRefusesIncrementalPebbleCheckpoint).
func TestPebbleStateSurvivesFailure(t *testing.T) {
	for _, c := range []struct {
		name          string
		first, second bool // Pebble in the failing run, in the restored run
	}{
		{"pebble", true, true},
		{"heap-to-pebble", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, cps, stateDir := t.TempDir(), t.TempDir(), t.TempDir()
			const n, keys = 20000, 50
			build := func(p int, onPebble, fail bool) (*weir.Environment, *atomic.Bool) {
				st, err := weir.NewDirCheckpointStore(cps)
				if err != nil {
					t.Fatal(err)
				}
				opts := []weir.Option{weir.WithParallelism(p), weir.WithBufferSize(64)}
				if onPebble {
					opts = append(opts, weir.WithStateBackend(pebble.New(stateDir)))
				}
				env := weir.NewEnvironment(opts...)
				env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
				gate := newCkGate(st, nil)
				src := heldGenerate(env, n, func(i int64) int64 { return i % keys }, gate).SetParallelism(2)
				counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &parityCount{})
				check, failed := failAfterGate[string](gate, fail)
				file.Sink(weir.Map(counted, check), out, func(s string) []byte { return []byte(s) })
				return env, failed
			}
			failThenResume(t, func(p int, fail bool) (*weir.Environment, *atomic.Bool) {
				if fail {
					return build(p, c.first, true)
				}
				return build(p, c.second, false)
			}, 2, 3)
			lines, err := file.ReadCommittedLines(out)
			if err != nil {
				t.Fatal(err)
			}
			committed := map[string]int{}
			for _, l := range lines {
				committed[l]++
			}
			for k := range keys {
				for c := 1; c <= n/keys; c++ {
					if got := committed[fmt.Sprintf("%d:%d:%d", k, c, c/2)]; got != 1 {
						t.Fatalf("key %d count %d committed %d times", k, c, got)
					}
				}
			}
			if len(lines) != n {
				t.Fatalf("%d lines committed, want %d", len(lines), n)
			}
			// Every subtask removed its database when it ended, failed or
			// not.
			left, err := os.ReadDir(stateDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("state directory holds %d entries after the jobs", len(left))
			}
		})
	}
}

// listEcho appends each value to a per-key ListState and emits the list;
// Open records how many databases the state directory holds.
type listEcho struct {
	dir  string
	dbs  *atomic.Int64
	list state.ListState[int64]
}

func (f *listEcho) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return err
	}
	f.dbs.Add(int64(len(entries)))
	f.list, err = weir.GetListState(ctx, state.List[int64]("l"))
	return err
}

func (f *listEcho) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	f.list.Add(v * 10)
	out.Collect(fmt.Sprint(f.list.Get()))
	return nil
}

func (f *listEcho) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// TestPebbleStateBackendUsed checks that a job with the Pebble backend
// keeps its functions' state in a database under the chosen directory
// while it runs, and removes it at the end.
func TestPebbleStateBackendUsed(t *testing.T) {
	stateDir := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithStateBackend(pebble.New(stateDir)))
	var dbs atomic.Int64
	src := weir.FromSlice(env, []int64{1, 2, 1, 1, 3})
	res := weir.Collect(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &listEcho{dir: stateDir, dbs: &dbs}))
	if err := env.Execute(t.Context(), "t"); err != nil {
		t.Fatal(err)
	}
	want := []string{"[10]", "[20]", "[10 10]", "[10 10 10]", "[30]"}
	if got := res.Values(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if dbs.Load() != 1 {
		t.Fatalf("%d databases in the state directory at Open, want 1", dbs.Load())
	}
	if left, _ := os.ReadDir(stateDir); len(left) != 0 {
		t.Fatalf("%d entries left in the state directory", len(left))
	}
}

// sumAvgJoin sums the first input in a ReducingState and averages the
// second in an AggregatingState per key (inputs are "<key><number>"), and
// emits both from an event-time timer 10 ms after each first-input
// element.
type sumAvgJoin struct {
	sum state.ReducingState[int64]
	avg state.AggregatingState[int64, int64]
}

type meanFn struct{}

func (meanFn) CreateAccumulator() [2]int64      { return [2]int64{} }
func (meanFn) Add(v int64, a [2]int64) [2]int64 { return [2]int64{a[0] + v, a[1] + 1} }
func (meanFn) GetResult(a [2]int64) int64       { return a[0] / max(a[1], 1) }
func (meanFn) Merge(a, b [2]int64) [2]int64     { return [2]int64{a[0] + b[0], a[1] + b[1]} }

func num(s string) int64 {
	n, _ := strconv.ParseInt(s[1:], 10, 64)
	return n
}

func (f *sumAvgJoin) Open(ctx weir.KeyedRuntimeContext[string]) (err error) {
	if f.sum, err = weir.GetReducingState(ctx, state.Reducing[int64]("sum", func(a, b int64) int64 { return a + b })); err != nil {
		return err
	}
	f.avg, err = weir.GetAggregatingState(ctx, state.Aggregating[int64, [2]int64, int64]("avg", meanFn{}))
	return err
}

func (f *sumAvgJoin) ProcessElement1(v string, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	f.sum.Add(num(v))
	ts, _ := ctx.Timestamp()
	ctx.TimerService().RegisterEventTimeTimer(ts + 10)
	return nil
}

func (f *sumAvgJoin) ProcessElement2(v string, ctx weir.KeyedContext[string], out weir.Collector[string]) error {
	f.avg.Add(num(v))
	return nil
}

func (f *sumAvgJoin) OnTimer(ts int64, ctx weir.OnTimerContext[string], out weir.Collector[string]) error {
	s, _ := f.sum.Get()
	a, ok := f.avg.Get()
	out.Collect(fmt.Sprintf("%d %s sum=%d avg=%d,%v", ts, ctx.CurrentKey(), s, a, ok))
	return nil
}

// TestPebbleKeyedCoProcess runs a keyed co-process function with reducing
// and aggregating state and event-time timers on the Pebble backend in the
// two-input harness.
func TestPebbleKeyedCoProcess(t *testing.T) {
	stateDir := t.TempDir()
	key := func(s string) string { return s[:1] }
	h, err := weirtest.NewTwoInput(func(a, b weir.DataStream[string]) weir.DataStream[string] {
		return weir.KeyedCoProcess(weir.ConnectKeyed(weir.KeyBy(a, key), weir.KeyBy(b, key)), &sumAvgJoin{})
	}, weirtest.EnvOptions(weir.WithStateBackend(pebble.New(stateDir))))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	steps := []error{
		h.ProcessElement1(0, "a1", 1),
		h.ProcessElement1(0, "b5", 2),
		h.ProcessElement2(0, "a4", 3),
		h.ProcessElement2(0, "a8", 4),
		h.ProcessElement1(0, "a2", 20),
		h.ProcessWatermark1(0, 15),
		h.ProcessWatermark2(0, 15),
		h.ProcessWatermark1(0, 40),
		h.ProcessWatermark2(0, 40),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range h.Output() {
		got = append(got, r.Value)
	}
	want := []string{"11 a sum=3 avg=6,true", "12 b sum=5 avg=0,false", "30 a sum=3 avg=6,true"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(stateDir); len(left) != 0 {
		t.Fatalf("%d entries left in the state directory", len(left))
	}
}
