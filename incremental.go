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
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// Incremental checkpoints of the Pebble state backend, as Flink's RocksDB
// incremental checkpoints. With the Pebble backend and a durable
// checkpoint store (a directory or S3: CheckpointStorage,
// NewCheckpointStore), a keyed operator's snapshot at the barrier is a
// staged Pebble checkpoint (flush, then hard links into a staging
// directory: pebblestate.Stage) plus its
// timers per key group as usual; the store, on the coordinator, uploads
// the staged SST files that no stored checkpoint has yet as shared files
// and references the others (store.Writer.ReuseShared). A restore lays the
// files out again and opens the database, merging several old databases
// when key groups moved (pebblestate.RestoreImages). Savepoints are
// converted to the canonical per-key-group snapshots when stored, so they
// never reference shared files.

// pebbleFiles is the runtime.OperatorSnapshot.KeyedFiles of a Pebble
// backend: staged (with canonical) in a snapshot taken at a barrier,
// image in a checkpoint read from a store.
type pebbleFiles struct {
	staged *pebblestate.Staged
	// canonical returns the state snapshot (internal/state/FORMAT.md) of
	// every key group of the staged checkpoint.
	canonical func() (map[int][]byte, error)
	image     pebblestate.Image
}

// incremental reports whether the operator's keyed state is checkpointed
// incrementally: the Pebble backend in a job with a durable store.
func (b *keyedBase[K]) incremental() bool {
	p, ok := b.stateBackend.(pebbleStateBackend)
	return ok && p.incremental && b.pebble != nil
}

// keyedStateBackend returns the state backend of the job's keyed
// operators, marked incremental for the Pebble backend when checkpoints go
// to a durable store.
func (e *Environment) keyedStateBackend() StateBackend {
	p, ok := e.cfg.stateBackend.(pebbleStateBackend)
	if !ok || e.checkpoint == nil {
		return e.cfg.stateBackend
	}
	if _, durable := e.checkpoint.store.(*durableStore); durable {
		p.incremental, p.staged = true, &e.staged
	}
	return p
}

// stagedSet holds staged checkpoints whose operators ended.
type stagedSet struct {
	mu     sync.Mutex
	staged []*pebblestate.Staged
}

func (s *stagedSet) add(st []*pebblestate.Staged) {
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

// snapshotIncremental stages the Pebble database and snapshots the timers
// per key group (with empty state snapshots).
func (b *keyedBase[K]) snapshotIncremental(id int64) (runtime.OperatorSnapshot, error) {
	first, last := b.pebble.KeyGroupRange()
	kgs, err := keyedsnap.Snapshot(filesBackend{first: first, last: last}, b.timers)
	if err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	staged, err := b.pebble.Stage(id)
	if err != nil {
		return runtime.OperatorSnapshot{}, err
	}
	p, _ := b.stateBackend.(pebbleStateBackend)
	clk := b.clk
	canonical := func() (map[int][]byte, error) {
		dir := staged.Dir + ".canonical"
		db, err := pebblestate.RestoreImages[K]([]pebblestate.Image{staged.Image()}, dir, first, last, clk, p.opts)
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
	return runtime.OperatorSnapshot{KeyGroups: kgs, KeyedFiles: &pebbleFiles{staged: staged, canonical: canonical}}, nil
}

// filesBackend stands for keyed state kept as files in keyedsnap frames:
// it snapshots empty state, and its restore skips empty state snapshots
// (the heap and Pebble backends never write one) and passes the others to
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

// restoredImages returns the checkpointed databases the operator restores
// from.
func (b *keyedBase[K]) restoredImages() []pebblestate.Image {
	if b.restored == nil {
		return nil
	}
	var out []pebblestate.Image
	for _, f := range b.restored.KeyedFiles {
		if pf, ok := f.(*pebbleFiles); ok && pf.image.Layout != nil {
			out = append(out, pf.image)
		}
	}
	return out
}

// restoreImagesToHeap restores the key groups of the heap backend from
// checkpointed Pebble databases (a job that changed backend), through a
// temporary Pebble database and the common per-key-group format.
func (b *keyedBase[K]) restoreImagesToHeap(images []pebblestate.Image, root string) error {
	if len(images) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp(root, "weir-restore-*")
	if err != nil {
		return fmt.Errorf("restoring Pebble checkpoint files into the heap backend: %w", err)
	}
	defer os.RemoveAll(dir)
	first, last := b.backend.KeyGroupRange()
	db, err := pebblestate.RestoreImages[K](images, filepath.Join(dir, "db"), first, last, b.clk, pebblestate.Options{})
	if err != nil {
		return err
	}
	defer db.Discard()
	for kg := first; kg <= last; kg++ {
		data, err := db.SnapshotKeyGroup(kg)
		if err != nil {
			return err
		}
		if err := b.backend.RestoreKeyGroup(kg, data); err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
	}
	return nil
}

// saveFiles stores the keyed files of a subtask snapshot in checkpoint w
// and returns the manifest's description of them. A checkpoint uploads
// the staged files no stored checkpoint has and references the others; a
// savepoint (canonical) gets none: the keyed state goes into sn.KeyGroups
// instead, which saveFiles rewrites.
func saveFiles(ctx context.Context, w store.Writer, kind store.Kind, base string, sn *OperatorSnapshot) (*store.DBFiles, error) {
	pf, ok := sn.KeyedFiles.(*pebbleFiles)
	if !ok || pf.staged == nil {
		return nil, fmt.Errorf("snapshot of %s: keyed state files of type %T cannot be stored", base, sn.KeyedFiles)
	}
	s := pf.staged
	if !s.Claim() {
		return nil, fmt.Errorf("snapshot of %s: the staged Pebble checkpoint %d was discarded", base, s.ID)
	}
	defer s.Release()
	if kind == store.Savepoint {
		states, err := pf.canonical()
		if err != nil {
			return nil, fmt.Errorf("snapshot of %s: canonical savepoint of the Pebble state: %w", base, err)
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
func (d *durableStore) loadFiles(ctx context.Context, m *store.Manifest, db *store.DBFiles, read func(string) ([]byte, error)) (*pebbleFiles, error) {
	img := pebblestate.Image{FirstKeyGroup: db.FirstKeyGroup, LastKeyGroup: db.LastKeyGroup, Shared: map[string]string{}}
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
	return &pebbleFiles{image: img}, nil
}
