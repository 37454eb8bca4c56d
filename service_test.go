package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// serviceCounts is the sink of serviceJob: each key's final count.
type serviceCounts struct {
	mu sync.Mutex
	m  map[int64]int64
}

func (c *serviceCounts) get() map[int64]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]int64{}
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// serviceJob counts n generated records (rate per second) over 5 keys in
// one event-time window that closes only when the input ends, so the
// counts reach the sink once, at the end; logs collects the job's log.
func serviceJob(t *testing.T, n int64, rate float64, logs *syncBuffer) (*weir.Environment, *serviceCounts) {
	t.Helper()
	opts := []weir.Option{weir.WithParallelism(2)}
	if logs != nil {
		opts = append(opts, weir.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	}
	env := weir.NewEnvironment(opts...)
	env.EnableCheckpointing(20 * time.Millisecond)
	type ev struct{ K, TS int64 }
	wm := weir.ForMonotonousTimestamps[ev]().WithTimestampAssigner(func(e ev, _ int64) int64 { return e.TS })
	evs := weir.Generate(env, n, rate, func(i int64) ev { return ev{i % 5, i} }, wm).UID("events")
	ones := weir.Map(evs, func(e ev) [2]int64 { return [2]int64{e.K, 1} }).UID("ones")
	w := weir.Window(weir.KeyBy(ones, func(v [2]int64) int64 { return v[0] }), window.TumblingEventTime(24*time.Hour))
	sums := weir.Reduce(w, func(a, b [2]int64) [2]int64 { return [2]int64{a[0], a[1] + b[1]} }).UID("counts")
	out := &serviceCounts{m: map[int64]int64{}}
	weir.SinkFunc(sums, func(v [2]int64) error {
		out.mu.Lock()
		defer out.mu.Unlock()
		if _, dup := out.m[v[0]]; dup {
			return fmt.Errorf("key %d counted twice", v[0])
		}
		out.m[v[0]] = v[1]
		return nil
	})
	return env, out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func checkCounts(t *testing.T, got map[int64]int64, n int64) {
	t.Helper()
	if len(got) != 5 {
		t.Fatalf("%d keys counted, want 5: %v", len(got), got)
	}
	for k, c := range got {
		if c != n/5 {
			t.Fatalf("key %d counted %d, want %d (all: %v)", k, c, n/5, got)
		}
	}
}

// stopSoon returns a context that ends once the job has run for d.
func stopSoon(t *testing.T, d time.Duration) (context.Context, weir.ServiceOption) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, weir.OnServiceStart(func(*weir.JobHandle) { time.AfterFunc(d, cancel) })
}

// RunService stops the job with a savepoint when its context ends, and
// the next RunService resumes from it; the counts are exact.
func TestRunServiceStopsAndResumes(t *testing.T) {
	dir := t.TempDir()
	const n = 2000
	env, out := serviceJob(t, n, 2000, nil)
	ctx, onStart := stopSoon(t, 200*time.Millisecond)
	res, err := env.RunService(ctx, "svc", dir, onStart)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != weir.JobStoppedWithSavepoint || filepath.Dir(res.Savepoint) != filepath.Join(dir, "savepoints") {
		t.Fatalf("first run: %v %q (err %v), want a stop with a savepoint in %s/savepoints", res.Status, res.Savepoint, res.Err, dir)
	}
	if got := out.get(); len(got) != 0 {
		t.Fatalf("a run stopped mid-stream emitted final counts %v", got)
	}
	logs := &syncBuffer{}
	env, out = serviceJob(t, n, 0, logs)
	res, err = env.RunService(t.Context(), "svc", dir)
	if err != nil || res.Status != weir.JobFinished || res.Savepoint != "" || res.Err != nil {
		t.Fatalf("second run: %v %q, %v", res.Status, res.Savepoint, err)
	}
	if !strings.Contains(logs.String(), "restoring") {
		t.Fatalf("the second run did not restore:\n%s", logs)
	}
	checkCounts(t, out.get(), n)
}

// checkpointIDs returns the ids of the checkpoints in dir.
func checkpointIDs(dir string) []int64 {
	ents, _ := os.ReadDir(dir)
	var ids []int64
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), "chk-"); ok {
			if id, err := strconv.ParseInt(s, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// A run that ends without a savepoint (a crash, here a cancel) leaves a
// checkpoint newer than the last savepoint: RunService resumes from it,
// and the counts are still exact.
func TestRunServiceResumesFromNewerCheckpoint(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	env, _ := serviceJob(t, n, 2000, nil)
	ctx, onStart := stopSoon(t, 150*time.Millisecond)
	res, err := env.RunService(ctx, "svc", dir, onStart)
	if err != nil || res.Status != weir.JobStoppedWithSavepoint {
		t.Fatalf("first run: %v, %v", res.Status, err)
	}
	spID, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(res.Savepoint), "savepoint-"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The second run takes checkpoints after the savepoint and is
	// cancelled: no savepoint.
	env, _ = serviceJob(t, n, 2000, nil)
	var newest int64
	_, err = env.RunService(t.Context(), "svc", dir, weir.OnServiceStart(func(h *weir.JobHandle) {
		go func() {
			defer h.Cancel()
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				for _, id := range checkpointIDs(filepath.Join(dir, "checkpoints")) {
					if id > spID+1 {
						newest = id
						return
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if newest == 0 {
		t.Fatalf("no checkpoint after savepoint %d", spID)
	}
	logs := &syncBuffer{}
	env, out := serviceJob(t, n, 0, logs)
	res, err = env.RunService(t.Context(), "svc", dir)
	if err != nil || res.Status != weir.JobFinished {
		t.Fatalf("third run: %v, %v", res.Status, err)
	}
	if !strings.Contains(logs.String(), `from="checkpoint `) {
		t.Fatalf("the third run did not restore from the checkpoint newer than savepoint %d:\n%s", spID, logs)
	}
	checkCounts(t, out.get(), n)
}

func TestRunServiceRefuses(t *testing.T) {
	env := weir.NewEnvironment()
	weir.Discard(weir.FromSlice(env, []int{1}))
	if _, err := env.RunService(t.Context(), "svc", t.TempDir()); err == nil || !strings.Contains(err.Error(), "EnableCheckpointing") {
		t.Fatalf("without checkpointing: %v", err)
	}
	env, _ = serviceJob(t, 10, 0, nil)
	if _, err := env.RunService(t.Context(), "svc", ""); err == nil {
		t.Fatal("no directory: no error")
	}
	// A damaged newest savepoint refuses the start: starting from
	// nothing would lose the state.
	dir := t.TempDir()
	bad := filepath.Join(dir, "savepoints", "savepoint-7")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "_manifest.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, out := serviceJob(t, 10, 0, nil)
	if _, err := env.RunService(t.Context(), "svc", dir); err == nil || !strings.Contains(err.Error(), "savepoint") {
		t.Fatalf("damaged savepoint: %v", err)
	}
	if got := out.get(); len(got) != 0 {
		t.Fatalf("the job ran: %v", got)
	}
}

// A signal that arrives while the service starts stops the job with a
// savepoint as soon as it runs; the next start resumes from it.
func TestRunServiceSignalDuringStart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	env, _ := serviceJob(t, 1000, 500, nil)
	res, err := env.RunService(ctx, "svc", dir)
	if err != nil || res.Status != weir.JobStoppedWithSavepoint {
		t.Fatalf("%v %q, %v", res.Status, res.Savepoint, err)
	}
	env, out := serviceJob(t, 1000, 0, nil)
	if res, err := env.RunService(t.Context(), "svc", dir); err != nil || res.Status != weir.JobFinished {
		t.Fatalf("second run: %v, %v", res.Status, err)
	}
	checkCounts(t, out.get(), 1000)
}
