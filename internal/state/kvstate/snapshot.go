package kvstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state/kv"
)

// Full snapshots use the heap backend's per-key-group format
// (internal/state/FORMAT.md), so snapshots of either backend restore into
// the other and key groups can move between subtasks.
//
// Lifecycle on restore, as with the heap backend: open an empty backend for
// the new range, RestoreKeyGroup each key group that has a snapshot, then
// register the states. Restored entries of a state that is not registered
// yet are kept as they are, under the reserved state id 0 (FORMAT.md), and
// converted into the layout when the state is registered.

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", istate.ErrCorrupt, fmt.Sprintf(format, args...))
}

// SnapshotKeyGroup returns a snapshot of every state's entries in key
// group kg, in the format of internal/state/FORMAT.md (the bytes the heap
// backend writes for the same state, up to the order of entries). It reads
// the state and changes nothing.
//
// A map state that is stored in the database (after RestoreImages)
// but not registered can be written only if its namespace type is
// struct{}; otherwise the snapshot fails until the state is registered.
func (b *Backend[K]) SnapshotKeyGroup(kg int) ([]byte, error) {
	if kg < b.first || kg > b.last {
		return nil, fmt.Errorf("kvstate: snapshot of key group %d outside the backend's range [%d, %d]", kg, b.first, b.last)
	}
	var states []istate.KeyGroupState
	for name, m := range b.meta {
		var skipNS func([]byte) ([]byte, error)
		if r := b.states[name]; r != nil {
			skipNS = r.skip.ns
		} else if m.types[0] == "struct {}" || m.types[0] == istate.SchemaOf(istate.DefaultCodec[struct{}]()) {
			skipNS = func(src []byte) ([]byte, error) { return src, nil }
		}
		payload, count, err := b.snapshotState(kg, m, skipNS)
		if err != nil {
			return nil, fmt.Errorf("kvstate: snapshot of key group %d: state %q: %w", kg, name, err)
		}
		if count > 0 {
			states = append(states, istate.KeyGroupState{Name: name, Kind: m.kind, TTL: m.ts, Names: m.names, Types: m.types, Count: count, Payload: payload})
		}
	}
	for name := range b.pending {
		raw, ok, err := b.rawGet(pendingKey(kg, name))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		h, payload, err := decodePendingHeader(raw)
		if err != nil {
			return nil, fmt.Errorf("kvstate: pending state %q: %w", name, err)
		}
		states = append(states, istate.KeyGroupState{Name: name, Kind: h.kind, TTL: h.ts, Names: h.names, Types: h.types, Count: h.count, Payload: payload})
	}
	if err := b.Err(); err != nil {
		return nil, err // what was read may be damaged
	}
	return istate.AppendKeyGroupFrame(nil, kg, istate.SchemaOf(b.kc), states)
}

