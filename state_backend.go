package weir

import (
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/internal/state/pebblestate"
)

// StateBackend selects where keyed operators keep the user keyed state of
// their functions (GetValueState and friends in Process and
// KeyedCoProcess). Select one with WithStateBackend; the default is
// HeapStateBackend.
//
// The backend holds only the state that functions register: timers stay
// in memory, and window, window-join, interval-join and keyed broadcast
// operators keep their internal state on the heap whatever the backend.
// Savepoints, and checkpoints in the in-memory store, hold full
// per-key-group snapshots in the same format for both backends, so a job
// can be restored with the other backend or at another parallelism; with
// the Pebble backend and a durable store (a directory or S3:
// CheckpointStorage, NewCheckpointStore) checkpoints are incremental (see
// PebbleStateBackend) and restore at any parallelism too.
type StateBackend interface {
	stateBackend()
}

// HeapStateBackend keeps keyed state as Go values in memory
// (internal/state). It is the fastest backend; the state must fit in
// memory.
func HeapStateBackend() StateBackend { return heapStateBackend{} }

type heapStateBackend struct{}

func (heapStateBackend) stateBackend() {}

// PebbleStateBackend keeps keyed state in Pebble databases (an LSM store
// on disk, internal/state/pebblestate) under dir, one per keyed operator
// subtask, for state larger than memory. Values are serialized with the
// descriptors' codecs on every access. Each subtask's database lives in a
// new directory under dir, removed when the subtask ends; the state
// survives failures through checkpoints. An empty dir means the system's
// temporary directory.
//
// With a durable checkpoint store, checkpoints are incremental, as
// Flink's RocksDB incremental checkpoints: at the barrier a subtask
// flushes and hard-links its database files into a staging directory under
// dir, and the store uploads only the SST files no stored checkpoint has
// yet (as shared files, referenced by later checkpoints and deleted by
// retention once none refers to them). Savepoints stay full, canonical
// snapshots.
//
// TTL works as on the heap except that incremental cleanup
// (TTLConfig.CleanupEntries, CleanupEveryRecord) is not performed: expired
// values are dropped when read, as with Flink's RocksDB backend.
func PebbleStateBackend(dir string) StateBackend { return pebbleStateBackend{dir: dir} }

type pebbleStateBackend struct {
	dir  string
	opts pebblestate.Options
	// incremental is set for the operators of a job whose checkpoints go
	// to a durable store (incremental.go); staged then keeps the staged
	// checkpoints of ended operators until the attempt ends.
	incremental bool
	staged      *stagedSet
}

func (pebbleStateBackend) stateBackend() {}

// WithStateBackend selects the keyed state backend of the job's keyed
// process and co-process functions (default HeapStateBackend).
func WithStateBackend(b StateBackend) Option {
	return func(c *config) { c.stateBackend = b }
}

// pebbleRuntimeCtx is the KeyedRuntimeContext of a function whose keyed
// operator keeps its state in Pebble.
type pebbleRuntimeCtx[K comparable] struct {
	keyedRuntimeCtx[K]
	pb *pebblestate.Backend[K]
}

func (c pebbleRuntimeCtx[K]) pebbleBackend() *pebblestate.Backend[K] { return c.pb }

// pebbleBackendOf returns the Pebble backend behind ctx, or nil when the
// function's state is on the heap.
func pebbleBackendOf[K comparable](ctx KeyedRuntimeContext[K]) *pebblestate.Backend[K] {
	if p, ok := ctx.(interface {
		pebbleBackend() *pebblestate.Backend[K]
	}); ok {
		return p.pebbleBackend()
	}
	return nil
}

// handleOf returns h as the state interface S, or a nil S with err.
func handleOf[S, H any](h H, err error) (S, error) {
	var zero S
	if err != nil {
		return zero, err
	}
	return any(h).(S), nil
}

// openStateBackend opens the Pebble database of the operator subtask when
// the job selected the Pebble backend, restored from the checkpointed
// databases of an incremental checkpoint if there are any; with the heap
// backend it restores the heap from such databases.
func (b *keyedBase[K]) openStateBackend() error {
	p, ok := b.stateBackend.(pebbleStateBackend)
	if b.pebble != nil {
		return nil
	}
	root := p.dir
	if root == "" {
		root = os.TempDir()
	}
	images := b.restoredImages()
	if !ok {
		return b.restoreImagesToHeap(images, root)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("pebble state backend: %w", err)
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, b.name)
	dir, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-*", name, b.subtask))
	if err != nil {
		return fmt.Errorf("pebble state backend: %w", err)
	}
	first, last := b.backend.KeyGroupRange()
	// A database failing on one of Pebble's goroutines fails the task
	// (pebblestate's fault.go), never the process.
	opts := p.opts
	opts.OnFault = b.fail
	pb, err := pebblestate.RestoreImages[K](images, dir, first, last, b.clk, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	b.pebble = pb
	return nil
}

// closeStateBackend closes and removes the subtask's Pebble database.
func (b *keyedBase[K]) closeStateBackend() error {
	if b.pebble == nil {
		return nil
	}
	if p, ok := b.stateBackend.(pebbleStateBackend); ok && p.staged != nil {
		// The coordinator may still store the last staged checkpoint.
		p.staged.add(b.pebble.TakeStaged())
	}
	err := b.pebble.Discard()
	b.pebble = nil
	return err
}
