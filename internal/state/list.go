package state

import (
	"iter"
	"reflect"
	"slices"

	"github.com/weirstream/weir/state"
)

// listData is a stored list. With TTL, ts holds the last-access timestamp
// of each element (Flink's per-element TTL); without TTL it is nil.
//
// The elements visible through a slice handed out by a read are never
// overwritten: writes append beyond them, and updates and TTL compaction
// build new slices.
type listData[V any] struct {
	vals []V
	ts   []int64
}

// purgeList drops the expired elements of a list; it reports whether any
// element is left.
func purgeList[V any](p *ttlParams, c *cell[listData[V]], now int64) bool {
	d := &c.v
	first := firstExpired(p, d.ts, now)
	if first < 0 {
		return true
	}
	vals, ts := keepUnexpired(p, d, first, now)
	if len(vals) == 0 {
		return false
	}
	d.vals, d.ts = vals, ts
	return true
}

func firstExpired(p *ttlParams, ts []int64, now int64) int {
	for i, t := range ts {
		if p.expired(t, now) {
			return i
		}
	}
	return -1
}

// keepUnexpired returns new slices with the unexpired elements of d, whose
// element first is the first expired one.
func keepUnexpired[V any](p *ttlParams, d *listData[V], first int, now int64) ([]V, []int64) {
	n := 0
	for _, t := range d.ts[first+1:] {
		if !p.expired(t, now) {
			n++
		}
	}
	n += first
	if n == 0 {
		return nil, nil
	}
	vals := make([]V, 0, n)
	ts := make([]int64, 0, n)
	vals = append(vals, d.vals[:first]...)
	ts = append(ts, d.ts[:first]...)
	for i := first + 1; i < len(d.vals); i++ {
		if !p.expired(d.ts[i], now) {
			vals = append(vals, d.vals[i])
			ts = append(ts, d.ts[i])
		}
	}
	return vals, ts
}

// List is a ListState handle of a Backend for namespace type N.
//
// With TTL, each element has its own timestamp. A read drops the expired
// elements from the stored list (and the whole entry when none is left);
// under ReturnExpiredIfNotCleanedUp that read still returns them, so an
// expired element is returned at most once. (Flink's TtlListState keeps a
// partly expired list as it is and, under ReturnExpiredIfNotCleanedUp,
// returns its expired elements again until the whole list has expired or
// cleanup has run; returning them once is within that visibility's
// contract and matches value state.)
type List[K, N comparable, V any] struct {
	handle[K, N, listData[V]]
}

var _ state.ListState[int] = (*List[string, struct{}, int])(nil)

// GetList returns a handle of the list state described by d, registering
// the state on first use. A state registered under the same name must be a
// list state of the same namespace and element types with the same TTL
// config.
func GetList[K comparable, N comparable, V any](b *Backend[K], d state.ListDescriptor[V]) (*List[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	t, err := register[K, N, listData[V]](b, d.Name, kindList,
		[]reflect.Type{typeOf[N](), typeOf[V]()}, d.TTL, purgeList[V],
		listCells[V]{c: codecOr(d.Codec), zeroSize: zeroSize[V]()},
		cowState[listData[V]]{plain: isPlain(typeOf[V]()), copy: copyList[V], purgeWrites: true, stale: staleList[V]})
	if err != nil {
		return nil, err
	}
	return &List[K, N, V]{handle[K, N, listData[V]]{b: b, t: t}}, nil
}

// view returns the visible elements of the current key and namespace. The
// caller must not modify the returned slice.
func (s *List[K, N, V]) view() []V {
	if !s.t.ttl.enabled {
		if c := s.lookup(); c != nil {
			return c.v.vals
		}
		return nil
	}
	now := s.access()
	c := s.lookup()
	if c == nil {
		return nil
	}
	p := &s.t.ttl
	first := firstExpired(p, c.v.ts, now)
	if first >= 0 || p.updateOnRead {
		c = s.w(c)
	}
	d := &c.v
	if first < 0 {
		if p.updateOnRead {
			for i := range d.ts {
				d.ts[i] = now
			}
		}
		return d.vals
	}
	// Some elements expired: drop them now (lazy cleanup). With
	// ReturnExpiredIfNotCleanedUp this read still returns them, once.
	old := d.vals
	vals, ts := keepUnexpired(p, d, first, now)
	if len(vals) == 0 {
		s.removeCurrent(c)
	} else {
		if p.updateOnRead {
			for i := range ts {
				ts[i] = now
			}
		}
		d.vals, d.ts = vals, ts
	}
	if p.returnExpired {
		return old
	}
	return vals
}

// Get returns a copy of the list of the current key and namespace; it is
// empty, not nil, when no list is stored.
func (s *List[K, N, V]) Get() []V {
	v := s.view()
	out := make([]V, len(v))
	copy(out, v)
	return out
}

// All iterates over the list of the current key and namespace as it is when
// the iteration starts.
func (s *List[K, N, V]) All() iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range s.view() {
			if !yield(v) {
				return
			}
		}
	}
}

