package kvstate

import (
	"encoding/binary"
	"fmt"
	"iter"
	"reflect"
	"slices"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// Map is a MapState handle of a Backend for namespace type N. Each map
// entry is its own key in the store (the key of the current key and namespace
// followed by the encoded map key), so Get, Put and Remove touch one entry
// and the map is never read whole. With TTL each entry has its own
// timestamp, as in Flink.
//
// Map keys are compared by their encoding: Go keys that are == but encode
// differently (0.0 and -0.0) are different entries here, and NaN keys can
// be found again, unlike in a Go map.
type Map[K, N comparable, UK comparable, UV any] struct {
	handle[K, N]
	kc state.Codec[UK]
	vc state.Codec[UV]
}

var _ state.MapState[int, int] = (*Map[string, struct{}, int, int])(nil)

// GetMap returns a handle of the map state described by d, registering the
// state on first use. A state registered under the same name must be a map
// state of the same namespace, key and value types with the same TTL
// config.
func GetMap[K, N comparable, UK comparable, UV any](b *Backend[K], d state.MapDescriptor[UK, UV]) (*Map[K, N, UK, UV], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	kc, vc := codecOr(d.KeyCodec), codecOr(d.Codec)
	r, err := register(b, d.Name, istate.KindMap,
		[]reflect.Type{reflect.TypeFor[N](), reflect.TypeFor[UK](), reflect.TypeFor[UV]()},
		storedTypes{
			names:   []string{typeName[N](), typeName[UK](), typeName[UV]()},
			schemas: []string{istate.SchemaOf(istate.DefaultCodec[N]()), istate.SchemaOf(kc), istate.SchemaOf(vc)},
			resolve: func(old []string) (any, int, error) {
				kr, err := istate.ReaderFor(kc, old[0])
				if err != nil {
					return nil, 0, err
				}
				vr, err := istate.ReaderFor(vc, old[1])
				if err != nil {
					return nil, 1, err
				}
				return &transcoders{value: transcoder(vr, vc), mkey: transcoder(kr, kc)}, 0, nil
			},
		}, d.TTL,
		skippers{ns: skipperOf(istate.DefaultCodec[N]()), value: skipperOf(vc), mkey: skipperOf(kc)})
	if err != nil {
		return nil, err
	}
	return &Map[K, N, UK, UV]{handle: newHandle[K, N](b, r), kc: kc, vc: vc}, nil
}

// entryKey returns the key of map key k of the current key and namespace.
func (s *Map[K, N, UK, UV]) entryKey(k UK) []byte {
	key, err := s.kc.Append(s.dbKey(), k)
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: encoding map key: %w", s.r.name, err))
	}
	s.kbuf = key
	return key
}

func (s *Map[K, N, UK, UV]) decodeValue(raw []byte) (UV, int64) {
	var ts int64
	var err error
	if s.r.ts {
		if ts, raw, err = istate.ReadVarint(raw); err != nil {
			panic(fmt.Errorf("kvstate: state %q: timestamp: %w", s.r.name, err))
		}
	}
	v, _, err := s.vc.Decode(raw)
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: decoding: %w", s.r.name, err))
	}
	return v, ts
}

func (s *Map[K, N, UK, UV]) encodeValue(v UV, ts int64) []byte {
	w := s.wbuf[:0]
	if s.r.ts {
		w = binary.AppendVarint(w, ts)
	}
	w, err := s.vc.Append(w, v)
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: encoding: %w", s.r.name, err))
	}
	s.wbuf = w
	return w
}

// Get returns the value stored under k for the current key and namespace,
// or the zero UV and false. With TTL it follows Flink's TtlMapState.get.
func (s *Map[K, N, UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	key := s.entryKey(k)
	raw, ok := s.get(key)
	if !ok {
		return zero, false
	}
	v, ts := s.decodeValue(raw)
	if !s.ttl.enabled {
		return v, true
	}
	now := s.b.clk.NowMillis()
	if s.ttl.expired(ts, now) {
		s.del(key)
		if s.ttl.returnExpired {
			return v, true
		}
		return zero, false
	}
	if s.ttl.updateOnRead {
		s.set(key, s.encodeValue(v, now))
	}
	return v, true
}

// Put stores v under k for the current key and namespace.
func (s *Map[K, N, UK, UV]) Put(k UK, v UV) {
	now := s.now()
	key := s.entryKey(k)
	s.set(key, s.encodeValue(v, now))
}

// PutAll stores every entry of m for the current key and namespace.
func (s *Map[K, N, UK, UV]) PutAll(m map[UK]UV) {
	if len(m) == 0 {
		return
	}
	now := s.now()
	batch := s.b.db.NewBatch()
	defer batch.Close()
	for k, v := range m {
		if err := batch.Set(s.entryKey(k), s.encodeValue(v, now)); err != nil {
			panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
		}
	}
	if err := batch.Commit(); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
	}
}

