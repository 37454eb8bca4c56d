package state

import (
	"iter"
	"reflect"

	"github.com/weirstream/weir/state"
)

// mapEntry is a stored map value with its last-access timestamp (used only
// with TTL; Flink's per-entry TTL).
type mapEntry[V any] struct {
	v  V
	ts int64
}

// purgeMap drops the expired entries of a map; it reports whether any entry
// is left.
func purgeMap[UK comparable, UV any](p *ttlParams, c *cell[map[UK]mapEntry[UV]], now int64) bool {
	for k, e := range c.v {
		if p.expired(e.ts, now) {
			delete(c.v, k)
		}
	}
	return len(c.v) > 0
}

// Map is a MapState handle of a Backend for namespace type N. A stored map
// is never empty: removing its last entry removes the state, as in Flink's
// heap backend.
type Map[K, N comparable, UK comparable, UV any] struct {
	handle[K, N, map[UK]mapEntry[UV]]
}

var _ state.MapState[int, int] = (*Map[string, struct{}, int, int])(nil)

// GetMap returns a handle of the map state described by d, registering the
// state on first use. A state registered under the same name must be a map
// state of the same namespace, key and value types with the same TTL
// config.
func GetMap[K comparable, N comparable, UK comparable, UV any](b *Backend[K], d state.MapDescriptor[UK, UV]) (*Map[K, N, UK, UV], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	t, err := register[K, N, map[UK]mapEntry[UV]](b, d.Name, kindMap,
		[]reflect.Type{typeOf[N](), typeOf[UK](), typeOf[UV]()}, d.TTL, purgeMap[UK, UV],
		mapCells[UK, UV]{kc: codecOr(d.KeyCodec), vc: codecOr(d.Codec), zeroSize: zeroSize[UK]()},
		cowState[map[UK]mapEntry[UV]]{plain: isPlain(typeOf[UK]()) && isPlain(typeOf[UV]()),
			copy: copyMap[UK, UV], purgeWrites: true, stale: staleMap[UK, UV]})
	if err != nil {
		return nil, err
	}
	return &Map[K, N, UK, UV]{handle[K, N, map[UK]mapEntry[UV]]{b: b, t: t}}, nil
}

// Get returns the value stored under k for the current key and namespace,
// or the zero UV and false.
func (s *Map[K, N, UK, UV]) Get(k UK) (UV, bool) {
	if s.t.ttl.enabled {
		return s.getTTL(k)
	}
	if c := s.lookup(); c != nil {
		e, ok := c.v[k]
		return e.v, ok
	}
	var zero UV
	return zero, false
}

// getTTL is Get with TTL, as Flink's TtlMapState.get.
func (s *Map[K, N, UK, UV]) getTTL(k UK) (UV, bool) {
	var zero UV
	now := s.access()
	c := s.lookup()
	if c == nil {
		return zero, false
	}
	e, ok := c.v[k]
	if !ok {
		return zero, false
	}
	p := &s.t.ttl
	if p.expired(e.ts, now) || p.updateOnRead {
		c = s.w(c)
	}
	if p.expired(e.ts, now) {
		delete(c.v, k)
		if len(c.v) == 0 {
			s.removeCurrent(c)
		}
		if p.returnExpired {
			return e.v, true
		}
		return zero, false
	}
	if p.updateOnRead {
		c.v[k] = mapEntry[UV]{v: e.v, ts: now}
	}
	return e.v, true
}

// Put stores v under k for the current key and namespace.
func (s *Map[K, N, UK, UV]) Put(k UK, v UV) {
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	c := s.lookup()
	if c == nil {
		c = s.create(make(map[UK]mapEntry[UV]), 0)
	} else {
		c = s.w(c)
	}
	c.v[k] = mapEntry[UV]{v: v, ts: now}
}

// PutAll stores every entry of m for the current key and namespace.
func (s *Map[K, N, UK, UV]) PutAll(m map[UK]UV) {
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	if len(m) == 0 {
		return
	}
	c := s.lookup()
	if c == nil {
		c = s.create(make(map[UK]mapEntry[UV], len(m)), 0)
	} else {
		c = s.w(c)
	}
	for k, v := range m {
		c.v[k] = mapEntry[UV]{v: v, ts: now}
	}
}

// Remove removes the entry of k for the current key and namespace.
func (s *Map[K, N, UK, UV]) Remove(k UK) {
	if s.t.ttl.enabled {
		s.access()
	}
	c := s.lookup()
	if c == nil {
		return
	}
	if _, ok := c.v[k]; !ok {
		return
	}
	c = s.w(c)
	delete(c.v, k)
	if len(c.v) == 0 {
		s.removeCurrent(c)
	}
}

// Contains reports whether an entry of k is stored for the current key and
// namespace. With TTL it is a read of the entry (Flink's contains is
// get != null), with the same expiry and update effects as Get.
func (s *Map[K, N, UK, UV]) Contains(k UK) bool {
	if s.t.ttl.enabled {
		_, ok := s.getTTL(k)
		return ok
	}
	if c := s.lookup(); c != nil {
		_, ok := c.v[k]
		return ok
	}
	return false
}

// All iterates over the entries of the current key and namespace, in
// unspecified order. The state is looked up when the iteration starts; the
// loop body may modify it. With TTL each entry is read as by Get: expired
// entries are removed (and produced only with ReturnExpiredIfNotCleanedUp),
// and under UpdateOnReadAndWrite produced entries get a new timestamp.
func (s *Map[K, N, UK, UV]) All() iter.Seq2[UK, UV] {
	return s.entries
}

func (s *Map[K, N, UK, UV]) entries(yield func(UK, UV) bool) {
	if !s.t.ttl.enabled {
		c := s.lookup()
		if c == nil {
			return
		}
		for k, e := range c.v {
			if !yield(k, e.v) {
				return
			}
		}
		return
	}
	now := s.access()
	c := s.lookup()
	if c == nil {
		return
	}
	p := &s.t.ttl
	c = s.w(c)
	idx, ek := s.b.idx, entryKey[K, N]{s.ns, s.b.key}
	m := c.v
	for k, e := range m {
		if p.expired(e.ts, now) {
			delete(m, k)
			if len(m) == 0 {
				s.t.removeCell(idx, s.t.hash(s.b.kh, ek.ns), ek, c)
			}
			if !p.returnExpired {
				continue
			}
		} else if p.updateOnRead {
			m[k] = mapEntry[UV]{v: e.v, ts: now}
		}
		if !yield(k, e.v) {
			return
		}
	}
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
	if !s.t.ttl.enabled {
		c := s.lookup()
		return c == nil || len(c.v) == 0
	}
	now := s.access()
	c := s.lookup()
	if c == nil {
		return true
	}
	p := &s.t.ttl
	if p.returnExpired {
		return len(c.v) == 0
	}
	c = s.w(c)
	for k, e := range c.v {
		if !p.expired(e.ts, now) {
			return false
		}
		delete(c.v, k)
	}
	s.removeCurrent(c)
	return true
}

// Clear removes all entries of the current key and namespace.
func (s *Map[K, N, UK, UV]) Clear() {
	if s.t.ttl.enabled {
		s.access()
	}
	s.clear()
}
