package weir_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebble"
)

// growingState keeps, per key, a count and a padded value, so the state
// grows with the keys seen; it emits "key:count".
type growingState struct {
	n   state.ValueState[int64]
	pad state.ValueState[string]
}

func (g *growingState) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	if g.n, err = weir.GetValueState(ctx, state.Value[int64]("n")); err != nil {
		return err
	}
	g.pad, err = weir.GetValueState(ctx, state.Value[string]("pad"))
	return err
}

func (g *growingState) ProcessElement(v int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	n, _ := g.n.Value()
	n++
	g.n.Update(n)
	h := sha256.Sum256([]byte(fmt.Sprint(v, n)))
	g.pad.Update(strings.Repeat(hex.EncodeToString(h[:]), 4))
	out.Collect(fmt.Sprintf("%d:%d", ctx.CurrentKey(), n))
	return nil
}

func (g *growingState) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// incrementalJob builds the keyed job of the incremental-checkpoint tests:
// n records, the first half each with its own key (the state grows), the
// second half over hot keys only (small updates to a big state), the
// Pebble backend, checkpoints every 20 ms (a failing run paced by them) to the store at cps (a directory
// or an s3:// location, see checkpointStoreAt); inj, if set, checks
// every result before the sink (a failure injector).
func incrementalJob(t *testing.T, p int, cps, stateDir, out string, n, keys int64, retain int, log *slog.Logger, inj *injector) *weir.Environment {
	t.Helper()
	st := checkpointStoreAt(t, cps)
	opts := []weir.Option{weir.WithParallelism(p), weir.WithBufferSize(64),
		weir.WithStateBackend(pebble.New(stateDir))}
	if log != nil {
		opts = append(opts, weir.WithLogger(log))
	}
	env := weir.NewEnvironment(opts...)
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest(), weir.RetainCheckpoints(retain))
	// A failing run (onRecord set) is paced by its checkpoints from 3n/4
	// on, until it has failed: one record per completed checkpoint, so
	// the injector sees every new checkpoint before the input ends,
	// however slow the machine.
	var done func() bool
	if inj != nil {
		done = inj.failed.Load
	}
	src := pacedGenerate(env, n, 3*n/4, func(i int64) int64 {
		if i < n/2 {
			return i
		}
		return i % keys
	}, st, done).SetParallelism(1)
	counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &growingState{}).UID("grow")
	checked := weir.Map(counted, func(s string) string {
		if inj != nil {
			inj.check()
		}
		return s
	}).UID("inject")
	file.Sink(checked, out, func(s string) []byte { return []byte(s) })
	return env
}

