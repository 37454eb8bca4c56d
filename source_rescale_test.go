package weir_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/weirtest"
)

// genSink gathers what a generator job emits.
type genSink struct {
	mu   sync.Mutex
	vals []int64
	n    chan struct{} // one token per value
}

func newGenSink() *genSink { return &genSink{n: make(chan struct{}, 1<<20)} }

func (g *genSink) add(v int64) error {
	g.mu.Lock()
	g.vals = append(g.vals, v)
	g.mu.Unlock()
	select {
	case g.n <- struct{}{}:
	default: // only counted waits read them
	}
	return nil
}

func (g *genSink) sorted() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(slices.Values(g.vals))
}

// genJob builds a generator of 0..count-1 (UID "gen") at parallelism p,
// limited to rate records per second on env's clock (0: no limit), into
// sink.
func genJob(env *weir.Environment, count int64, rate float64, p int, sink *genSink) {
	gen := weir.Generate(env, count, rate, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()).UID("gen").SetParallelism(p)
	weir.SinkFunc(gen, sink.add).SetParallelism(p)
}

// genSizes returns the sizes of the p splits of a generator of count.
func genSizes(count int64, p int) []int64 {
	out := make([]int64, p)
	for i := range p {
		out[i] = count*int64(i+1)/int64(p) - count*int64(i)/int64(p)
	}
	return out
}

// stopGen runs the generator of 0..count-1 (UID "gen") at parallelism p
// until each of its p splits has emitted stop records, stops it with a
// savepoint into dir and returns the savepoint's path and what the job
// emitted. The generator is rate-limited on a manual clock that never
// moves: stop*p*1000 records per second allows each split exactly stop
// records (none for stop 0). stop must be smaller than every split, so
// that no subtask finishes.
func stopGen(t *testing.T, count int64, p int, stop int64, dir string) (string, []int64) {
	t.Helper()
	rate := float64(stop) * float64(p) * 1000
	if stop == 0 {
		rate = 0.5 * float64(p) * 1000 // half a record per split
	}
	env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithClock(weirtest.NewManualClock(1000)))
	env.EnableCheckpointing(time.Hour)
	sink := newGenSink()
	genJob(env, count, rate, p, sink)
	h, err := env.ExecuteAsync(t.Context(), "gen-first")
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, n := range genSizes(count, p) {
		if count >= 0 && n <= stop {
			t.Fatalf("stop %d reaches the end of a split of %d", stop, n)
		}
		want += stop
	}
	for range want {
		recv(t, h, sink.n)
	}
	path, err := h.StopWithSavepoint(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatalf("a job stopped with a savepoint ended with %v", err)
	}
	got := sink.sorted()
	if int64(len(got)) != want {
		t.Fatalf("the first run emitted %d records, want %d", len(got), want)
	}
	return path, got
}

// resumeGen runs the bounded generator of 0..count-1 from savepoint path
// at parallelism p to its end and returns what it emitted.
func resumeGen(t *testing.T, path string, count int64, p int) []int64 {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(p), weir.RestoreFromSavepoint(path))
	env.EnableCheckpointing(time.Hour)
	sink := newGenSink()
	genJob(env, count, 0, p, sink)
	if err := env.Execute(t.Context(), "gen-resumed"); err != nil {
		t.Fatalf("resuming at parallelism %d: %v", p, err)
	}
	return sink.sorted()
}

// seq returns lo..hi-1.
func seqInts(lo, hi int64) []int64 {
	var out []int64
	for v := lo; v < hi; v++ {
		out = append(out, v)
	}
	return out
}

// checkExactlyOnce fails unless first and second (each sorted) together
// are exactly want (sorted): no record lost, none twice.
func checkExactlyOnce(t *testing.T, what string, first, second, want []int64) {
	t.Helper()
	all := slices.Sorted(slices.Values(slices.Concat(first, second)))
	if slices.Equal(all, want) {
		return
	}
	var dup, missing []int64
	seen := map[int64]int{}
	for _, v := range all {
		if seen[v]++; seen[v] == 2 {
			dup = append(dup, v)
		}
	}
	for _, v := range want {
		if seen[v] == 0 {
			missing = append(missing, v)
		}
	}
	t.Fatalf("%s: %d records in the two runs (%d, %d), want %d; twice: %v; missing: %v",
		what, len(all), len(first), len(second), len(want), head64(dup), head64(missing))
}

func head64(s []int64) []int64 { return s[:min(len(s), 10)] }

