package weir

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/keyedsnap"
	"github.com/weirstream/weir/internal/runtime"
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
// never reference shared files.

// dbFiles is the runtime.OperatorSnapshot.KeyedFiles of a disk
// backend: staged (with canonical) in a snapshot taken at a barrier,
// image in a checkpoint read from a store.
type dbFiles struct {
	staged *kvstate.Staged
	// canonical returns the state snapshot (internal/state/FORMAT.md) of
	// every key group of the staged checkpoint.
	canonical func() (map[int][]byte, error)
	image     kvstate.Image
}

// incremental reports whether the operator's keyed state is checkpointed
// incrementally: a disk backend whose store takes checkpoints, in a job
// with a durable store.
func (b *keyedBase[K]) incremental() bool {
	d, ok := b.stateBackend.(diskBackend)
	return ok && d.incremental && b.disk != nil && b.disk.Incremental()
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
			d.incremental, d.staged = true, &e.staged
		}
	}
	return d
}

// stagedSet holds staged checkpoints whose operators ended.
type stagedSet struct {
	mu     sync.Mutex
	staged []*kvstate.Staged
}

func (s *stagedSet) add(st []*kvstate.Staged) {
	s.mu.Lock()
	s.staged = append(s.staged, st...)
	s.mu.Unlock()
}

// discard discards the staged checkpoints that no store claimed.
func (s *stagedSet) discard() {
	s.mu.Lock()
	st := s.staged
	s.staged = nil
	s.mu.Unlock()
	for _, x := range st {
		x.Discard()
	}
}

