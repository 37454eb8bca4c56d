package weir_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/state"
	statekv "github.com/weirstream/weir/state/kv"
	"github.com/weirstream/weir/state/pebble"
)

// firstSaveStore is an in-memory checkpoint store that closes saved when
// the first checkpoint is stored.
type firstSaveStore struct {
	*weir.MemoryCheckpointStore
	once  sync.Once
	saved chan struct{}
}

func (s *firstSaveStore) Save(ctx context.Context, cp *weir.Checkpoint) error {
	err := s.MemoryCheckpointStore.Save(ctx, cp)
	if err == nil {
		s.once.Do(func() { close(s.saved) })
	}
	return err
}

// faultingCount counts per key (value i of the generator, key i % keys)
// and emits "key:count". The first subtask to see a record of the second
// half of the input makes the MANIFEST writes of the databases fail, then
// flushes its database: Pebble's flush goroutine cannot record the new
// file, calls Logger.Fatalf and reports a background error. The function
// ignores what Flush returns: the failure must reach the task by itself.
// It reaches its store through storeRecorder, a StateBackend wrapping the
// Pebble backend.
type faultingCount struct {
	n     state.ValueState[int64]
	rec   *storeRecorder
	sub   int
	half  int64
	armed *atomic.Bool
	fired *atomic.Bool
}

func (c *faultingCount) Open(ctx weir.KeyedRuntimeContext[int64]) (err error) {
	c.sub = ctx.Subtask()
	c.n, err = weir.GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *faultingCount) ProcessElement(i int64, ctx weir.KeyedContext[int64], out weir.Collector[string]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(fmt.Sprintf("%d:%d", ctx.CurrentKey(), n+1))
	if i >= c.half && c.fired.CompareAndSwap(false, true) {
		c.armed.Store(true)
		_ = c.rec.store(c.sub).Flush()
		c.armed.Store(false)
	}
	return nil
}

func (c *faultingCount) OnTimer(int64, weir.OnTimerContext[int64], weir.Collector[string]) error {
	return nil
}

// TestPebbleFatalErrorFailsTheJob makes the Pebble database of a running
// keyed job fail on Pebble's own flush goroutine, after a checkpoint
// completed (the generator waits for one before the second half of its
// input). That killed the process (the logger panicked in Fatalf). Now
// the task fails: with a restart left, the job restarts from the
// checkpoint and commits every count exactly once; without one, Execute
// returns the failure, naming the operator and Pebble's error.
func TestPebbleFatalErrorFailsTheJob(t *testing.T) {
	const n, keys = 4000, 40
	for _, restarts := range []int{1, 0} {
		t.Run(fmt.Sprintf("restarts=%d", restarts), func(t *testing.T) {
			var armed, fired atomic.Bool
			injected := errors.New("injected MANIFEST write failure")
			fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if armed.Load() && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileSync) &&
					strings.HasPrefix(filepath.Base(op.Path), "MANIFEST") {
					return injected
				}
				return nil
			}))
			rec := &storeRecorder{StateBackend: pebble.New(t.TempDir(), pebble.WithFS(fs)), stores: map[int]statekv.Store{}}
			st := &firstSaveStore{MemoryCheckpointStore: weir.NewMemoryCheckpointStore(), saved: make(chan struct{})}
			var logs lockedBuffer
			out := t.TempDir()
			env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(64),
				weir.WithStateBackend(rec),
				weir.WithRestartStrategy(weir.FixedDelayRestart(restarts, time.Millisecond)),
				weir.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st))
			src := weir.Generate(env, n, 0, func(i int64) int64 {
				if i == n/2 {
					<-st.saved // a checkpoint to restart from
				}
				return i
			}, weir.NoWatermarks[int64]()).SetParallelism(1)
			fn := &faultingCount{rec: rec, half: n / 2, armed: &armed, fired: &fired}
			counted := weir.Process(weir.KeyBy(src, func(i int64) int64 { return i % keys }), fn).Name("count").UID("count")
			file.Sink(counted, out, func(s string) []byte { return []byte(s) })
			err := env.Execute(t.Context(), "pebble-fault")
			if !fired.Load() {
				t.Fatalf("the failure was never injected (err %v)", err)
			}
			if restarts == 0 {
				if err == nil || !strings.Contains(err.Error(), `operator "count"`) || !strings.Contains(err.Error(), injected.Error()) ||
					!strings.Contains(err.Error(), "fatal error") {
					t.Fatalf("err %v, want the Pebble failure of operator count", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "restoring from checkpoint") {
				t.Fatalf("the job did not restart from a checkpoint:\n%s", logs.String())
			}
			lines, err := file.ReadCommittedLines(out)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(lines)
			var want []string
			for k := range int64(keys) {
				for c := int64(1); c <= n/keys; c++ {
					want = append(want, fmt.Sprintf("%d:%d", k, c))
				}
			}
			slices.Sort(want)
			if !slices.Equal(lines, want) {
				t.Fatalf("%d lines committed, want %d (each count of each key once)", len(lines), len(want))
			}
		})
	}
}

// storeRecorder is a StateBackend that keeps the store each subtask of
// operator "count" opened last.
type storeRecorder struct {
	weir.StateBackend
	mu     sync.Mutex
	stores map[int]statekv.Store
}

func (r *storeRecorder) Open(dir string, opts statekv.Options) (statekv.Store, error) {
	s, err := r.StateBackend.Open(dir, opts)
	var sub int
	if _, serr := fmt.Sscanf(filepath.Base(dir), "count-%d-", &sub); err == nil && serr == nil {
		r.mu.Lock()
		r.stores[sub] = s
		r.mu.Unlock()
	}
	return s, err
}

func (r *storeRecorder) store(sub int) statekv.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stores[sub]
}

// lockedBuffer is a log destination for several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
