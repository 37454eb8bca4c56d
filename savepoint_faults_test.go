package weir_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// flakyStore fails the first failFirst saves (all, if negative).
type flakyStore struct {
	*weir.MemoryCheckpointStore
	failFirst int64
	calls     atomic.Int64
	saved     chan struct{} // closed at the first successful save
	once      sync.Once
}

func (s *flakyStore) Save(ctx context.Context, cp *weir.Checkpoint) error {
	if n := s.calls.Add(1); s.failFirst < 0 || n <= s.failFirst {
		return errors.New("store unreachable")
	}
	s.once.Do(func() { close(s.saved) })
	return s.MemoryCheckpointStore.Save(ctx, cp)
}

// heldJob builds a keyed job over a source that holds after 100 records,
// so it runs until it fails or is cancelled.
func heldJob(t *testing.T, env *weir.Environment) *gatedSource {
	dir := t.TempDir()
	src := &gatedSource{n: 1000, limit: 100, reached: make(chan struct{})}
	rescaleJob(env, src, filepath.Join(dir, "s"), filepath.Join(dir, "j"), "sums")
	return src
}

// TestCheckpointTolerableFailures: with TolerableCheckpointFailures(2) a
// store that never works fails the job at the third consecutive failure,
// then the restart strategy restarts it once and it fails again; a store
// that fails twice and then works keeps the job running.
func TestCheckpointTolerableFailures(t *testing.T) {
	st := &flakyStore{MemoryCheckpointStore: weir.NewMemoryCheckpointStore(), failFirst: -1, saved: make(chan struct{})}
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithRestartStrategy(weir.FixedDelayRestart(1, 0)))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st), weir.TolerableCheckpointFailures(2))
	heldJob(t, env)
	err := env.Execute(t.Context(), "never-stored")
	if !errors.Is(err, weir.ErrTooManyCheckpointFailures) || !strings.Contains(err.Error(), "store unreachable") ||
		!strings.Contains(err.Error(), "giving up after 1 restarts") {
		t.Fatalf("err %v", err)
	}
	if n := st.calls.Load(); n != 6 {
		t.Fatalf("%d saves attempted, want 3 per attempt, 6 in all", n)
	}

	st = &flakyStore{MemoryCheckpointStore: weir.NewMemoryCheckpointStore(), failFirst: 2, saved: make(chan struct{})}
	env = weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st), weir.TolerableCheckpointFailures(2))
	heldJob(t, env)
	h, err := env.ExecuteAsync(t.Context(), "recovers")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.saved:
	case <-h.Done():
		t.Fatalf("the job ended: %v", h.Wait())
	}
	h.Cancel()
	if err := h.Wait(); errors.Is(err, weir.ErrTooManyCheckpointFailures) {
		t.Fatal(err)
	}
}

// logTap records log messages and calls on for each.
type logTap struct {
	mu   sync.Mutex
	msgs []string
	on   func(msg string)
}

func (l *logTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTap) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	l.mu.Lock()
	l.msgs = append(l.msgs, s)
	l.mu.Unlock()
	if l.on != nil {
		l.on(s)
	}
	return nil
}
func (l *logTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logTap) WithGroup(string) slog.Handler      { return l }

func (l *logTap) find(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			return m
		}
	}
	return ""
}

// TestCheckpointTimeoutFailsJob: a task stuck in user code holds the
// barrier back; the checkpoint expires after CheckpointTimeout and, with
// no failure tolerated, fails the job.
func TestCheckpointTimeoutFailsJob(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	tap := &logTap{on: func(m string) {
		if strings.HasPrefix(m, "checkpoint failed") {
			once.Do(func() { close(release) })
		}
	}}
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithLogger(slog.New(tap)))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointTimeout(20*time.Millisecond))
	src := weir.Generate(env, -1, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]())
	stuck := weir.Map(src, func(v int64) int64 {
		if v == 10 {
			<-release // until the checkpoint has expired
		}
		return v
	})
	weir.Discard(stuck)
	err := env.Execute(t.Context(), "stuck")
	if !errors.Is(err, weir.ErrTooManyCheckpointFailures) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("err %v", err)
	}
}

// TestCheckpointRetentionKeepsSavepoints: RetainCheckpoints(2) leaves the
// two newest checkpoints in the directory, and a savepoint written to the
// same directory survives every later checkpoint.
func TestCheckpointRetentionKeepsSavepoints(t *testing.T) {
	dir := t.TempDir()
	st, err := weir.NewDirCheckpointStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st), weir.RetainCheckpoints(2))
	src := heldJob(t, env)
	h, err := env.ExecuteAsync(t.Context(), "retained")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	sp, err := h.TriggerSavepoint(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoint(t, h, st, savepointID(t, sp)+5)
	// Stopping with a savepoint waits for the checkpoint in flight (and
	// its retention), so nothing is half done when the job ends.
	sp2, err := h.StopWithSavepoint(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	var chk []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "chk-") {
			chk = append(chk, e.Name())
		}
	}
	if len(chk) != 2 {
		t.Fatalf("checkpoint directories %v, want the newest 2", chk)
	}
	for _, p := range []string{sp, sp2} {
		if _, err := os.Stat(filepath.Join(p, "_manifest.json")); err != nil {
			t.Fatalf("savepoint %s is gone: %v", p, err)
		}
	}
}

