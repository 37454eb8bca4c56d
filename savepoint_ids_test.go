package weir_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/weirtest"
)

// idCounter counts the records of each key and emits the running count.
type idCounter struct{ n state.ValueState[int64] }

type keyCount struct{ Key, N int64 }

func (c *idCounter) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *idCounter) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[keyCount]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(keyCount{ctx.CurrentKey(), n + 1})
	return nil
}

func (c *idCounter) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[keyCount]) error {
	return nil
}

// maxCounts keeps the highest count seen per key; its total is the number
// of records the counter has counted, restored state included.
type maxCounts struct {
	mu   sync.Mutex
	max  map[int64]int64
	seen atomic.Int64
	at   int64         // close reached when seen reaches at
	hit  chan struct{} // may be nil
}

func newMaxCounts(at int64) *maxCounts {
	return &maxCounts{max: map[int64]int64{}, at: at, hit: make(chan struct{})}
}

func (m *maxCounts) add(c keyCount) error {
	m.mu.Lock()
	m.max[c.Key] = max(m.max[c.Key], c.N)
	m.mu.Unlock()
	if m.seen.Add(1) == m.at {
		close(m.hit)
	}
	return nil
}

func (m *maxCounts) total() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t int64
	for _, n := range m.max {
		t += n
	}
	return t
}

const idTrialRecords = 5000

// trialUIDs are the UIDs of the trial job's source and counter ("": none).
type trialUIDs struct{ source, counter string }

var withUIDs = trialUIDs{"numbers", "counter"}

// idTrialJob is the trial: Generate -> KeyBy -> Process(counter)
// -> sink, with the given UIDs, optionally with a Filter in front of the
// KeyBy; rate 0 runs the generator as fast as it goes.
func idTrialJob(env *weir.Environment, rate float64, filter bool, uids trialUIDs, sink *maxCounts) {
	src := weir.Generate(env, idTrialRecords, rate, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	if uids.source != "" {
		src = src.UID(uids.source)
	}
	if filter {
		src = weir.Filter(src, func(int64) bool { return true })
	}
	counts := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % 10 }), &idCounter{})
	if uids.counter != "" {
		counts = counts.UID(uids.counter)
	}
	weir.SinkFunc(counts, sink.add)
}

// idTrialSavepoint runs the trial job until its sink has seen 2,000 of the
// 5,000 records and stops it with a savepoint: the generator's rate lets
// each of its two readers emit 1,000 records at once, then wait for a
// manual clock that never moves.
func idTrialSavepoint(t *testing.T, uids trialUIDs) string {
	t.Helper()
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithClock(clk), weir.WithLogger(quietLogger()))
	env.EnableCheckpointing(time.Hour)
	sink := newMaxCounts(2000)
	idTrialJob(env, 2_000_000, false, uids, sink)
	h, err := env.ExecuteAsync(t.Context(), "trial")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.hit:
	case <-h.Done():
		t.Fatalf("the job ended early: %v", h.Wait())
	}
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(t.TempDir(), "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	if got := sink.total(); got != 2000 {
		t.Fatalf("counted %d records before the savepoint, want 2000", got)
	}
	return path
}

// restoreTrial runs the trial job from path and returns the counter's
// total and Execute's error.
func restoreTrial(t *testing.T, path string, filter bool, uids trialUIDs, ropts ...weir.RestoreOption) (int64, error) {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()), weir.RestoreFromSavepoint(path, ropts...))
	env.EnableCheckpointing(time.Hour)
	return runTrial(t, env, filter, uids)
}

// runTrial runs the trial job on env as fast as it goes and returns the
// counter's total and Execute's error.
func runTrial(t *testing.T, env *weir.Environment, filter bool, uids trialUIDs) (int64, error) {
	t.Helper()
	sink := newMaxCounts(-1)
	idTrialJob(env, 0, filter, uids, sink)
	err := env.Execute(t.Context(), "restored")
	return sink.total(), err
}

