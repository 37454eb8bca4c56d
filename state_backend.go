package weir

import (
	"errors"

	"github.com/weirstream/weir/internal/keyedop"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/state/kv"
)

// StateBackend selects where keyed operators keep the user keyed state of
// their functions (GetValueState and friends in Process and
// KeyedCoProcess). Select one with WithStateBackend; the default is
// HeapStateBackend.
//
// A backend other than the heap is a disk backend: an opener of ordered
// key-value stores (package github.com/weirstream/weir/state/kv), one per
// keyed operator subtask, in a new directory under Dir. Weir lays the
// typed state out in the store itself (state/kv's FORMAT.md), so a disk
// backend deals in bytes only. The Pebble backend
// (github.com/weirstream/weir/state/pebble, pebble.New) is one; anyone can
// write another with the public types of state/kv.
//
// The backend holds only the state that functions register: timers stay
// in memory, and window, window-join, interval-join and keyed broadcast
// operators keep their internal state on the heap whatever the backend.
// Savepoints, and checkpoints in the in-memory store, hold full
// per-key-group snapshots in the same format for all backends, so a job
// can be restored with another backend or at another parallelism. With a
// disk backend whose stores are kv.Checkpointers (Pebble) and a durable
// store (a directory or S3: CheckpointStorage, NewCheckpointStore),
// checkpoints are incremental and restore at any parallelism too, with the
// same backend.
type StateBackend interface {
	// Name names the backend in the REST API and the job's configuration
	// ("hashmap" for the heap, "pebble").
	Name() string
	// Dir is the directory under which each keyed operator subtask gets
	// the directory of its store, removed when the subtask ends; "" means
	// the system's temporary directory.
	Dir() string
	// Open opens the store of one subtask (kv.Opener). The heap backend
	// opens none.
	Open(dir string, opts kv.Options) (kv.Store, error)
}

// HeapStateBackend keeps keyed state as Go values in memory
// (internal/state). It is the fastest backend; the state must fit in
// memory.
func HeapStateBackend() StateBackend { return heapStateBackend{} }

type heapStateBackend struct{}

func (heapStateBackend) Name() string { return "hashmap" }
func (heapStateBackend) Dir() string  { return "" }
func (heapStateBackend) Open(string, kv.Options) (kv.Store, error) {
	return nil, errors.New("the heap state backend keeps no store")
}

// WithStateBackend selects the keyed state backend of the job's keyed
// process and co-process functions (default HeapStateBackend), e.g.
// weir.WithStateBackend(pebble.New(dir)).
func WithStateBackend(b StateBackend) Option {
	return func(c *config) { c.stateBackend = b }
}

// keyedStateBackend returns the disk state backend of the job's keyed
// operators (nil: heap), incremental when checkpoints go to a durable
// store (keyedop's disk.go).
func (e *Environment) keyedStateBackend() *keyedop.DiskBackend {
	if _, heap := e.cfg.stateBackend.(heapStateBackend); heap || e.cfg.stateBackend == nil {
		return nil
	}
	d := &keyedop.DiskBackend{DiskBackend: e.cfg.stateBackend}
	if e.checkpoint != nil {
		if _, durable := e.checkpoint.store.(*durableStore); durable {
			d.Incremental, d.Staged = true, &e.eng.Staged
		}
	}
	return d
}

// diskRuntimeCtx is the KeyedRuntimeContext of a function whose keyed
// operator keeps its state in a disk backend's store.
type diskRuntimeCtx[K comparable] struct {
	keyedRuntimeCtx[K]
	kb *kvstate.Backend[K]
}

func (c diskRuntimeCtx[K]) diskBackend() *kvstate.Backend[K] { return c.kb }

// diskBackendOf returns the disk backend behind ctx, or nil when the
// function's state is on the heap.
func diskBackendOf[K comparable](ctx KeyedRuntimeContext[K]) *kvstate.Backend[K] {
	if p, ok := ctx.(interface {
		diskBackend() *kvstate.Backend[K]
	}); ok {
		return p.diskBackend()
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