// TestGenerateRescaleThroughSavepoint: a bounded generator stopped with a
// savepoint part way and resumed at another parallelism produces every
// index exactly once over the two runs, the same records as a run
// straight through.
func TestGenerateRescaleThroughSavepoint(t *testing.T) {
	const count = 1000
	env := weir.NewEnvironment(weir.WithParallelism(2))
	sink := newGenSink()
	genJob(env, count, 0, 2, sink)
	mustRun(t, env)
	straight := sink.sorted()
	if !slices.Equal(straight, seqInts(0, count)) {
		t.Fatalf("straight through: %d records, want 0..%d", len(straight), count-1)
	}
	for _, c := range []struct {
		p1, p2 int
		stop   int64
	}{{1, 3, 400}, {3, 1, 100}, {2, 4, 250}, {2, 2, 10}, {4, 2, 0}} {
		t.Run(fmt.Sprintf("%d-to-%d-at-%d", c.p1, c.p2, c.stop), func(t *testing.T) {
			path, first := stopGen(t, count, c.p1, c.stop, t.TempDir())
			second := resumeGen(t, path, count, c.p2)
			checkExactlyOnce(t, "stopped and resumed", first, second, straight)
		})
	}
}

// TestGenerateRescaleProperty draws (count, p1, p2, stop point)
// combinations, and for each checks that stopping with a savepoint and
// resuming at p2 produces exactly 0..count-1, then that resuming the same
// savepoint again at a third parallelism does too (a savepoint can be
// restored any number of times).
func TestGenerateRescaleProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	for k := range 8 {
		count := 20 + rng.Int64N(3000)
		p1, p2, p3 := 1+rng.IntN(4), 1+rng.IntN(5), 1+rng.IntN(3)
		minSplit := slices.Min(genSizes(count, p1))
		stop := rng.Int64N(minSplit)
		name := fmt.Sprintf("%d:n=%d,p=%d-to-%d-and-%d,stop=%d", k, count, p1, p2, p3, stop)
		t.Run(name, func(t *testing.T) {
			path, first := stopGen(t, count, p1, stop, t.TempDir())
			want := seqInts(0, count)
			checkExactlyOnce(t, "resumed at p2", first, resumeGen(t, path, count, p2), want)
			checkExactlyOnce(t, "resumed at p3", first, resumeGen(t, path, count, p3), want)
		})
	}
}

// TestGenerateUnboundedRescale: an unbounded generator (subtask s of p
// producing s, s+p, ...) stopped with a savepoint at parallelism 1,
// resumed at 3 (two subtasks without a split, which stay open so that
// checkpoints go on), stopped with a savepoint again and resumed at 2
// produces every index exactly once over the three runs: the first run's
// split keeps its progression wherever it runs.
func TestGenerateUnboundedRescale(t *testing.T) {
	const stop = 37
	path, first := stopGen(t, -1, 1, stop, t.TempDir())
	if !slices.Equal(first, seqInts(0, stop)) {
		t.Fatalf("first run emitted %v, want 0..%d", head64(first), stop-1)
	}
	// run resumes from path at parallelism p until it has emitted at
	// least n records, then stops it with a savepoint (stop) or cancels
	// it, and returns the savepoint's path and what it emitted.
	run := func(path string, p, n int, stop bool) (string, []int64) {
		env := weir.NewEnvironment(weir.WithParallelism(p), weir.RestoreFromSavepoint(path))
		env.EnableCheckpointing(time.Hour)
		sink := newGenSink()
		genJob(env, -1, 50_000, p, sink)
		h := start(t, env)
		for range n {
			recv(t, h, sink.n)
		}
		next := ""
		if stop {
			var err error
			if next, err = h.StopWithSavepoint(t.Context(), t.TempDir()); err != nil {
				t.Fatalf("stop with savepoint at parallelism %d: %v", p, err)
			}
		} else {
			h.Cancel()
		}
		<-h.Done()
		return next, sink.sorted()
	}
	path2, second := run(path, 3, 500, true)
	_, third := run(path2, 2, 500, false)
	all := slices.Sorted(slices.Values(slices.Concat(first, second, third)))
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatalf("an index was emitted twice over the three runs")
	}
	// The runs produced a prefix of 0, 1, 2, ...: the last index of the
	// second run is below the first index the third run lacks.
	upTo := second[len(second)-1] + 1
	if len(third) == 0 || third[0] != upTo {
		t.Fatalf("the third run starts at %v, want %d", head64(third), upTo)
	}
	checkExactlyOnce(t, fmt.Sprint("unbounded, indexes below ", upTo), first, filterBelow(slices.Concat(second, third), upTo), seqInts(0, upTo))
}