// TestRestoreIntoChangedJob is the trial: a keyed counter without
// UIDs, stopped with a savepoint after 2,000 of 5,000 records; a Filter
// inserted before the KeyBy. Automatic ids follow the graph as Flink's
// StreamGraphHasherV2 does (position in the traversal, chained outputs,
// the inputs' ids), so the source (now chained to the filter) and the
// counter (now further down) get other ids and their state is unclaimed:
// the restore is refused, naming both, unless AllowNonRestoredState, which
// runs the job from scratch as asked. The unchanged job restores without
// UIDs, and with UIDs the changed one does too.
func TestRestoreIntoChangedJob(t *testing.T) {
	path := idTrialSavepoint(t, trialUIDs{})

	total, err := restoreTrial(t, path, true, trialUIDs{})
	if err == nil {
		t.Fatalf("restoring into the changed job without UIDs returned nil (counted %d records)", total)
	}
	for _, want := range []string{`"Generator"`, `"KeyedProcess"`, "AllowNonRestoredState", ".UID", "key groups", "source "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not mention %s: %v", want, err)
		}
	}
	if total != 0 {
		t.Errorf("the refused job counted %d records", total)
	}

	total, err = restoreTrial(t, path, true, trialUIDs{}, weir.AllowNonRestoredState())
	if err != nil {
		t.Fatalf("with AllowNonRestoredState: %v", err)
	}
	if total != idTrialRecords {
		t.Errorf("with AllowNonRestoredState (state dropped, the source starts over) the counts total %d, want %d", total, idTrialRecords)
	}

	total, err = restoreTrial(t, path, false, trialUIDs{})
	if err != nil || total != idTrialRecords {
		t.Errorf("restoring the unchanged job without UIDs: counts total %d, want %d (%v)", total, idTrialRecords, err)
	}

	path = idTrialSavepoint(t, withUIDs)
	total, err = restoreTrial(t, path, true, withUIDs)
	if err != nil || total != idTrialRecords {
		t.Errorf("restoring the changed job with UIDs: counts total %d, want %d (%v)", total, idTrialRecords, err)
	}
}

// TestRestoreIntoReplacedSource: the trial's Generate swapped for
// FromSlice keeps every automatic id (same place in the graph), but the
// source is another kind of source, so its saved split positions are not
// given to it: the refusal says that the source was replaced.
func TestRestoreIntoReplacedSource(t *testing.T) {
	path := idTrialSavepoint(t, trialUIDs{})
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()), weir.RestoreFromSavepoint(path))
	env.EnableCheckpointing(time.Hour)
	sink := newMaxCounts(-1)
	src := weir.FromSlice(env, []int64{1, 2, 3})
	weir.SinkFunc(weir.Process(weir.KeyBy(src, func(v int64) int64 { return v % 10 }), &idCounter{}), sink.add)
	err := env.Execute(t.Context(), "replaced")
	if err == nil {
		t.Fatal("restoring a Generate source's state into FromSlice returned nil")
	}
	for _, want := range []string{`"Generator"`, `"FromSlice"`, "another kind of source"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not mention %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "parallelism change") {
		t.Errorf("the refusal blames the parallelism: %v", err)
	}
}

// TestRestoreLegacyPositionalIDs: a checkpoint written before automatic
// ids followed the graph keeps the state of operators without UIDs under
// "node-N" (N: the operator's place in the order the job was built) and
// records no kinds. Such ids name no operator now: the restore is refused,
// naming the operator that had that place and the UID that claims the
// state; with those UIDs the state restores.
func TestRestoreLegacyPositionalIDs(t *testing.T) {
	cp, err := weir.ReadSavepoint(t.Context(), idTrialSavepoint(t, trialUIDs{}))
	if err != nil {
		t.Fatal(err)
	}
	legacy := &weir.Checkpoint{ID: cp.ID, MaxParallelism: cp.MaxParallelism, Operators: map[string][]weir.OperatorSnapshot{}}
	for _, subs := range cp.Operators {
		id := "node-2" // the counter, the second operator built
		if subs[0].Kind == "source weir.generatorSource" {
			id = "node-1"
		}
		for i := range subs {
			subs[i].UID, subs[i].Kind, subs[i].Name = id, "", ""
		}
		legacy.Operators[id] = subs
	}
	run := func(uids trialUIDs) (int64, error) {
		st := weir.NewMemoryCheckpointStore()
		if err := st.Save(t.Context(), legacy); err != nil {
			t.Fatal(err)
		}
		env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithLogger(quietLogger()))
		env.EnableCheckpointing(time.Hour, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
		return runTrial(t, env, false, uids)
	}
	_, err = run(trialUIDs{})
	if err == nil {
		t.Fatal("restoring positional ids into operators without UIDs returned nil")
	}
	for _, want := range []string{`node-1`, `.UID("node-1")`, `"Generator"`, `.UID("node-2")`, `"KeyedProcess"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not mention %s: %v", want, err)
		}
	}
	total, err := run(trialUIDs{"node-1", "node-2"})
	if err != nil || total != idTrialRecords {
		t.Errorf("with UIDs node-1 and node-2: counts total %d, want %d (%v)", total, idTrialRecords, err)
	}
}

// TestDuplicateUIDs: two operators with one UID are refused when the job
// is built, as Flink refuses them.
func TestDuplicateUIDs(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []int64{1}).UID("same")
	weir.Discard(weir.Map(src, func(v int64) int64 { return v }).UID("same"))
	err := env.Execute(context.Background(), "dup")
	if err == nil || !strings.Contains(err.Error(), `"same"`) {
		t.Fatalf("two operators with UID same: %v", err)
	}
}

// quietLogger logs nowhere.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