// snapshotState encodes the entries of state m in key group kg as a
// snapshot payload and returns it with the number of entries.
func (b *Backend[K]) snapshotState(kg int, m *stateMeta, skipNS func([]byte) ([]byte, error)) ([]byte, int, error) {
	p := appendPrefix(nil, kg, m.id)
	it, err := b.db.NewIter(p, upperBound(p))
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	var payload []byte
	count := 0
	// Map state: the current (key, namespace) group.
	var group, groupBody []byte
	groupN := 0
	flush := func() {
		if groupN > 0 {
			payload = append(payload, group...)
			payload = binary.AppendUvarint(payload, uint64(groupN))
			payload = append(payload, groupBody...)
			count++
		}
		groupN, groupBody = 0, groupBody[:0]
	}
	for ok := it.First(); ok; ok = it.Next() {
		rest := it.Key()[len(p):]
		v, err := it.Value()
		if err != nil {
			return nil, 0, err
		}
		switch m.kind {
		case istate.KindValue, istate.KindReducing, istate.KindAggregating:
			payload = append(payload, rest...)
			payload = append(payload, v...)
			count++
		case istate.KindList:
			var n uint64
			var body []byte
			if err := forChunks(v, func(cn uint64, cb []byte) error {
				n += cn
				body = append(body, cb...)
				return nil
			}); err != nil {
				return nil, 0, err
			}
			if n == 0 {
				continue
			}
			payload = append(payload, rest...)
			payload = binary.AppendUvarint(payload, n)
			payload = append(payload, body...)
			count++
		case istate.KindMap:
			if skipNS == nil {
				return nil, 0, fmt.Errorf("map state with namespace type %s must be registered before a snapshot", m.types[0])
			}
			uk, err := b.skipKey(rest)
			if err != nil {
				return nil, 0, fmt.Errorf("key: %w", err)
			}
			if uk, err = skipNS(uk); err != nil {
				return nil, 0, fmt.Errorf("namespace: %w", err)
			}
			kn := rest[:len(rest)-len(uk)]
			if groupN == 0 || !bytes.Equal(kn, group) {
				flush()
				group = append(group[:0], kn...)
			}
			groupBody = append(groupBody, uk...)
			groupBody = append(groupBody, v...)
			groupN++
		default:
			return nil, 0, fmt.Errorf("unknown kind %d", m.kind)
		}
	}
	if err := it.Error(); err != nil {
		return nil, 0, err
	}
	flush()
	return payload, count, nil
}

func (b *Backend[K]) skipKey(src []byte) ([]byte, error) {
	_, rest, err := b.kc.Decode(src)
	return rest, err
}

func (b *Backend[K]) rawGet(key []byte) ([]byte, bool, error) {
	v, found, err := b.db.Get(nil, key)
	if err != nil {
		return nil, false, fmt.Errorf("kvstate: %w", err)
	}
	return v, found, nil
}

func pendingKey(kg int, name string) []byte {
	return append(appendPrefix(nil, kg, pendingID), name...)
}

// encodePending encodes a restored, unregistered state of one key group:
// kind, flags, stored types, entry count, then the snapshot payload.
func encodePending(s istate.KeyGroupState) []byte {
	flags := byte(0)
	if s.TTL {
		flags = 1
	}
	if !s.Names {
		flags |= 2 // the types are schemas; without it, type names (written before schemas were recorded)
	}
	dst := []byte{s.Kind, flags}
	dst = binary.AppendUvarint(dst, uint64(len(s.Types)))
	for _, t := range s.Types {
		dst = appendString(dst, t)
	}
	dst = binary.AppendUvarint(dst, uint64(s.Count))
	return append(dst, s.Payload...)
}

func decodePendingHeader(v []byte) (*pendingInfo, []byte, error) {
	if len(v) < 2 {
		return nil, nil, istate.ErrTruncated
	}
	h := &pendingInfo{kind: v[0], ts: v[1]&1 != 0, names: v[1]&2 == 0}
	src := v[2:]
	n, src, err := istate.ReadUvarint(src)
	if err != nil || n > 3 {
		return nil, nil, errors.New("bad type count")
	}
	for range n {
		var t []byte
		if t, src, err = istate.ReadBytes(src); err != nil {
			return nil, nil, err
		}
		h.types = append(h.types, string(t))
	}
	c, src, err := istate.ReadUvarint(src)
	if err != nil {
		return nil, nil, err
	}
	h.count = int(c)
	return h, src, nil
}

// RestoreKeyGroup restores the snapshot data of key group kg, taken by
// SnapshotKeyGroup of either backend with the same key type and any
// key-group range, into this backend, whose range must contain kg. Each key
// group can be restored once, and the backend must have no entries in it.
//
// The checksum and structure are verified first; on any error nothing is
// restored. Entries of registered states are written into the layout at
// once; those of states not registered yet are kept as they are and
// converted when the state is registered. A state snapshotted with TTL may
// be restored without TTL (the timestamps are dropped), not the other way
// round. Errors for malformed data wrap internal/state's ErrCorrupt.
func (b *Backend[K]) RestoreKeyGroup(kg int, data []byte) error {
	if err := b.restoreKeyGroup(kg, data); err != nil {
		return fmt.Errorf("kvstate: restore of key group %d: %w", kg, err)
	}
	return nil
}

