package durable

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/state/kvstate"
)

// Incremental checkpoints of disk state backends, as Flink's RocksDB
// incremental checkpoints (see internal/keyedop/disk.go): the store, on
// the coordinator, uploads the staged immutable files that no stored
// checkpoint has yet as shared files and references the others
// (store.Writer.ReuseShared); a restore lays the files out again.
// Savepoints are converted to the canonical per-key-group snapshots when
// stored, so they never reference shared files.

// DBFiles is the engine.OperatorSnapshot.KeyedFiles of a disk backend:
// Staged (with Canonical) in a snapshot taken at a barrier, Image in a
// checkpoint read from a store.
type DBFiles struct {
	Staged *kvstate.Staged
	// Canonical returns the state snapshot (internal/state/FORMAT.md) of
	// every key group of the staged checkpoint.
	Canonical func() (map[int][]byte, error)
	Image     kvstate.Image
}

// StagedSet holds staged checkpoints whose operators ended.
type StagedSet struct {
	mu     sync.Mutex
	staged []*kvstate.Staged
}

// Add keeps st until Discard.
func (s *StagedSet) Add(st []*kvstate.Staged) {
	s.mu.Lock()
	s.staged = append(s.staged, st...)
	s.mu.Unlock()
}

// Discard discards the staged checkpoints that no store claimed.
func (s *StagedSet) Discard() {
	s.mu.Lock()
	st := s.staged
	s.staged = nil
	s.mu.Unlock()
	for _, x := range st {
		x.Discard()
	}
}

// SaveFiles stores the keyed files of a subtask snapshot in checkpoint w
// and returns the manifest's description of them. A checkpoint uploads
// the staged files no stored checkpoint has and references the others; a
// savepoint (canonical) gets none: the keyed state goes into sn.KeyGroups
// instead, which SaveFiles rewrites.
func SaveFiles(ctx context.Context, w store.Writer, kind store.Kind, base string, sn *engine.OperatorSnapshot) (*store.DBFiles, error) {
	pf, ok := sn.KeyedFiles.(*DBFiles)
	if !ok || pf.Staged == nil {
		return nil, fmt.Errorf("snapshot of %s: keyed state files of type %T cannot be stored", base, sn.KeyedFiles)
	}
	s := pf.Staged
	if !s.Claim() {
		return nil, fmt.Errorf("snapshot of %s: the staged checkpoint %d of its state was discarded", base, s.ID)
	}
	defer s.Release()
	if kind == store.Savepoint {
		states, err := pf.Canonical()
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
func (d *Store) loadFiles(ctx context.Context, m *store.Manifest, db *store.DBFiles, read func(string) ([]byte, error)) (*DBFiles, error) {
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
	return &DBFiles{Image: img}, nil
}
