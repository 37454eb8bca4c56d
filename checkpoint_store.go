package weir

import (
	"context"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/job"
	"github.com/weirstream/weir/internal/runtime"
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
	return &engineStore{s: s}
}

// engineStore is a CheckpointStore as the engine's store.
type engineStore struct {
	s CheckpointStore
	// last is the checkpoint Latest returned last, conv its conversion:
	// a restore that drops state of it drops it from last too.
	mu   sync.Mutex
	last *Checkpoint
	conv *durable.Checkpoint
}

func (s *engineStore) Save(ctx context.Context, cp *durable.Checkpoint) error {
	return s.s.Save(ctx, publicCheckpoint(cp))
}

func (s *engineStore) Latest(ctx context.Context) (*durable.Checkpoint, error) {
	cp, err := s.s.Latest(ctx)
	conv := engineCheckpoint(cp)
	s.mu.Lock()
	s.last, s.conv = cp, conv
	s.mu.Unlock()
	return conv, err
}

func (s *engineStore) Retain(ctx context.Context, n int) error { return s.s.Retain(ctx, n) }

// Dropped implements job.Dropper.
func (s *engineStore) Dropped(cp *durable.Checkpoint, uids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cp == s.conv && s.last != nil {
		for _, id := range uids {
			delete(s.last.Operators, id)
		}
	}
}

// engineCheckpoint and publicCheckpoint convert a checkpoint between the
// engine's types and the API's.
func engineCheckpoint(cp *Checkpoint) *durable.Checkpoint {
	if cp == nil {
		return nil
	}
	out := &durable.Checkpoint{ID: cp.ID, MaxParallelism: cp.MaxParallelism}
	if cp.Operators != nil {
		out.Operators = make(map[string][]runtime.OperatorSnapshot, len(cp.Operators))
		for uid, subs := range cp.Operators {
			rs := make([]runtime.OperatorSnapshot, len(subs))
			for i, s := range subs {
				rs[i] = runtime.OperatorSnapshot(s)
			}
			out.Operators[uid] = rs
		}
	}
	return out
}

func publicCheckpoint(cp *durable.Checkpoint) *Checkpoint {
	if cp == nil {
		return nil
	}
	out := &Checkpoint{ID: cp.ID, MaxParallelism: cp.MaxParallelism}
	if cp.Operators != nil {
		out.Operators = make(map[string][]OperatorSnapshot, len(cp.Operators))
		for uid, subs := range cp.Operators {
			ps := make([]OperatorSnapshot, len(subs))
			for i, s := range subs {
				ps[i] = OperatorSnapshot(s)
			}
			out.Operators[uid] = ps
		}
	}
	return out
}