// Remove removes the entry of k for the current key and namespace.
func (s *Map[K, N, UK, UV]) Remove(k UK) { s.del(s.entryKey(k)) }

// Contains reports whether an entry of k is stored for the current key and
// namespace. With TTL it is a read of the entry, as Get.
func (s *Map[K, N, UK, UV]) Contains(k UK) bool {
	_, ok := s.Get(k)
	return ok
}

// iterate calls f with every stored entry of the current key and
// namespace: its key in the store, map key and raw value, in key order. The
// iterator sees the state as of the call; f may modify it.
func (s *Map[K, N, UK, UV]) iterate(f func(key []byte, k UK, raw []byte) bool) {
	lo := slices.Clone(s.dbKey())
	it, err := s.b.db.NewIter(lo, upperBound(lo))
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		k, rest, err := s.kc.Decode(key[len(lo):])
		if err != nil || len(rest) != 0 {
			panic(fmt.Errorf("kvstate: state %q: decoding map key: %v (%d bytes left)", s.r.name, err, len(rest)))
		}
		raw, err := it.Value()
		if err != nil {
			panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
		}
		if !f(key, k, raw) {
			return
		}
	}
	if err := it.Error(); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
	}
}

// All iterates over the entries of the current key and namespace, in the
// order of their encoded keys. The loop body may modify the state; the
// iteration goes on over the entries as they were when it started. With
// TTL each entry is read as by Get.
func (s *Map[K, N, UK, UV]) All() iter.Seq2[UK, UV] { return s.entries }

func (s *Map[K, N, UK, UV]) entries(yield func(UK, UV) bool) {
	now := s.now()
	s.iterate(func(key []byte, k UK, raw []byte) bool {
		v, ts := s.decodeValue(raw)
		if s.ttl.enabled {
			if s.ttl.expired(ts, now) {
				s.del(key)
				if !s.ttl.returnExpired {
					return true
				}
			} else if s.ttl.updateOnRead {
				s.set(key, s.encodeValue(v, now))
			}
		}
		return yield(k, v)
	})
}

// Keys iterates over the keys of the entries of the current key and
// namespace, with the same semantics as All.
func (s *Map[K, N, UK, UV]) Keys() iter.Seq[UK] {
	return func(yield func(UK) bool) {
		s.entries(func(k UK, _ UV) bool { return yield(k) })
	}
}

// Values iterates over the values of the entries of the current key and
// namespace, with the same semantics as All.
func (s *Map[K, N, UK, UV]) Values() iter.Seq[UV] {
	return func(yield func(UV) bool) {
		s.entries(func(_ UK, v UV) bool { return yield(v) })
	}
}

// IsEmpty reports whether the current key and namespace have no entries.
// With TTL, it reports whether All would produce an entry: expired entries
// it meets under NeverReturnExpired are removed; it refreshes no timestamp.
func (s *Map[K, N, UK, UV]) IsEmpty() bool {
	now := s.now()
	empty := true
	s.iterate(func(key []byte, _ UK, raw []byte) bool {
		if s.ttl.enabled && !s.ttl.returnExpired {
			if _, ts := s.decodeValue(raw); s.ttl.expired(ts, now) {
				s.del(key)
				return true
			}
		}
		empty = false
		return false
	})
	return empty
}

// Clear removes all entries of the current key and namespace.
func (s *Map[K, N, UK, UV]) Clear() {
	batch := s.b.db.NewBatch()
	defer batch.Close()
	s.iterate(func(key []byte, _ UK, _ []byte) bool {
		if err := batch.Delete(key); err != nil {
			panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
		}
		return true
	})
	if err := batch.Commit(); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
	}
}
