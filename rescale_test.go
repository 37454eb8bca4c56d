package weir_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
)

// evt is an input record of the rescale job: key, event time, value.
type evt struct {
	Key int
	TS  int64
	V   int64
}

func evtAt(i int64) evt { return evt{Key: int(i*7919) % 37, TS: i * 10, V: i} }

// gatedSource emits evtAt(0..n-1) as one split in order, but holds (blocks)
// once it has emitted limit records unless limit >= n, where it ends. It
// closes reached when it has emitted limit records.
type gatedSource struct {
	n, limit int64
	reached  chan struct{}
	once     sync.Once
	pace     time.Duration // pause before each batch, if set
}

type gatedSplit struct{}

func (gatedSplit) SplitID() string { return "gated" }

func (s *gatedSource) Splits(int) ([]connector.Split, error) {
	return []connector.Split{gatedSplit{}}, nil
}

func (s *gatedSource) Reader(connector.Split) (connector.SplitReader[evt], error) {
	return &gatedReader{s: s}, nil
}

// ReaderAt resumes at a position Position reported.
func (s *gatedSource) ReaderAt(_ connector.Split, pos []byte) (connector.SplitReader[evt], error) {
	next, n := binary.Varint(pos)
	if n <= 0 {
		return nil, fmt.Errorf("bad position %x", pos)
	}
	return &gatedReader{s: s, next: next}, nil
}

type gatedReader struct {
	s    *gatedSource
	next int64
}

func (r *gatedReader) Read(ctx context.Context, buf []weir.Record[evt]) ([]weir.Record[evt], error) {
	s := r.s
	if r.next >= s.n {
		return buf, io.EOF
	}
	if r.next >= s.limit {
		s.once.Do(func() { close(s.reached) })
		<-ctx.Done() // held until the job stops
		return buf, ctx.Err()
	}
	if s.pace > 0 {
		time.Sleep(s.pace)
	}
	end := min(r.next+50, s.limit, s.n)
	for ; r.next < end; r.next++ {
		e := evtAt(r.next)
		buf = append(buf, weir.Record[evt]{Value: e, TS: e.TS})
	}
	return buf, nil
}

func (r *gatedReader) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }
func (r *gatedReader) Close() error              { return nil }

// sumOnTimer keeps, per key, the values not yet summed (by timestamp) and
// a running total; an event-time timer at the end of each second of event
// time adds the values up to it to the total and emits "key@t=total".
// What it emits does not depend on when watermarks arrive.
type sumOnTimer struct {
	total   state.ValueState[int64]
	pending state.MapState[int64, int64]
	hook    func(evt) // called with every element, if set (fault injection)
}

func (f *sumOnTimer) Open(ctx weir.KeyedRuntimeContext[int]) (err error) {
	if f.total, err = weir.GetValueState(ctx, state.Value[int64]("total")); err != nil {
		return err
	}
	f.pending, err = weir.GetMapState(ctx, state.Map[int64, int64]("pending"))
	return err
}

func (f *sumOnTimer) ProcessElement(e evt, ctx weir.KeyedContext[int], _ weir.Collector[string]) error {
	if f.hook != nil {
		f.hook(e)
	}
	v, _ := f.pending.Get(e.TS)
	f.pending.Put(e.TS, v+e.V)
	ctx.TimerService().RegisterEventTimeTimer(e.TS/1000*1000 + 999)
	return nil
}

func (f *sumOnTimer) OnTimer(ts int64, ctx weir.OnTimerContext[int], out weir.Collector[string]) error {
	total, _ := f.total.Value()
	var done []int64
	for t, v := range f.pending.All() {
		if t <= ts {
			total += v
			done = append(done, t)
		}
	}
	for _, t := range done {
		f.pending.Remove(t)
	}
	f.total.Update(total)
	out.Collect(fmt.Sprintf("%d@%d=%d", ctx.CurrentKey(), ts, total))
	return nil
}

