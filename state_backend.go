package weir

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/internal/timer"
)

// StateBackend selects where keyed operators keep the user keyed state of
// their functions (GetValueState and friends in Process and
// KeyedCoProcess). Select one with WithStateBackend; the default is
// HeapStateBackend.
//
// The backend holds only the state that functions register: timers stay
// in memory, and window, window-join, interval-join and keyed broadcast
// operators keep their internal state on the heap whatever the backend.
// Checkpoints hold full per-key-group snapshots in the same format for
// both backends, so a job can be restored with the other backend or at
// another parallelism.
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
// TTL works as on the heap except that incremental cleanup
// (TTLConfig.CleanupEntries, CleanupEveryRecord) is not performed: expired
// values are dropped when read, as with Flink's RocksDB backend.
func PebbleStateBackend(dir string) StateBackend { return pebbleStateBackend{dir: dir} }

type pebbleStateBackend struct {
	dir  string
	opts pebblestate.Options
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
// the job selected the Pebble backend.
func (b *keyedBase[K]) openStateBackend() error {
	p, ok := b.stateBackend.(pebbleStateBackend)
	if !ok || b.pebble != nil {
		return nil
	}
	root := p.dir
	if root == "" {
		root = os.TempDir()
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
	pb, err := pebblestate.Open[K](dir, first, last, b.clk, p.opts)
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
	err := b.pebble.Discard()
	b.pebble = nil
	return err
}

// snapshotPebble encodes every key group of the backend's range in the
// frame of internal/keyedsnap (uvarint length of the state snapshot, the
// state snapshot, the timer snapshot), so heap and Pebble checkpoints are
// interchangeable.
func snapshotPebble[K, N comparable](b *pebblestate.Backend[K], t *timer.Service[K, N]) (map[int][]byte, error) {
	first, last := b.KeyGroupRange()
	kc, nc := istate.DefaultCodec[K](), istate.DefaultCodec[N]()
	timers, err := t.SnapshotKeyGroups(first, last, kc, nc)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]byte, last-first+1)
	for kg := first; kg <= last; kg++ {
		st, err := b.SnapshotKeyGroup(kg)
		if err != nil {
			return nil, err
		}
		frame := binary.AppendUvarint(make([]byte, 0, len(st)+len(timers[kg-first])+4), uint64(len(st)))
		frame = append(frame, st...)
		out[kg] = append(frame, timers[kg-first]...)
	}
	return out, nil
}

// restorePebble restores key groups written by snapshotPebble or
// keyedsnap.Snapshot into b and t.
func restorePebble[K, N comparable](b *pebblestate.Backend[K], t *timer.Service[K, N], kgs map[int][]byte) error {
	kc, nc := istate.DefaultCodec[K](), istate.DefaultCodec[N]()
	for kg, data := range kgs {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			return fmt.Errorf("restoring key group %d: corrupt frame", kg)
		}
		if err := b.RestoreKeyGroup(kg, data[k:k+int(n)]); err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
		if err := t.RestoreKeyGroup(kg, data[k+int(n):], kc, nc); err != nil {
			return fmt.Errorf("restoring the timers of key group %d: %w", kg, err)
		}
	}
	return nil
}