func (b *Backend[K]) restoreKeyGroup(kg int, data []byte) error {
	if kg < b.first || kg > b.last {
		return fmt.Errorf("key group outside the backend's range [%d, %d]", b.first, b.last)
	}
	idx := kg - b.first
	if b.restored != nil && b.restored[idx] {
		return errors.New("key group already restored")
	}
	states, err := istate.ParseKeyGroupFrame(data, kg, b.keyType, istate.SchemaOf(b.kc))
	if err != nil {
		return err
	}
	for name, m := range b.meta {
		if b.groupHasEntries(kg, m.id) {
			return fmt.Errorf("state %q already has entries in the key group", name)
		}
	}
	if b.groupHasEntries(kg, pendingID) {
		return errors.New("the key group already holds restored entries")
	}
	batch := b.db.NewBatch()
	defer batch.Close()
	for _, s := range states {
		if r := b.states[s.Name]; r != nil {
			tx, err := r.resolve(s.Kind, s.Types, s.Names, s.TTL)
			if err != nil {
				return err
			}
			if err := b.decodeInto(batch, kg, r, tx, s.Payload, s.Count, s.TTL); err != nil {
				return fmt.Errorf("state %q: %w", s.Name, err)
			}
			continue
		}
		if p := b.pending[s.Name]; p != nil && (p.kind != s.Kind || !slices.Equal(p.types, s.Types) || p.ts != s.TTL || p.names != s.Names) {
			return fmt.Errorf("state %q: snapshot as %s state of %v (TTL %v) disagrees with another key group's, %s state of %v (TTL %v)",
				s.Name, istate.KindName(s.Kind), s.Types, s.TTL, istate.KindName(p.kind), p.types, p.ts)
		}
		if err := batch.Set(pendingKey(kg, s.Name), encodePending(s)); err != nil {
			return err
		}
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	for _, s := range states {
		if b.states[s.Name] != nil {
			continue
		}
		if p := b.pending[s.Name]; p != nil {
			p.count += s.Count
		} else {
			b.pending[s.Name] = &pendingInfo{kind: s.Kind, types: s.Types, names: s.Names, ts: s.TTL, count: s.Count}
		}
	}
	if b.restored == nil {
		b.restored = make([]bool, b.last-b.first+1)
	}
	b.restored[idx] = true
	return nil
}

// maxZeroSizeCount bounds the element count of a list whose elements take
// no bytes.
const maxZeroSizeCount = 1 << 24

// decodeInto converts count snapshot entries of key group kg (ts: with TTL
// timestamps) into the layout of r, writing them into batch. Values are
// copied as encoded (codecs only find where each ends), or, with tx (the
// entries were stored under older schemas), rewritten into the current
// encoding.
func (b *Backend[K]) decodeInto(batch kv.Batch, kg int, r *registration, tx *transcoders, payload []byte, count int, ts bool) error {
	prefix := appendPrefix(nil, kg, r.id)
	seen := make(map[string]struct{}, min(count, 1<<16))
	src := payload
	var err error
	var key, val []byte
	// value reads [ts] value from src and appends it, in the layout's
	// form, to dst.
	value := func(dst []byte) ([]byte, error) {
		var t int64
		if ts {
			if t, src, err = istate.ReadVarint(src); err != nil {
				return dst, corruptf("timestamp: %v", err)
			}
		}
		if r.ts {
			dst = binary.AppendVarint(dst, t)
		}
		if tx != nil && tx.value != nil {
			if src, dst, err = tx.value(src, dst); err != nil {
				return dst, fmt.Errorf("value: %w", err)
			}
			return dst, nil
		}
		start := src
		if src, err = r.skip.value(src); err != nil {
			return dst, fmt.Errorf("value: %w", err)
		}
		return append(dst, start[:len(start)-len(src)]...), nil
	}
	for i := range count {
		start := src
		if src, err = b.skipKey(src); err != nil {
			return fmt.Errorf("entry %d: key: %w", i, err)
		}
		if src, err = r.skip.ns(src); err != nil {
			return fmt.Errorf("entry %d: namespace: %w", i, err)
		}
		kn := start[:len(start)-len(src)]
		if _, dup := seen[string(kn)]; dup {
			return corruptf("entry %d: duplicate key and namespace", i)
		}
		seen[string(kn)] = struct{}{}
		key = append(append(key[:0], prefix...), kn...)
		switch r.kind {
		case istate.KindValue, istate.KindReducing, istate.KindAggregating:
			if val, err = value(val[:0]); err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
			if err := batch.Set(key, val); err != nil {
				return err
			}
		case istate.KindList:
			var n uint64
			if n, src, err = istate.ReadUvarint(src); err != nil {
				return corruptf("entry %d: list length: %v", i, err)
			}
			if n == 0 || (n > uint64(len(src)) && n > maxZeroSizeCount) {
				return corruptf("entry %d: list length %d with %d bytes left", i, n, len(src))
			}
			var body []byte
			for j := range n {
				if body, err = value(body); err != nil {
					return fmt.Errorf("entry %d: list element %d: %w", i, j, err)
				}
			}
			if err := batch.Set(key, appendChunk(val[:0], int(n), body)); err != nil {
				return err
			}
		case istate.KindMap:
			var n uint64
			if n, src, err = istate.ReadUvarint(src); err != nil {
				return corruptf("entry %d: map size: %v", i, err)
			}
			if n == 0 || (n > uint64(len(src)) && n != 1) {
				return corruptf("entry %d: map size %d with %d bytes left", i, n, len(src))
			}
			ks := make(map[string]struct{}, min(n, 1<<16))
			for j := range n {
				ukStart := src
				if src, err = r.skip.mkey(src); err != nil {
					return fmt.Errorf("entry %d: map entry %d: key: %w", i, j, err)
				}
				uk := ukStart[:len(ukStart)-len(src)]
				if tx != nil && tx.mkey != nil {
					if _, uk, err = tx.mkey(ukStart, nil); err != nil {
						return fmt.Errorf("entry %d: map entry %d: key: %w", i, j, err)
					}
				}
				if _, dup := ks[string(uk)]; dup {
					return corruptf("entry %d: map entry %d: duplicate key", i, j)
				}
				ks[string(uk)] = struct{}{}
				if val, err = value(val[:0]); err != nil {
					return fmt.Errorf("entry %d: map entry %d: %w", i, j, err)
				}
				mk := append(slices.Clip(key), uk...)
				if err := batch.Set(mk, val); err != nil {
					return err
				}
			}
		default:
			return corruptf("unknown kind %d", r.kind)
		}
	}
	if len(src) != 0 {
		return corruptf("%d bytes left after %d entries", len(src), count)
	}
	return nil
}

// convertPending writes the restored entries of r's state, kept raw since
// the restore, into the layout and drops the raw copies.
func (b *Backend[K]) convertPending(r *registration, p *pendingInfo) error {
	tx, err := r.resolve(p.kind, p.types, p.names, p.ts)
	if err != nil {
		return err
	}
	batch := b.db.NewBatch()
	defer batch.Close()
	for kg := b.first; kg <= b.last; kg++ {
		pk := pendingKey(kg, r.name)
		raw, ok, err := b.rawGet(pk)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		h, payload, err := decodePendingHeader(raw)
		if err != nil {
			return fmt.Errorf("state %q: restore of key group %d: %w", r.name, kg, err)
		}
		if err := b.decodeInto(batch, kg, r, tx, payload, h.count, h.ts); err != nil {
			return fmt.Errorf("state %q: restore of key group %d: %w", r.name, kg, err)
		}
		if err := batch.Delete(pk); err != nil {
			return err
		}
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	delete(b.pending, r.name)
	return nil
}
