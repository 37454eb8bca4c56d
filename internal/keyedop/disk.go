package keyedop

import (
	"errors"

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

// DiskBackend is a job's disk state backend (a weir.StateBackend other
// than the heap) as its keyed operators use it.
type DiskBackend struct {
	durable.DiskBackend
	// Incremental is set for the operators of a job whose checkpoints go
	// to a durable store; Staged then keeps the staged checkpoints of
	// ended operators until the attempt ends.
	Incremental bool
	Staged      *durable.StagedSet
}

// SnapshotState snapshots the keyed state and timers.
func (b *Base[K]) SnapshotState(id int64) (engine.OperatorSnapshot, error) {
	if b.incremental() {
		return b.snapshotIncremental(id)
	}
	return keyedsnap.Operator(b.SnapBackend(), b.Timers)
}

// SnapshotStateAsync takes the synchronous part of the snapshot of the
// keyed state and timers: with the heap backend, a copy-on-write view and
// a copy of the timers (keyedsnap.SnapshotAsync); on disk the whole
// snapshot (SnapshotState), handed over as it is.
func (b *Base[K]) SnapshotStateAsync(id int64) (engine.AsyncSnapshot, error) {
	if b.Disk != nil {
		return keyedsnap.Ready(b.SnapshotState(id))
	}
	return keyedsnap.OperatorAsync[K, Void](b.Backend, b.Timers)
}

// Restore opens the store of a disk backend and restores keyed state and
// timers.
func (b *Base[K]) Restore() error {
	if err := b.openDisk(); err != nil {
		return err
	}
	if b.Restored == nil {
		return nil
	}
	return keyedsnap.Restore(b.restoreBackend(), b.Timers, b.Restored.KeyGroups)
}

// openDisk opens the store of the operator subtask when the job selected
// a disk backend, restored from the checkpointed stores of an incremental
// checkpoint if there are any; with the heap backend, such stores cannot
// be read.
func (b *Base[K]) openDisk() error {
	if b.Disk != nil {
		return nil
	}
	images := b.restoredImages()
	if b.DiskBackend == nil {
		if len(images) > 0 {
			return errors.New("the checkpoint holds the files of a disk state backend's incremental checkpoint, " +
				"which the heap state backend cannot read: restore with the backend that wrote it " +
				"(e.g. weir.WithStateBackend(pebble.New(dir))), or from a savepoint")
		}
		return nil
	}
	first, last := b.Backend.KeyGroupRange()
	kb, err := durable.OpenDisk[K](b.DiskBackend.DiskBackend, images, b.Name, b.Subtask, first, last, b.Clk, b.Fail)
	if err != nil {
		return err
	}
	b.Disk = kb
	return nil
}

// CloseDisk closes and removes the subtask's store.
func (b *Base[K]) CloseDisk() error {
	if b.Disk == nil {
		return nil
	}
	if b.DiskBackend != nil && b.DiskBackend.Staged != nil {
		// The coordinator may still store the last staged checkpoint.
		b.DiskBackend.Staged.Add(b.Disk.TakeStaged())
	}
	err := b.Disk.Discard()
	b.Disk = nil
	return err
}

// incremental reports whether the operator's keyed state is checkpointed
// incrementally: a disk backend whose store takes checkpoints, in a job
// with a durable store.
func (b *Base[K]) incremental() bool {
	return b.DiskBackend != nil && b.DiskBackend.Incremental && b.Disk != nil && b.Disk.Incremental()
}

// snapshotIncremental stages the store and snapshots the timers
// per key group (with empty state snapshots).
func (b *Base[K]) snapshotIncremental(id int64) (engine.OperatorSnapshot, error) {
	first, last := b.Disk.KeyGroupRange()
	kgs, err := keyedsnap.Snapshot(durable.FilesBackend{First: first, Last: last}, b.Timers)
	if err != nil {
		return engine.OperatorSnapshot{}, err
	}
	staged, err := b.Disk.Stage(id)
	if err != nil {
		return engine.OperatorSnapshot{}, err
	}
	canonical := durable.Canonical[K](staged, first, last, b.Clk, b.DiskBackend.DiskBackend)
	return engine.OperatorSnapshot{KeyGroups: kgs, KeyedFiles: &durable.DBFiles{Staged: staged, Canonical: canonical}}, nil
}

// restoreBackend is the backend keyed snapshots restore into: frames of
// incremental checkpoints hold no state (it came from the files).
func (b *Base[K]) restoreBackend() keyedsnap.Backend {
	first, last := b.SnapBackend().KeyGroupRange()
	return durable.FilesBackend{First: first, Last: last, Next: b.SnapBackend()}
}

// restoredImages returns the checkpointed stores the operator restores
// from.
func (b *Base[K]) restoredImages() []kvstate.Image {
	if b.Restored == nil {
		return nil
	}
	var out []kvstate.Image
	for _, f := range b.Restored.KeyedFiles {
		if pf, ok := f.(*durable.DBFiles); ok && pf.Image.Layout != nil {
			out = append(out, pf.Image)
		}
	}
	return out
}