// rescaleJob builds the job: the gated source (parallelism 1: its one
// split does not depend on the parallelism), a keyed process function with
// state and event-time timers, and an interval join of the even records
// with the odd ones of the same key within 400 ms (37 records apart), each into an
// exactly-once file sink.
func rescaleJob(env *weir.Environment, src *gatedSource, sums, joins, processUID string, hook ...func(evt)) {
	fn := &sumOnTimer{}
	if len(hook) > 0 {
		fn.hook = hook[0]
	}
	in := weir.FromSource(env, src, weir.ForMonotonousTimestamps[evt](), "gated").SetParallelism(1).UID("source")
	byKey := func(e evt) int { return e.Key }
	summed := weir.Process(weir.KeyBy(in, byKey), fn).UID(processUID).Name("sums")
	file.Sink(summed, sums, func(s string) []byte { return []byte(s) })
	even := weir.Filter(in, func(e evt) bool { return e.V%2 == 0 })
	odd := weir.Filter(in, func(e evt) bool { return e.V%2 == 1 })
	joined := weir.IntervalJoinFunc(weir.KeyBy(even, byKey), weir.KeyBy(odd, byKey), weir.Between(-400*time.Millisecond, 400*time.Millisecond),
		func(l, r evt, ctx weir.JoinContext, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%d:%d+%d@%d", l.Key, l.V, r.V, ctx.Timestamp()))
			return nil
		}).UID("join").Name("join")
	file.Sink(joined, joins, func(s string) []byte { return []byte(s) })
}

func committed(t *testing.T, dirs ...string) []string {
	t.Helper()
	var all []string
	for _, d := range dirs {
		lines, err := file.ReadCommittedLines(d)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, lines...)
	}
	slices.Sort(all)
	return all
}

// TestRescaleThroughSavepoints runs the job at parallelism 1 until a
// quarter of the input is read, stops it with a savepoint, restores it at
// parallelism 2 for the next quarter, then 3, then 1 to the end: the
// committed output equals that of an uninterrupted run, so every key's
// state and timers followed its key group to whichever subtask owns it.
func TestRescaleThroughSavepoints(t *testing.T) {
	const n = 4000
	ref := t.TempDir()
	refSums, refJoins := filepath.Join(ref, "sums"), filepath.Join(ref, "joins")
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(16))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, refSums, refJoins, "sums")
	if err := env.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committed(t, refSums, refJoins)

	dir := t.TempDir()
	sums, joins, spDir := filepath.Join(dir, "sums"), filepath.Join(dir, "joins"), filepath.Join(dir, "savepoints")
	path := ""
	var perPhase []int
	for i, p := range []int{1, 2, 3, 1} {
		limit := int64(n * (i + 1) / 4)
		opts := []weir.Option{weir.WithParallelism(p), weir.WithBufferSize(16)}
		if path != "" {
			opts = append(opts, weir.RestoreFromSavepoint(path))
		}
		env := weir.NewEnvironment(opts...)
		env.EnableCheckpointing(time.Hour)
		src := &gatedSource{n: n, limit: limit, reached: make(chan struct{})}
		rescaleJob(env, src, sums, joins, "sums")
		h, err := env.ExecuteAsync(t.Context(), fmt.Sprintf("phase-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if limit < n {
			select {
			case <-src.reached:
			case <-h.Done():
				t.Fatalf("phase %d ended early: %v", i, h.Wait())
			}
			if path, err = h.StopWithSavepoint(t.Context(), spDir); err != nil {
				t.Fatalf("phase %d: %v", i, err)
			}
			if !strings.HasPrefix(filepath.Base(path), "savepoint-") {
				t.Fatalf("savepoint path %q", path)
			}
		}
		// A phase stopped with a savepoint ends with ErrStopped, the
		// last one, whose input ends, with nil.
		if err := h.Wait(); (limit < n) != errors.Is(err, weir.ErrStopped) || limit >= n && err != nil {
			t.Fatalf("phase %d (parallelism %d): %v", i, p, err)
		}
		perPhase = append(perPhase, len(committed(t, sums, joins)))
	}
	got := committed(t, sums, joins)
	if len(want) < n {
		t.Fatalf("the reference run committed only %d lines", len(want))
	}
	if perPhase[0] == 0 || perPhase[1] <= perPhase[0] || perPhase[2] <= perPhase[1] {
		t.Fatalf("lines committed after each phase: %v; every phase should add some", perPhase)
	}
	if !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("rescaled runs committed %d lines, the uninterrupted run %d; missing %d (%v), extra %d (%v)",
			len(got), len(want), len(missing), head(missing), len(extra), head(extra))
	}
}