// snapshotIncremental stages the store and snapshots the timers
// per key group (with empty state snapshots).
func (b *keyedBase[K]) snapshotIncremental(id int64) (runtime.OperatorSnapshot, error) {
	first, last := b.disk.KeyGroupRange()
	kgs, err := keyedsnap.Snapshot(filesBackend{first: first, last: last}, b.timers)
	if err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	staged, err := b.disk.Stage(id)
	if err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	d, _ := b.stateBackend.(diskBackend)
	clk := b.clk
	canonical := func() (map[int][]byte, error) {
		dir := staged.Dir + ".canonical"
		db, err := kvstate.RestoreImages[K]([]kvstate.Image{staged.Image()}, dir, first, last, clk, kvstate.Options{Store: d.StateBackend})
		if err != nil {
			return nil, err
		}
		defer db.Discard()
		out := make(map[int][]byte, last-first+1)
		for kg := first; kg <= last; kg++ {
			if out[kg], err = db.SnapshotKeyGroup(kg); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return runtime.OperatorSnapshot{KeyGroups: kgs, KeyedFiles: &dbFiles{staged: staged, canonical: canonical}}, nil
}

// filesBackend stands for keyed state kept as files in keyedsnap frames:
// it snapshots empty state, and its restore skips empty state snapshots
// (the heap and disk backends never write one) and passes the others to
// next.
type filesBackend struct {
	first, last int
	next        keyedsnap.Backend
}

// KeyGroupRange implements keyedsnap.Backend.
func (f filesBackend) KeyGroupRange() (int, int) { return f.first, f.last }

// SnapshotKeyGroup implements keyedsnap.Backend.
func (f filesBackend) SnapshotKeyGroup(int) ([]byte, error) { return nil, nil }

// RestoreKeyGroup implements keyedsnap.Backend.
func (f filesBackend) RestoreKeyGroup(kg int, data []byte) error {
	if len(data) == 0 || f.next == nil {
		return nil
	}
	return f.next.RestoreKeyGroup(kg, data)
}

// restoreBackend is the backend keyed snapshots restore into: frames of
// incremental checkpoints hold no state (it came from the files).
func (b *keyedBase[K]) restoreBackend() keyedsnap.Backend {
	first, last := b.snapBackend().KeyGroupRange()
	return filesBackend{first: first, last: last, next: b.snapBackend()}
}

// restoredImages returns the checkpointed stores the operator restores
// from.
func (b *keyedBase[K]) restoredImages() []kvstate.Image {
	if b.restored == nil {
		return nil
	}
	var out []kvstate.Image
	for _, f := range b.restored.KeyedFiles {
		if pf, ok := f.(*dbFiles); ok && pf.image.Layout != nil {
			out = append(out, pf.image)
		}
	}
	return out
}

// saveFiles stores the keyed files of a subtask snapshot in checkpoint w
// and returns the manifest's description of them. A checkpoint uploads
// the staged files no stored checkpoint has and references the others; a
// savepoint (canonical) gets none: the keyed state goes into sn.KeyGroups
// instead, which saveFiles rewrites.
func saveFiles(ctx context.Context, w store.Writer, kind store.Kind, base string, sn *OperatorSnapshot) (*store.DBFiles, error) {
	pf, ok := sn.KeyedFiles.(*dbFiles)
	if !ok || pf.staged == nil {
		return nil, fmt.Errorf("snapshot of %s: keyed state files of type %T cannot be stored", base, sn.KeyedFiles)
	}
	s := pf.staged
	if !s.Claim() {
		return nil, fmt.Errorf("snapshot of %s: the staged checkpoint %d of its state was discarded", base, s.ID)
	}
	defer s.Release()
	if kind == store.Savepoint {
		states, err := pf.canonical()
		if err != nil {
			return nil, fmt.Errorf("snapshot of %s: canonical savepoint of the keyed state: %w", base, err)
		}
		kgs := make(map[int][]byte, len(states))
		for kg, st := range states {
			timers := sn.KeyGroups[kg]
			if n, k := binary.Uvarint(timers); k > 0 && n == 0 {
				timers = timers[k:]
			} else {
				return nil, fmt.Errorf("snapshot of %s: key group %d: expected a frame without state", base, kg)
			}
			frame := binary.AppendUvarint(make([]byte, 0, len(st)+len(timers)+4), uint64(len(st)))
			kgs[kg] = append(append(frame, st...), timers...)
		}
		sn.KeyGroups = kgs
		return nil, nil
	}
	db := &store.DBFiles{FirstKeyGroup: s.FirstKeyGroup, LastKeyGroup: s.LastKeyGroup, KeyType: s.KeyType}
	for _, f := range s.Files {
		if f.Shared != "" {
			reused, err := w.ReuseShared(ctx, f.Shared)
			if err != nil {
				return nil, err
			}
			if !reused {
				// A copy: the store never shares a file with a live
				// database (store.Writer.WriteSharedFile).
				if err := w.WriteSharedFile(ctx, f.Shared, s.Path(f)); err != nil {
					return nil, fmt.Errorf("snapshot of %s: %w", base, err)
				}
			}
			db.Files = append(db.Files, store.DBFile{Name: f.Name, Shared: f.Shared})
			continue
		}
		data, err := os.ReadFile(s.Path(f))
		if err != nil {
			return nil, fmt.Errorf("snapshot of %s: %w", base, err)
		}
		name := base + ".db." + f.Name
		if err := w.WriteFile(ctx, name, data); err != nil {
			return nil, err
		}
		db.Files = append(db.Files, store.DBFile{Name: f.Name, File: name})
	}
	return db, nil
}

// loadFiles returns the KeyedFiles of a subtask whose keyed state
// checkpoint m holds as database files: the small private files are read
// now, the shared ones are placed when the restore lays the database out
// (copied from the store, streamed).
func (d *durableStore) loadFiles(ctx context.Context, m *store.Manifest, db *store.DBFiles, read func(string) ([]byte, error)) (*dbFiles, error) {
	img := kvstate.Image{FirstKeyGroup: db.FirstKeyGroup, LastKeyGroup: db.LastKeyGroup, Shared: map[string]string{}}
	private := map[string][]byte{}
	for _, f := range db.Files {
		if f.Shared != "" {
			img.Shared[f.Name] = f.Shared
			continue
		}
		data, err := read(f.File)
		if err != nil {
			return nil, err
		}
		private[f.Name] = data
	}
	files := db.Files
	img.Layout = func(dir string) error {
		for _, f := range files {
			dst := filepath.Join(dir, f.Name)
			data, ok := private[f.Name]
			if !ok {
				// Copied, streamed and verified: never held in memory,
				// never a link to the store's file.
				if err := d.s.CopyShared(ctx, m, f.Shared, dst); err != nil {
					return err
				}
				continue
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return fmt.Errorf("restoring %s %d: %w", m.Kind, m.ID, err)
			}
		}
		return nil
	}
	return &dbFiles{image: img}, nil
}
