package kvstate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/weirstream/weir/state/kv"
)

// mergeFrom copies the entries of the database in dir (a laid-out
// checkpointed database, see RestoreImages) within the backend's
// key-group range into the backend, mapping the database's state ids to
// the backend's by state name. States of one name must have the same
// kind, stored types and TTL timestamps in both.
func (b *Backend[K]) mergeFrom(dir string, what string) (err error) {
	db, err := b.opener.Open(dir, kv.Options{})
	if err != nil {
		return fmt.Errorf("kvstate: merging %s: %w", what, err)
	}
	defer func() {
		if f, ok := db.(kv.Faulter); ok {
			if ferr := f.Err(); err == nil && ferr != nil {
				err = fmt.Errorf("kvstate: merging %s: %w", what, ferr)
			}
		}
		_ = db.Close()
	}()
	fail := func(err error) error { return fmt.Errorf("kvstate: merging %s: %w", what, err) }
	kt, found, err := db.Get(nil, metaKey(metaKeyType, ""))
	if err != nil {
		return fail(err)
	}
	if !found {
		return fail(errors.New("the checkpoint has no key type"))
	}
	if !b.sameKeyType(string(kt)) {
		return fail(errors.New("the checkpoint has keys of another type"))
	}
	// Map the checkpoint's state ids to the backend's, by name.
	ids := map[uint16]uint16{pendingID: pendingID}
	lo := metaKey(metaState, "")
	it, err := db.NewIter(lo, upperBound(lo))
	if err != nil {
		return fail(err)
	}
	var metas []*stateMeta
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			_ = it.Close()
			return fail(err)
		}
		m, err := decodeMeta(string(it.Key()[len(lo):]), v)
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
			if err := b.db.Set(metaKey(metaState, m.name), own.encode()); err != nil {
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
	it, err = db.NewIter(start, end)
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
		v, err := it.Value()
		if err != nil {
			return fail(err)
		}
		key = append(append(key[:0], k[0], k[1], byte(nid>>8), byte(nid)), k[4:]...)
		if err := batch.Set(key, v); err != nil {
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
			if err := batch.Commit(); err != nil {
				return fail(err)
			}
			batch.Close()
			batch = b.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return fail(err)
	}
	if err := batch.Commit(); err != nil {
		return fail(err)
	}
	return nil
}