// TestSavepointFailoverRestoresSavepoint: a job started from a savepoint
// that fails before its first checkpoint restarts from the savepoint, not
// from scratch, and the output still equals an uninterrupted run.
func TestSavepointFailoverRestoresSavepoint(t *testing.T) {
	const n = 2000
	ref := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(2))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, filepath.Join(ref, "s"), filepath.Join(ref, "j"), "sums")
	if err := env.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committed(t, filepath.Join(ref, "s"), filepath.Join(ref, "j"))

	dir := t.TempDir()
	sums, joins := filepath.Join(dir, "s"), filepath.Join(dir, "j")
	env = weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Hour)
	src := &gatedSource{n: n, limit: n / 2, reached: make(chan struct{})}
	rescaleJob(env, src, sums, joins, "sums")
	h, err := env.ExecuteAsync(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	h.Wait()

	var failed atomic.Bool
	env = weir.NewEnvironment(weir.WithParallelism(3), weir.RestoreFromSavepoint(path),
		weir.WithRestartStrategy(weir.FixedDelayRestart(1, 0)))
	env.EnableCheckpointing(time.Hour)
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, sums, joins, "sums", func(e evt) {
		if e.V >= n*3/4 && failed.CompareAndSwap(false, true) {
			panic("injected failure before any checkpoint")
		}
	})
	if err := env.Execute(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("no failure was injected")
	}
	if got := committed(t, sums, joins); !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("committed %d lines, want %d; missing %d (%v), extra %d (%v)", len(got), len(want), len(missing), head(missing), len(extra), head(extra))
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }

// diffLines returns the lines of want missing from got and those of got
// not in want (as multisets; both sorted).
func diffLines(want, got []string) (missing, extra []string) {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	return missing, extra
}

// takeSavepoint runs the rescale job over the first quarter of the input
// and stops it with a savepoint, returning its path.
func takeSavepoint(t *testing.T, opts ...weir.Option) string {
	t.Helper()
	dir := t.TempDir()
	env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(2)}, opts...)...)
	env.EnableCheckpointing(time.Hour)
	src := &gatedSource{n: 400, limit: 100, reached: make(chan struct{})}
	rescaleJob(env, src, filepath.Join(dir, "sums"), filepath.Join(dir, "joins"), "sums")
	h, err := env.ExecuteAsync(t.Context(), "savepointed")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	path, err := h.StopWithSavepoint(t.Context(), filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatalf("a job stopped with a savepoint ended with %v", err)
	}
	return path
}