// filterBelow returns the values of s below n, sorted.
func filterBelow(s []int64, n int64) []int64 {
	var out []int64
	for _, v := range s {
		if v < n {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// TestGenerateOldSavepointRestores restores testdata/oldformat/gen, a
// savepoint of a generator at parallelism 2 written before its splits
// became rescalable (split ids gen-0-of-2, gen-1-of-2, each having
// emitted 100 records: 0..99 and 500..599 of 0..999), at its parallelism
// and at others: every run emits exactly the rest.
func TestGenerateOldSavepointRestores(t *testing.T) {
	var want []int64
	want = append(want, seqInts(100, 500)...)
	want = append(want, seqInts(600, 1000)...)
	for _, p := range []int{2, 1, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join("testdata", "oldformat", "gen", "savepoint-1"), filepath.Join(dir, "savepoint-1"))
			got := resumeGen(t, filepath.Join(dir, "savepoint-1"), 1000, p)
			if !slices.Equal(got, want) {
				t.Fatalf("restored at parallelism %d: %d records (%v...), want 100..499 and 600..999", p, len(got), head64(got))
			}
		})
	}
}

// copyDir copies the files of directory src (no subdirectories) to a new
// directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sliceRun is one run of the collection job: FromSlice of 0..n-1 (UID
// "slice"; a collection source is not parallel, as Flink's), through a
// map that, in a gated run, holds at value gateAt until release is
// closed, then rebalanced to a map and a sink at the job's parallelism p.
type sliceRun struct {
	reached, release chan struct{}
	once             sync.Once
}

func sliceJob(env *weir.Environment, n int64, p int, gateAt int64, r *sliceRun, sink *genSink) {
	vals := seqInts(0, n)
	src := weir.FromSlice(env, vals).UID("slice")
	gated := weir.Map(src, func(v int64) int64 {
		if r != nil && v == gateAt {
			r.once.Do(func() { close(r.reached) })
			<-r.release
		}
		return v
	}).UID("gate").SetParallelism(1)
	spread := weir.Map(weir.Rebalance(gated), func(v int64) int64 { return v }).UID("spread").SetParallelism(p)
	weir.SinkFunc(spread, sink.add).SetParallelism(p)
}

// stopSlice runs the collection job at parallelism p, holds it at value
// gateAt, asks for a stop with savepoint while it is held, then lets it
// go; the savepoint's barrier follows the records the source had read by
// then. It returns the savepoint's path and what the run emitted. A
// machine so slow that the source read the whole slice before the
// savepoint's trigger reached it makes the stop fail: the run is tried
// again with a longer hold.
func stopSlice(t *testing.T, n int64, p int, gateAt int64) (string, []int64) {
	t.Helper()
	hold := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		env := weir.NewEnvironment(weir.WithParallelism(p))
		env.EnableCheckpointing(time.Hour)
		sink := newGenSink()
		r := &sliceRun{reached: make(chan struct{}), release: make(chan struct{})}
		sliceJob(env, n, p, gateAt, r, sink)
		h, err := env.ExecuteAsync(t.Context(), "slice-first")
		if err != nil {
			t.Fatal(err)
		}
		<-r.reached
		type res struct {
			path string
			err  error
		}
		done := make(chan res, 1)
		go func() {
			path, err := h.StopWithSavepoint(t.Context(), t.TempDir())
			done <- res{path, err}
		}()
		time.Sleep(hold)
		close(r.release)
		sp := <-done
		werr := h.Wait()
		if sp.err != nil && attempt < 3 {
			t.Logf("attempt %d: the source ended before the savepoint (%v); again with a longer hold", attempt, sp.err)
			hold *= 4
			continue
		}
		if sp.err != nil {
			t.Fatal(sp.err)
		}
		if !errors.Is(werr, weir.ErrStopped) {
			t.Fatalf("a job stopped with a savepoint ended with %v", werr)
		}
		got := sink.sorted()
		if int64(len(got)) <= gateAt || int64(len(got)) >= n {
			t.Fatalf("the first run emitted %d of %d records, want a part past %d", len(got), n, gateAt)
		}
		return sp.path, got
	}
}

// TestFromSliceRescaleThroughSavepoint: a job reading a collection source,
// stopped with a savepoint part way and resumed at another parallelism,
// emits exactly the rest.
func TestFromSliceRescaleThroughSavepoint(t *testing.T) {
	const n = 300_000
	want := seqInts(0, n)
	for _, c := range []struct{ p1, p2 int }{{1, 3}, {3, 1}, {2, 4}} {
		t.Run(fmt.Sprintf("%d-to-%d", c.p1, c.p2), func(t *testing.T) {
			path, first := stopSlice(t, n, c.p1, 5000)
			env := weir.NewEnvironment(weir.WithParallelism(c.p2), weir.RestoreFromSavepoint(path))
			env.EnableCheckpointing(time.Hour)
			sink := newGenSink()
			sliceJob(env, n, c.p2, -1, nil, sink)
			if err := env.Execute(t.Context(), "slice-resumed"); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, "stopped and resumed", first, sink.sorted(), want)
		})
	}
}
