package weir

import (
	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/state/kvstate"
)

// Incremental checkpoints of disk state backends, as Flink's RocksDB
// incremental checkpoints. With a disk backend whose stores are
// kv.Checkpointers (Pebble) and a durable checkpoint store (a directory or
// S3: CheckpointStorage, NewCheckpointStore), a keyed operator's snapshot
// at the barrier is a staged checkpoint of its store (with Pebble: a
// flush, then hard links into a staging directory: kvstate.Stage) plus
// its timers per key group as usual; the store, on the coordinator,
// uploads the staged immutable files that no stored checkpoint has yet as
// shared files and references the others (store.Writer.ReuseShared). A
// restore lays the files out again and opens the store, merging several
// old stores when key groups moved (kvstate.RestoreImages). Savepoints are
// converted to the canonical per-key-group snapshots when stored, so they
// never reference shared files. The store's side is
// internal/checkpoint/durable (DBFiles, SaveFiles).

// incremental reports whether the operator's keyed state is checkpointed
// incrementally: a disk backend whose store takes checkpoints, in a job
// with a durable store.
func (b *keyedBase[K]) incremental() bool {
	d, ok := b.stateBackend.(diskBackend)
	return ok && d.incremental && b.Disk != nil && b.Disk.Incremental()
}

// keyedStateBackend returns the state backend of the job's keyed
// operators: a disk backend as a diskBackend, marked incremental when
// checkpoints go to a durable store.
func (e *Environment) keyedStateBackend() StateBackend {
	if isHeap(e.cfg.stateBackend) {
		return e.cfg.stateBackend
	}
	d := diskBackend{StateBackend: e.cfg.stateBackend}
	if e.checkpoint != nil {
		if _, durable := e.checkpoint.store.(*durableStore); durable {
			d.incremental, d.staged = true, &e.eng.Staged
		}
	}
	return d
}

// snapshotIncremental stages the store and snapshots the timers
// per key group (with empty state snapshots).
func (b *keyedBase[K]) snapshotIncremental(id int64) (engine.OperatorSnapshot, error) {
	first, last := b.Disk.KeyGroupRange()
	kgs, err := keyedsnap.Snapshot(durable.FilesBackend{First: first, Last: last}, b.Timers)
	if err != nil {
		return engine.OperatorSnapshot{}, err
	}
	staged, err := b.Disk.Stage(id)
	if err != nil {
		return engine.OperatorSnapshot{}, err
	}
	d, _ := b.stateBackend.(diskBackend)
	canonical := durable.Canonical[K](staged, first, last, b.clk, d.StateBackend)
	return engine.OperatorSnapshot{KeyGroups: kgs, KeyedFiles: &durable.DBFiles{Staged: staged, Canonical: canonical}}, nil
}

// restoreBackend is the backend keyed snapshots restore into: frames of
// incremental checkpoints hold no state (it came from the files).
func (b *keyedBase[K]) restoreBackend() keyedsnap.Backend {
	first, last := b.SnapBackend().KeyGroupRange()
	return durable.FilesBackend{First: first, Last: last, Next: b.SnapBackend()}
}

// restoredImages returns the checkpointed stores the operator restores
// from.
func (b *keyedBase[K]) restoredImages() []kvstate.Image {
	if b.restored == nil {
		return nil
	}
	var out []kvstate.Image
	for _, f := range b.restored.KeyedFiles {
		if pf, ok := f.(*durable.DBFiles); ok && pf.Image.Layout != nil {
			out = append(out, pf.Image)
		}
	}
	return out
}