// TestSavepointRestoreChecks: a savepoint from an incompatible job, a
// max-parallelism change or a missing directory fail Execute clearly, and
// AllowNonRestoredState drops state of unknown UIDs.
func TestSavepointRestoreChecks(t *testing.T) {
	path := takeSavepoint(t)
	run := func(uid string, opts ...weir.Option) error {
		dir := t.TempDir()
		env := weir.NewEnvironment(append([]weir.Option{weir.WithParallelism(2)}, opts...)...)
		rescaleJob(env, &gatedSource{n: 400, limit: 400, reached: make(chan struct{})}, filepath.Join(dir, "s"), filepath.Join(dir, "j"), uid)
		return env.Execute(t.Context(), "restored")
	}
	err := run("renamed", weir.RestoreFromSavepoint(path))
	if err == nil || !strings.Contains(err.Error(), `"sums"`) || !strings.Contains(err.Error(), "AllowNonRestoredState") {
		t.Fatalf("restoring into a job without UID sums: %v", err)
	}
	if err := run("renamed", weir.RestoreFromSavepoint(path, weir.AllowNonRestoredState())); err != nil {
		t.Fatalf("with AllowNonRestoredState: %v", err)
	}
	err = run("sums", weir.RestoreFromSavepoint(path), weir.WithMaxParallelism(64))
	if err == nil || !strings.Contains(err.Error(), "max parallelism 128") || !strings.Contains(err.Error(), "64") {
		t.Fatalf("restoring with another max parallelism: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope", "savepoint-3")
	err = run("sums", weir.RestoreFromSavepoint(missing))
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("restoring from a missing directory: %v", err)
	}
	// The savepoint's parent directory stands for its newest savepoint.
	if err := run("sums", weir.RestoreFromSavepoint(filepath.Dir(path))); err != nil {
		t.Fatalf("restoring from the savepoint directory's parent: %v", err)
	}
	// A damaged savepoint is refused, naming the file.
	kg, _ := filepath.Glob(filepath.Join(path, "*.kg"))
	if len(kg) == 0 {
		t.Fatalf("no keyed state files in %s", path)
	}
	if err := os.WriteFile(kg[0], []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run("sums", weir.RestoreFromSavepoint(path))
	if err == nil || !strings.Contains(err.Error(), filepath.Base(kg[0])) {
		t.Fatalf("restoring from a damaged savepoint: %v", err)
	}
}

// TestTriggerSavepointKeepsRunning takes an intermediate savepoint: the
// job goes on and ends normally, the savepoint is a "savepoint" in the
// manifest, and it is not in the checkpoint store (retention never sees
// it).
func TestTriggerSavepointKeepsRunning(t *testing.T) {
	dir := t.TempDir()
	cps := filepath.Join(dir, "cps")
	st, err := weir.NewDirCheckpointStore(cps)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Hour, weir.CheckpointStoreIn(st))
	src := &gatedSource{n: 400, limit: 100, reached: make(chan struct{})}
	rescaleJob(env, src, filepath.Join(dir, "s"), filepath.Join(dir, "j"), "sums")
	h, err := env.ExecuteAsync(t.Context(), "intermediate")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	path, err := h.TriggerSavepoint(t.Context(), filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
		t.Fatalf("the job ended after an intermediate savepoint: %v", h.Wait())
	default:
	}
	manifest, err := os.ReadFile(filepath.Join(path, "_manifest.json"))
	if err != nil || !strings.Contains(string(manifest), `"kind": "savepoint"`) || !strings.Contains(string(manifest), `"job_id": "intermediate"`) {
		t.Fatalf("manifest %s (%v)", manifest, err)
	}
	if ents, _ := os.ReadDir(cps); len(ents) != 0 {
		t.Fatalf("the checkpoint store has %d entries after a savepoint", len(ents))
	}
	h.Cancel()
	if err := h.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// Savepoints need checkpointing.
	env = weir.NewEnvironment(weir.WithParallelism(1))
	src = &gatedSource{n: 400, limit: 100, reached: make(chan struct{})}
	rescaleJob(env, src, filepath.Join(dir, "s2"), filepath.Join(dir, "j2"), "sums")
	h, err = env.ExecuteAsync(t.Context(), "no-checkpointing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.TriggerSavepoint(t.Context(), filepath.Join(dir, "sp")); err == nil || !strings.Contains(err.Error(), "EnableCheckpointing") {
		t.Fatalf("savepoint without checkpointing: %v", err)
	}
	h.Cancel()
	h.Wait()
}
