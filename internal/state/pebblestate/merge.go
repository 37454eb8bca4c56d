package pebblestate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/clock"
)

// CheckpointRef names an incremental checkpoint: the directory it was
// written to and its id.
type CheckpointRef struct {
	// Dir is the checkpoint directory given to CheckpointIncremental.
	Dir string
	// ID is the checkpoint id.
	ID int64
}

// RestoreIncrementalMerged restores a backend for the key groups
// first..last from the incremental checkpoints of several old backends
// whose key-group ranges together cover it (a restore at a lower
// parallelism). The first checkpoint's files become the database, as with
// RestoreIncremental; the entries of the others within first..last are
// copied into it, with their state ids mapped by state name. The old
// ranges, clipped to first..last, must not overlap, and states of one name
// must have the same kind, types and TTL timestamps in every checkpoint.
// Checkpoints whose range does not meet first..last are skipped.
func RestoreIncrementalMerged[K comparable](refs []CheckpointRef, dbDir string, first, last int, clk clock.Clock, opts Options) (*Backend[K], error) {
	var use []Manifest
	var dirs []string
	for _, r := range refs {
		m, err := ReadManifest(r.Dir, r.ID)
		if err != nil {
			return nil, err
		}
		lo, hi := max(m.FirstKeyGroup, first), min(m.LastKeyGroup, last)
		if lo > hi {
			continue
		}
		for _, u := range use {
			if max(u.FirstKeyGroup, lo) <= min(u.LastKeyGroup, hi) {
				return nil, fmt.Errorf("pebblestate: checkpoints %d and %d both hold key groups of [%d, %d]", u.ID, m.ID, lo, hi)
			}
		}
		use = append(use, m)
		dirs = append(dirs, r.Dir)
	}
	if len(use) == 0 {
		return Open[K](dbDir, first, last, clk, opts)
	}
	b, err := RestoreIncremental[K](dirs[0], use[0].ID, dbDir, first, last, clk, opts)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(use); i++ {
		tmp := fmt.Sprintf("%s.merge-%d-%s", filepath.Clean(dbDir), i, randomName())
		err := func() error {
			defer os.RemoveAll(tmp)
			if err := layout(dirs[i], use[i], tmp); err != nil {
				return err
			}
			return b.mergeFrom(tmp, fmt.Sprintf("checkpoint %d", use[i].ID))
		}()
		if err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	return b, nil
}

// mergeFrom copies the entries of the database in dir (a laid-out
// checkpoint) within the backend's key-group range into the backend.
func (b *Backend[K]) mergeFrom(dir string, what string) error {
	db, err := pebble.Open(dir, &pebble.Options{DisableWAL: true, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("pebblestate: merging %s: %w", what, err)
	}
	defer db.Close()
	fail := func(err error) error { return fmt.Errorf("pebblestate: merging %s: %w", what, err) }
	kt, closer, err := db.Get(metaKey(metaKeyType, ""))
	if err != nil {
		return fail(err)
	}
	same := string(kt) == b.keyType
	_ = closer.Close()
	if !same {
		return fail(errors.New("the checkpoint has keys of another type"))
	}
	// Map the checkpoint's state ids to the backend's, by name.
	ids := map[uint16]uint16{pendingID: pendingID}
	lo := metaKey(metaState, "")
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: upperBound(lo)})
	if err != nil {
		return fail(err)
	}
	var metas []*stateMeta
	for ok := it.First(); ok; ok = it.Next() {
		m, err := decodeMeta(string(it.Key()[len(lo):]), it.Value())
		if err != nil {
			_ = it.Close()
			return fail(err)
		}
		metas = append(metas, m)
	}
	if err := it.Close(); err != nil {
		return fail(err)
	}
	for _, m := range metas {
		own := b.meta[m.name]
		if own == nil {
			if b.nextID == 0xFFFF {
				return fail(errors.New("too many states"))
			}
			own = &stateMeta{name: m.name, id: b.nextID, kind: m.kind, types: m.types, ts: m.ts}
			b.nextID++
			if err := b.db.Set(metaKey(metaState, m.name), own.encode(), writeOpts); err != nil {
				return fail(err)
			}
			b.meta[m.name] = own
		} else if own.kind != m.kind || !slices.Equal(own.types, m.types) || own.ts != m.ts {
			return fail(fmt.Errorf("state %q is stored differently in the checkpoints", m.name))
		}
		ids[m.id] = own.id
	}
	// Copy the entries of the range.
	start := []byte{byte(b.first >> 8), byte(b.first)}
	end := []byte{byte((b.last + 1) >> 8), byte(b.last + 1)}
	it, err = db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return fail(err)
	}
	defer it.Close()
	batch := b.db.NewBatch()
	defer func() { batch.Close() }()
	var key []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < 4 {
			continue
		}
		old := uint16(k[2])<<8 | uint16(k[3])
		nid, known := ids[old]
		if !known {
			return fail(fmt.Errorf("entry of unknown state id %d", old))
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fail(err)
		}
		key = append(append(key[:0], k[0], k[1], byte(nid>>8), byte(nid)), k[4:]...)
		if err := batch.Set(key, v, nil); err != nil {
			return fail(err)
		}
		if nid == pendingID {
			h, _, err := decodePendingHeader(v)
			if err != nil {
				return fail(err)
			}
			name := string(k[4:])
			if p := b.pending[name]; p != nil {
				p.count += h.count
			} else {
				b.pending[name] = h
			}
		}
		if batch.Len() > 4<<20 {
			if err := batch.Commit(writeOpts); err != nil {
				return fail(err)
			}
			batch.Close()
			batch = b.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return fail(err)
	}
	if err := batch.Commit(writeOpts); err != nil {
		return fail(err)
	}
	return nil
}
