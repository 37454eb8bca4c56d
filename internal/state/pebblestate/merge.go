package pebblestate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// mergeFrom copies the entries of the database in dir (a laid-out
// checkpointed database, see RestoreImages) within the backend's
// key-group range into the backend, mapping the database's state ids to
// the backend's by state name. States of one name must have the same
// kind, stored types and TTL timestamps in both.
func (b *Backend[K]) mergeFrom(dir string, what string) (err error) {
	po := &pebble.Options{DisableWAL: true, FS: b.fs}
	f := newFault(nil)
	f.configure(po, dir)
	db, err := pebble.Open(dir, po)
	if err != nil {
		return fmt.Errorf("pebblestate: merging %s: %w", what, err)
	}
	defer func() {
		_ = db.Close()
		if ferr := f.get(); err == nil && ferr != nil {
			err = fmt.Errorf("pebblestate: merging %s: %w", what, ferr)
		}
	}()
	fail := func(err error) error { return fmt.Errorf("pebblestate: merging %s: %w", what, err) }
	kt, closer, err := db.Get(metaKey(metaKeyType, ""))
	if err != nil {
		return fail(err)
	}
	same := b.sameKeyType(string(kt))
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