func committedSorted(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadCommittedLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

// openStore opens the store at cps (a directory or an s3:// location, see
// checkpointStoreAt), as a new process would.
func openStore(t *testing.T, cps string, log *slog.Logger) store.Store {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loc, err := store.ParseLocation(cps)
	if err != nil {
		t.Fatal(err)
	}
	s, err := loc.NewStore(storeRemotes(t, loc), store.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// manifests returns the manifests of the stored checkpoints, oldest first
// (skipping those that retention deletes as they are read).
func manifests(t *testing.T, s store.Store) []*store.Manifest {
	t.Helper()
	es, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Manifest
	for _, e := range es {
		m, err := s.Open(context.Background(), e.ID)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrIncomplete) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestIncrementalCheckpointsEndToEnd runs a keyed job whose Pebble state
// grows, with checkpoints every few milliseconds to a directory store,
// fails it with a panic once several checkpoints are stored, and restores
// at the same and at another parallelism: the committed output equals a
// fault-free run's. The checkpoints are incremental: they hold the
// database as shared files, and a later one uploads much less than the
// state it references.
func TestIncrementalCheckpointsEndToEnd(t *testing.T) {
	const n, keys = 60000, 50
	ref := t.TempDir()
	if err := incrementalJob(t, 2, t.TempDir(), t.TempDir(), ref, n, keys, 1, nil, nil).Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committedSorted(t, ref)
	if len(want) != n {
		t.Fatalf("fault-free run committed %d lines, want %d", len(want), n)
	}
	for _, c := range []struct {
		name   string
		p1, p2 int
	}{{"same-parallelism", 2, 2}, {"scale-up", 2, 3}, {"scale-down", 3, 1}} {
		t.Run(c.name, func(t *testing.T) {
			cps := t.TempDir()
			incrementalFailover(t, cps, c.p1, c.p2, n, keys, want, func() []string {
				files, err := os.ReadDir(filepath.Join(cps, "shared"))
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, f := range files {
					names = append(names, f.Name())
				}
				return names
			})
		})
	}
}

// incrementalFailover runs incrementalJob with checkpoints to the store
// at cps at parallelism p1, fails it once a later checkpoint uploaded
// much less than the state it references, restores it at p2 and checks
// that the committed output is want, that the checkpoints were
// incremental, and that after retention the store keeps exactly the
// shared files (as sharedFiles lists them) its checkpoints reference.
func incrementalFailover(t *testing.T, cps string, p1, p2 int, n, keys int64, want []string, sharedFiles func() []string) {
	stateDir, out := t.TempDir(), t.TempDir()
	var seenManifests []*store.Manifest
	// The failure is injected once a later checkpoint uploaded
	// much less than the state it references.
	inject := failOnceWhen(t, cps, 3*n/4, "injected failure after incremental checkpoints", func(ms []*store.Manifest) bool {
		if len(ms) < 3 {
			return false
		}
		for _, m := range ms[1:] {
			if m.SharedBytes() > 1<<20 && m.UploadedBytes()*4 < m.SharedBytes() {
				seenManifests = ms
				return true
			}
		}
		return false
	})
	err := incrementalJob(t, p1, cps, stateDir, out, n, keys, 3, nil, inject).Execute(t.Context(), "failing")
	if err == nil || !inject.failed.Load() {
		t.Fatalf("the job ended (err %v) before any checkpoint uploaded less than a quarter of the state it references", err)
	}
	// The stored checkpoints are incremental.
	for _, m := range seenManifests {
		op := m.Operator("grow")
		if op == nil || len(op.Subtasks) == 0 || op.Subtasks[0].DB == nil {
			t.Fatalf("checkpoint %d: operator grow has no database files: %+v", m.ID, op)
		}
		t.Logf("checkpoint %d: uploaded %d bytes, references %d bytes of shared files (%d files)", m.ID, m.UploadedBytes(), m.SharedBytes(), len(m.Shared))
	}
	if err := incrementalJob(t, p2, cps, stateDir, out, n, keys, 3, nil, nil).Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	if got := committedSorted(t, out); !slices.Equal(got, want) {
		t.Fatalf("restored run committed %d lines, the fault-free run %d; first difference: %s", len(got), len(want), firstDiff(got, want))
	}
	// Staged checkpoints and databases are gone, and the store
	// keeps only the shared files its checkpoints reference.
	if left, _ := os.ReadDir(stateDir); len(left) != 0 {
		t.Fatalf("state directory holds %d entries after the jobs", len(left))
	}
	// A checkpoint cut short as the job ended may have left shared
	// files no manifest references: retention (here by a new
	// process) collects them.
	reopened := openStore(t, cps, nil)
	if err := reopened.Retain(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	ms := manifests(t, reopened)
	refs := map[string]bool{}
	for _, m := range ms {
		for name := range m.Shared {
			refs[name] = true
		}
	}
	for _, f := range sharedFiles() {
		if !refs[f] {
			t.Fatalf("shared file %s is referenced by no retained checkpoint", f)
		}
		delete(refs, f)
	}
	if len(refs) > 0 {
		t.Fatalf("retained checkpoints reference missing shared files %v", refs)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: %q vs %q", i, a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// logLines is a concurrency-safe log sink for a text slog handler.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Reset drops what was logged so far.
func (l *logLines) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestIncrementalCorruptSharedFileFallsBack fails a job after
// incremental checkpoints, then damages the newest shared file of its
// store (first uploaded by checkpoint c, so checkpoint c and any later one
// reference it, and no earlier one): the restore skips the latest
// checkpoint with a warning naming the file and restores the one before
// c, and the restored state is right (every key ends at its full count;
// the sink may repeat what it had committed after the older checkpoint).
// The file is damaged after the failing run has ended, so no checkpoint
// can complete after it was chosen.
func TestIncrementalCorruptSharedFileFallsBack(t *testing.T) {
	const n, keys = 40000, 50
	cps, stateDir, out := t.TempDir(), t.TempDir(), t.TempDir()
	// A new shared file in the latest of at least two checkpoints.
	inject := failOnceWhen(t, cps, 3*n/4, "injected failure after checkpoints", func(ms []*store.Manifest) bool {
		return len(ms) >= 2 && newestFile(ms[len(ms)-1]) != ""
	})
	var logs logLines
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Retaining 10 keeps every checkpoint of the run that a fallback
	// could need.
	err := incrementalJob(t, 2, cps, stateDir, out, n, keys, 10, log, inject).Execute(t.Context(), "failing")
	if err == nil || !inject.failed.Load() {
		t.Fatalf("the first run should fail after checkpoints with a new shared file (err %v)", err)
	}
	ms := manifests(t, openStore(t, cps, nil))
	c := len(ms) - 1
	for c > 0 && newestFile(ms[c]) == "" {
		c--
	}
	if c == 0 {
		t.Fatalf("no checkpoint after the first of %d uploaded a shared file", len(ms))
	}
	name, latest, fallback := newestFile(ms[c]), ms[len(ms)-1].ID, ms[c-1].ID
	p := filepath.Join(cps, "shared", name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x55
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if err := incrementalJob(t, 2, cps, stateDir, out, n, keys, 10, log, nil).Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	text := logs.String()
	var warned bool
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, fmt.Sprintf("checkpoint=%d ", latest)) && strings.Contains(l, name) {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning naming checkpoint %d and shared file %s:\n%s", latest, name, text)
	}
	if !strings.Contains(text, fmt.Sprintf("from=\"checkpoint %d\"", fallback)) {
		t.Fatalf("the restore did not use checkpoint %d:\n%s", fallback, text)
	}
	last := map[string]int{}
	for _, l := range committedSorted(t, out) {
		k, c, _ := strings.Cut(l, ":")
		var v int
		fmt.Sscan(c, &v)
		last[k] = max(last[k], v)
	}
	if len(last) != n/2 {
		t.Fatalf("%d keys in the output, want %d", len(last), n/2)
	}
	for k, c := range last {
		want := 1
		var v int
		fmt.Sscan(k, &v)
		if v < keys {
			want += n / 2 / keys
		}
		if c != want {
			t.Fatalf("key %s ends at count %d, want %d", k, c, want)
		}
	}
}

// newestFile returns a shared file that checkpoint m uploaded itself
// (the greatest name, for a stable choice), or "".
func newestFile(m *store.Manifest) string {
	var newest string
	for name, fi := range m.Shared {
		if fi.Checkpoint == m.ID && name > newest {
			newest = name
		}
	}
	return newest
}

// injector fails a job once (see failOnceWhen).
type injector struct {
	check  func()
	failed atomic.Bool
}

// failOnceWhen returns a record injector for incrementalJob: after `after`
// records, each record reads the checkpoint store at cps and asks fire
// whether to fail now; the first time fire says yes, the job fails with
// msg (and inj.failed is set). The injector runs in every subtask, so the
// check and the failure are serialised and happen once.
func failOnceWhen(t *testing.T, cps string, after int64, msg string, fire func([]*store.Manifest) bool) *injector {
	var seen atomic.Int64
	inj := &injector{}
	var mu sync.Mutex
	inj.check = func() {
		if seen.Add(1) < after || inj.failed.Load() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if inj.failed.Load() || !fire(manifests(t, openStore(t, cps, nil))) {
			return
		}
		inj.failed.Store(true)
		panic(msg)
	}
	return inj
}

// TestHeapRefusesIncrementalPebbleCheckpoint restores an incremental
// Pebble checkpoint into a job on the heap backend: the checkpoint holds
// Pebble's files, which only the Pebble backend reads, so the job fails
// with an error that says what to do.
func TestHeapRefusesIncrementalPebbleCheckpoint(t *testing.T) {
	cps := t.TempDir()
	const n, keys = 2000, 20
	if err := incrementalJob(t, 1, cps, t.TempDir(), t.TempDir(), n, keys, 1, nil, nil).Execute(t.Context(), "pebble"); err != nil {
		t.Fatal(err)
	}
	st := checkpointStoreAt(t, cps)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointStoreIn(st), weir.RestoreFromLatest())
	// incrementalJob's graph, on the heap.
	src := pacedGenerate(env, n, 3*n/4, func(i int64) int64 { return i % keys }, st, nil).SetParallelism(1)
	counted := weir.Process(weir.KeyBy(src, func(v int64) int64 { return v }), &growingState{}).UID("grow")
	checked := weir.Map(counted, func(s string) string { return s }).UID("inject")
	file.Sink(checked, t.TempDir(), func(s string) []byte { return []byte(s) })
	err := env.Execute(t.Context(), "heap")
	if err == nil || !strings.Contains(err.Error(), "heap state backend cannot read") || !strings.Contains(err.Error(), "pebble.New") {
		t.Fatalf("err %v, want the heap backend's refusal of Pebble's files", err)
	}
}