func savepointID(t *testing.T, path string) int64 {
	cp, err := weir.ReadSavepoint(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return cp.ID
}

// waitForCheckpoint waits until the store's latest checkpoint is id or
// newer (the job checkpoints every millisecond).
func waitForCheckpoint(t *testing.T, h *weir.JobHandle, st weir.CheckpointStore, id int64) {
	t.Helper()
	for {
		cp, err := st.Latest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if cp != nil && cp.ID >= id {
			return
		}
		select {
		case <-h.Done():
			t.Fatalf("the job ended before checkpoint %d: %v", id, h.Wait())
		case <-time.After(time.Millisecond):
		}
	}
}

// TestCheckpointCorruptFallsBack truncates a file of the newest checkpoint:
// a new process resuming with RestoreFromLatest logs that it skips it and
// restores the one before.
func TestCheckpointCorruptFallsBack(t *testing.T) {
	dir := t.TempDir()
	st, err := weir.NewDirCheckpointStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st), weir.RetainCheckpoints(3))
	src := heldJob(t, env)
	h, err := env.ExecuteAsync(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	<-src.reached
	waitForCheckpoint(t, h, st, 3)
	h.Cancel()
	h.Wait()
	latest, err := st.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	newest := filepath.Join(dir, "chk-"+itoa(latest.ID))
	kg, _ := filepath.Glob(filepath.Join(newest, "*.kg"))
	if len(kg) == 0 {
		t.Fatalf("no keyed state in %s", newest)
	}
	prev := previousCheckpoint(t, dir, latest.ID)
	data, _ := os.ReadFile(kg[0])
	if err := os.WriteFile(kg[0], data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	tap := &logTap{}
	st, err = weir.NewDirCheckpointStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(3), weir.WithLogger(slog.New(tap)))
	env.EnableCheckpointing(time.Hour, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
	dir2 := t.TempDir()
	rescaleJob(env, &gatedSource{n: 1000, limit: 1000, reached: make(chan struct{})}, filepath.Join(dir2, "s"), filepath.Join(dir2, "j"), "sums")
	if err := env.Execute(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	skip := tap.find("skipping damaged checkpoint")
	if skip == "" || !strings.Contains(skip, "checkpoint="+itoa(latest.ID)) || !strings.Contains(skip, filepath.Base(kg[0])) {
		t.Fatalf("no log line naming the damaged checkpoint and file; log: %q", tap.msgs)
	}
	if r := tap.find("restoring"); !strings.Contains(r, "checkpoint="+itoa(prev)) {
		t.Fatalf("restored %q, want checkpoint %d", r, prev)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// previousCheckpoint returns the largest chk-<id> in dir below id.
func previousCheckpoint(t *testing.T, dir string, id int64) int64 {
	prev := int64(-1)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if v, err := strconv.ParseInt(strings.TrimPrefix(e.Name(), "chk-"), 10, 64); err == nil && strings.HasPrefix(e.Name(), "chk-") && v < id {
			prev = max(prev, v)
		}
	}
	if prev < 0 {
		t.Fatalf("no checkpoint before %d in %s", id, dir)
	}
	return prev
}

// TestStopWithSavepointEmitsNothingAfterBarrier: the sources hold after
// the savepoint's barrier, so even a sink that is not exactly-once sees
// each record once over the stopped run and the run restored from its
// savepoint.
func TestStopWithSavepointEmitsNothingAfterBarrier(t *testing.T) {
	const n = 10000
	var seen atomic.Int64
	blocked, release := make(chan struct{}), make(chan struct{})
	build := func(env *weir.Environment, limit int64) *gatedSource {
		// Paced, so that the barrier most likely comes long before the
		// limit and a source that did not hold would emit records after it.
		src := &gatedSource{n: n, limit: limit, reached: make(chan struct{}), pace: 100 * time.Microsecond}
		in := weir.FromSource(env, src, weir.NoWatermarks[evt](), "gated").SetParallelism(1).UID("source")
		weir.SinkFunc(weir.Rebalance(in), func(evt) error {
			if seen.Add(1) == 1000 {
				close(blocked)
				<-release // back-pressure the source until the stop is requested
			}
			return nil
		}).SetParallelism(2)
		return src
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Hour)
	build(env, n*8/10)
	h, err := env.ExecuteAsync(t.Context(), "stopped")
	if err != nil {
		t.Fatal(err)
	}
	<-blocked
	type res struct {
		path string
		err  error
	}
	stopped := make(chan res, 1)
	go func() {
		p, err := h.StopWithSavepoint(t.Context(), t.TempDir())
		stopped <- res{p, err}
	}()
	close(release)
	r := <-stopped
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	first := seen.Load()

	env = weir.NewEnvironment(weir.WithParallelism(2), weir.RestoreFromSavepoint(r.path))
	build(env, n)
	if err := env.Execute(t.Context(), "resumed"); err != nil {
		t.Fatal(err)
	}
	if total := seen.Load(); total != n {
		t.Fatalf("the sink saw %d records before the stop and %d after the restore, %d in all; want %d", first, total-first, total, n)
	}
}
