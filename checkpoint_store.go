package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/job"
)

// NewDirCheckpointStore keeps checkpoints in a local directory (created if
// missing). The on-disk format is documented in
// internal/checkpoint/store/FORMAT.md.
func NewDirCheckpointStore(dir string) (CheckpointStore, error) {
	return NewCheckpointStore(dir)
}

// NewCheckpointStore keeps checkpoints at location, as Flink's checkpoint
// storage takes a path: a local directory ("/ckpt", "file:///ckpt";
// created if missing) or a location of a scheme one of storages reaches
// ("s3://bucket/prefix" with s3.New(...) of package storage/s3). The
// format is the same in all (internal/checkpoint/store/FORMAT.md): the
// manifest is written last, so a failure or crash never leaves a
// checkpoint that looks complete.
func NewCheckpointStore(location string, storages ...Storage) (CheckpointStore, error) {
	r, err := hooks.Remotes(storages, "weir.NewCheckpointStore")
	if err != nil {
		return nil, err
	}
	return newDurableStore(location, r, "weir.NewCheckpointStore")
}

// durableStore is a CheckpointStore in a durable location: a local
// directory or a location a storage reaches (internal/checkpoint/durable).
type durableStore struct{ d *durable.Store }

// newDurableStore opens the store at location, reaching remote locations
// through r; option names the option that adds a storage, for messages.
func newDurableStore(location string, r store.Remotes, option string) (*durableStore, error) {
	d, err := durable.New(location, r, option)
	if err != nil {
		return nil, err
	}
	return &durableStore{d: d}, nil
}

// Save implements CheckpointStore.
func (s *durableStore) Save(ctx context.Context, cp *Checkpoint) error {
	return s.d.Save(ctx, engineCheckpoint(cp))
}

// Latest implements CheckpointStore.
func (s *durableStore) Latest(ctx context.Context) (*Checkpoint, error) {
	cp, err := s.d.Latest(ctx)
	return publicCheckpoint(cp), err
}

// Retain implements CheckpointStore.
func (s *durableStore) Retain(ctx context.Context, n int) error { return s.d.Retain(ctx, n) }

// engineStoreOf returns s as the engine's store: a durable store's own,
// else s converting checkpoints.
func engineStoreOf(s CheckpointStore) job.Store {
	if d, ok := s.(*durableStore); ok {
		return d.d
	}
	return &job.StoreAdapter[*Checkpoint]{S: s, In: engineCheckpoint, Out: publicCheckpoint, Drop: func(cp *Checkpoint, uids []string) {
		for _, id := range uids {
			delete(cp.Operators, id)
		}
	}}
}

// engineCheckpoint and publicCheckpoint convert a checkpoint between the
// engine's types and the API's.
func engineCheckpoint(cp *Checkpoint) *durable.Checkpoint {
	if cp == nil {
		return nil
	}
	return &durable.Checkpoint{ID: cp.ID, MaxParallelism: cp.MaxParallelism,
		Operators: job.ConvertOps(cp.Operators, func(s OperatorSnapshot) engine.OperatorSnapshot { return engine.OperatorSnapshot(s) })}
}

func publicCheckpoint(cp *durable.Checkpoint) *Checkpoint {
	if cp == nil {
		return nil
	}
	return &Checkpoint{ID: cp.ID, MaxParallelism: cp.MaxParallelism,
		Operators: job.ConvertOps(cp.Operators, func(s engine.OperatorSnapshot) OperatorSnapshot { return OperatorSnapshot(s) })}
}

// storageName names the checkpoint storage as Flink's REST API does
// (checkpoint_storage): a store at a location is Flink's file-system
// storage, the memory store its JobManager storage; a store of your own
// shows its type.
func storageName(s CheckpointStore) string {
	switch s.(type) {
	case *durableStore:
		return "FileSystemCheckpointStorage"
	case *MemoryCheckpointStore:
		return "JobManagerCheckpointStorage"
	}
	return fmt.Sprintf("%T", s)
}
