package weir

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

	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/state"
)

// firstSaveStore is an in-memory checkpoint store that closes saved when
// the first checkpoint is stored.
type firstSaveStore struct {
	*MemoryCheckpointStore
	once  sync.Once
	saved chan struct{}
}

func (s *firstSaveStore) Save(ctx context.Context, cp *Checkpoint) error {
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
type faultingCount struct {
	n     state.ValueState[int64]
	pb    *pebblestate.Backend[int64]
	half  int64
	armed *atomic.Bool
	fired *atomic.Bool
}

func (c *faultingCount) Open(ctx KeyedRuntimeContext[int64]) (err error) {
	c.pb = pebbleBackendOf(ctx)
	c.n, err = GetValueState(ctx, state.Value[int64]("n"))
	return err
}

func (c *faultingCount) ProcessElement(i int64, ctx KeyedContext[int64], out Collector[string]) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	out.Collect(fmt.Sprintf("%d:%d", ctx.CurrentKey(), n+1))
	if i >= c.half && c.fired.CompareAndSwap(false, true) {
		c.armed.Store(true)
		_ = c.pb.Flush()
		c.armed.Store(false)
	}
	return nil
}

func (c *faultingCount) OnTimer(int64, OnTimerContext[int64], Collector[string]) error { return nil }

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
			st := &firstSaveStore{MemoryCheckpointStore: NewMemoryCheckpointStore(), saved: make(chan struct{})}
			var logs lockedBuffer
			env := NewEnvironment(WithParallelism(2), WithBufferSize(64),
				WithStateBackend(pebbleStateBackend{dir: t.TempDir(), opts: pebblestate.Options{FS: fs}}),
				WithRestartStrategy(FixedDelayRestart(restarts, time.Millisecond)),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			env.EnableCheckpointing(time.Millisecond, WithCheckpointStore(st))
			src := Generate(env, n, 0, func(i int64) int64 {
				if i == n/2 {
					<-st.saved // a checkpoint to restart from
				}
				return i
			}, NoWatermarks[int64]()).SetParallelism(1)
			fn := &faultingCount{half: n / 2, armed: &armed, fired: &fired}
			counted := Process(KeyBy(src, func(i int64) int64 { return i % keys }), fn).Name("count").UID("count")
			sink := newLinesSink()
			AddTwoPhaseCommitSink[string, *linesTxn](counted, sink)
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
			lines := sink.lines()
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