// Add appends v to the list of the current key and namespace.
func (s *List[K, N, V]) Add(v V) {
	if !s.t.ttl.enabled {
		if c := s.lookup(); c != nil {
			c = s.w(c)
			c.v.vals = append(c.v.vals, v)
			return
		}
		s.create(listData[V]{vals: []V{v}}, 0)
		return
	}
	now := s.access()
	if c := s.lookup(); c != nil {
		c = s.w(c)
		c.v.vals = append(c.v.vals, v)
		c.v.ts = append(c.v.ts, now)
		return
	}
	s.create(listData[V]{vals: []V{v}, ts: []int64{now}}, 0)
}

// AddAll appends vs, in order, to the list of the current key and
// namespace. An empty vs changes nothing.
func (s *List[K, N, V]) AddAll(vs []V) {
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	if len(vs) == 0 {
		return
	}
	c := s.lookup()
	if c == nil {
		s.create(s.newData(vs, now), 0)
		return
	}
	c = s.w(c)
	c.v.vals = append(c.v.vals, vs...)
	if s.t.ttl.enabled {
		for range vs {
			c.v.ts = append(c.v.ts, now)
		}
	}
}

// Update replaces the list of the current key and namespace with a copy of
// vs. An empty vs clears the state.
func (s *List[K, N, V]) Update(vs []V) {
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	if len(vs) == 0 {
		s.clear()
		return
	}
	d := s.newData(vs, now)
	if c := s.lookup(); c != nil {
		c = s.w(c)
		c.v = d
		return
	}
	s.create(d, 0)
}

func (s *List[K, N, V]) newData(vs []V, now int64) listData[V] {
	d := listData[V]{vals: make([]V, len(vs))}
	copy(d.vals, vs)
	if s.t.ttl.enabled {
		d.ts = make([]int64, len(vs))
		for i := range d.ts {
			d.ts[i] = now
		}
	}
	return d
}

// Clear removes the list of the current key and namespace.
func (s *List[K, N, V]) Clear() {
	if s.t.ttl.enabled {
		s.access()
	}
	s.clear()
}

// MergeNamespaces appends the lists of the sources, in order, to the list
// of target and removes the sources, for the current key, as Flink's
// mergeNamespaces. With TTL the elements keep their timestamps.
func (s *List[K, N, V]) MergeNamespaces(target N, sources []N) {
	if len(sources) == 0 {
		return
	}
	if s.t.ttl.enabled {
		s.access()
	}
	var merged listData[V]
	have := false
	for _, ns := range sources {
		c := s.take(ns)
		if c == nil {
			continue
		}
		if !have {
			// The elements are shared with c, which a view may read: only
			// appends beyond its length follow, but the TTL timestamps
			// would be updated in place, so they are copied.
			merged, have = listData[V]{vals: c.v.vals, ts: slices.Clone(c.v.ts)}, true
			continue
		}
		merged.vals = append(merged.vals, c.v.vals...)
		if s.t.ttl.enabled {
			merged.ts = append(merged.ts, c.v.ts...)
		}
	}
	if !have {
		return
	}
	if c := s.peek(target); c != nil {
		c = s.wns(target, c)
		c.v.vals = append(c.v.vals, merged.vals...)
		if s.t.ttl.enabled {
			c.v.ts = append(c.v.ts, merged.ts...)
		}
		return
	}
	s.put(target, &cell[listData[V]]{v: merged})
}
