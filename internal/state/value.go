package state

import (
	"reflect"

	"github.com/weirstream/weir/state"
)

// purgeValue is the cleanup check of value-granularity state (value,
// reducing, aggregating): the whole cell is kept or dropped.
func purgeValue[S any](p *ttlParams, c *cell[S], now int64) bool {
	return !p.expired(c.ts, now)
}

// readTTL is the TTL read of value-granularity state (Flink's
// getWithTtlCheckAndUpdate): an expired value is removed, and returned only
// with ReturnExpiredIfNotCleanedUp; an unexpired value gets a new timestamp
// under UpdateOnReadAndWrite.
func (h *handle[K, N, S]) readTTL() (*cell[S], bool) {
	now := h.access()
	c := h.lookup()
	if c == nil {
		return nil, false
	}
	p := &h.t.ttl
	if p.expired(c.ts, now) {
		h.removeCurrent(c)
		return c, p.returnExpired
	}
	if p.updateOnRead || h.t.cow.copyOnRead {
		c = h.w(c)
	}
	if p.updateOnRead {
		c.ts = now
	}
	return c, true
}

// r returns c, the cell of the current key and namespace, for a read that
// hands out its value: a copy if the value type copies on reads (Copier)
// and a view may read c.
func (h *handle[K, N, S]) r(c *cell[S]) *cell[S] {
	if c.ver > h.t.cow.frozen {
		return c
	}
	return h.readCopy(c)
}

// readCopy is r's slow path.
//
//go:noinline
func (h *handle[K, N, S]) readCopy(c *cell[S]) *cell[S] {
	if h.t.cow.copyOnRead {
		return h.copyCell(c)
	}
	return c
}

// Value is a ValueState handle of a Backend for namespace type N.
type Value[K, N comparable, V any] struct {
	handle[K, N, V]
}

var _ state.ValueState[int] = (*Value[string, struct{}, int])(nil)

// GetValue returns a handle of the value state described by d, registering
// the state on first use. A state registered under the same name must be a
// value state of the same namespace and value types with the same TTL
// config.
func GetValue[K comparable, N comparable, V any](b *Backend[K], d state.ValueDescriptor[V]) (*Value[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	t, err := register[K, N, V](b, d.Name, kindValue,
		[]reflect.Type{typeOf[N](), typeOf[V]()}, d.TTL, purgeValue[V], valueCells[V]{codecOr(d.Codec)}, valueCOW[V]())
	if err != nil {
		return nil, err
	}
	return &Value[K, N, V]{handle[K, N, V]{b: b, t: t}}, nil
}

// Value returns the value of the current key and namespace, or the zero V
// and false.
func (s *Value[K, N, V]) Value() (V, bool) {
	if s.t.ttl.enabled {
		return s.valueTTL()
	}
	if c := s.lookup(); c != nil {
		c = s.r(c)
		return c.v, true
	}
	var zero V
	return zero, false
}

func (s *Value[K, N, V]) valueTTL() (V, bool) {
	c, ok := s.readTTL()
	if !ok {
		var zero V
		return zero, false
	}
	return c.v, true
}

// Update stores v for the current key and namespace.
func (s *Value[K, N, V]) Update(v V) {
	if s.t.ttl.enabled {
		s.updateTTL(v)
		return
	}
	if c := s.lookup(); c != nil {
		c = s.w(c)
		c.v = v
		return
	}
	s.create(v, 0)
}

func (s *Value[K, N, V]) updateTTL(v V) {
	now := s.access()
	if c := s.lookup(); c != nil {
		c = s.w(c)
		c.v, c.ts = v, now
		return
	}
	s.create(v, now)
}

// Clear removes the value of the current key and namespace.
func (s *Value[K, N, V]) Clear() {
	if s.t.ttl.enabled {
		s.access()
	}
	s.clear()
}

// Reducing is a ReducingState handle of a Backend for namespace type N.
type Reducing[K, N comparable, V any] struct {
	handle[K, N, V]
	reduce func(a, b V) V
}

var _ state.ReducingState[int] = (*Reducing[string, struct{}, int])(nil)

// GetReducing returns a handle of the reducing state described by d,
// registering the state on first use. The handle folds with d.Reduce.
func GetReducing[K comparable, N comparable, V any](b *Backend[K], d state.ReducingDescriptor[V]) (*Reducing[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	t, err := register[K, N, V](b, d.Name, kindReducing,
		[]reflect.Type{typeOf[N](), typeOf[V]()}, d.TTL, purgeValue[V], valueCells[V]{codecOr(d.Codec)}, valueCOW[V]())
	if err != nil {
		return nil, err
	}
	return &Reducing[K, N, V]{handle: handle[K, N, V]{b: b, t: t}, reduce: d.Reduce}, nil
}

// Get returns the folded value of the current key and namespace, or the
// zero V and false.
func (s *Reducing[K, N, V]) Get() (V, bool) {
	if s.t.ttl.enabled {
		if c, ok := s.readTTL(); ok {
			return c.v, true
		}
	} else if c := s.lookup(); c != nil {
		return s.r(c).v, true
	}
	var zero V
	return zero, false
}

// Add folds v into the value of the current key and namespace as
// reduce(stored, v); the first value is stored as is. With TTL, a stored
// value that has expired (and is not returned by the visibility) is
// replaced by v, as Flink's TtlReduceFunction.
func (s *Reducing[K, N, V]) Add(v V) {
	if !s.t.ttl.enabled {
		if c := s.lookup(); c != nil {
			c = s.w(c)
			c.v = s.reduce(c.v, v)
			return
		}
		s.create(v, 0)
		return
	}
	now := s.access()
	c := s.lookup()
	if c == nil {
		s.create(v, now)
		return
	}
	c = s.w(c)
	if s.t.ttl.usable(c.ts, now) {
		c.v = s.reduce(c.v, v)
	} else {
		c.v = v
	}
	c.ts = now
}

// Clear removes the value of the current key and namespace.
func (s *Reducing[K, N, V]) Clear() {
	if s.t.ttl.enabled {
		s.access()
	}
	s.clear()
}

// MergeNamespaces folds the state of the sources into target and removes
// the sources, for the current key, as Flink's mergeNamespaces: the sources
// are reduced in order, and the result is reduced into target's value as
// reduce(target, merged). With TTL, expired parts are skipped and the
// result gets the current time, as Flink's TtlReduceFunction.
func (s *Reducing[K, N, V]) MergeNamespaces(target N, sources []N) {
	if len(sources) == 0 {
		return
	}
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	mergeValueCells(&s.handle, target, sources, now, s.reduce)
}

// mergeValueCells implements mergeNamespaces for value-granularity state
// with the binary merge function f (reduce, or accumulator merge).
func mergeValueCells[K, N comparable, S any](h *handle[K, N, S], target N, sources []N, now int64, f func(a, b S) S) {
	var merged cell[S]
	have := false
	for _, ns := range sources {
		c := h.take(ns)
		if c == nil {
			continue
		}
		if !have {
			merged.v, merged.ts, have = c.v, c.ts, true
			continue
		}
		merged.v, merged.ts, have = combine(&h.t.ttl, merged.v, merged.ts, c.v, c.ts, now, f)
	}
	if !have {
		return
	}
	if c := h.peek(target); c != nil {
		v, ts, ok := combine(&h.t.ttl, c.v, c.ts, merged.v, merged.ts, now, f)
		if !ok {
			h.take(target)
			return
		}
		c = h.wns(target, c)
		c.v, c.ts = v, ts
		return
	}
	h.put(target, &cell[S]{v: merged.v, ts: merged.ts})
}

// combine merges a and b with f. With TTL it follows Flink's
// TtlReduceFunction / TtlAggregateFunction.merge: unusable (expired) sides
// are dropped, the result has timestamp now, and ok is false when both sides
// are unusable.
func combine[S any](p *ttlParams, a S, ats int64, b S, bts int64, now int64, f func(a, b S) S) (S, int64, bool) {
	if !p.enabled {
		return f(a, b), 0, true
	}
	au, bu := p.usable(ats, now), p.usable(bts, now)
	switch {
	case au && bu:
		return f(a, b), now, true
	case au:
		return a, now, true
	case bu:
		return b, now, true
	default:
		var zero S
		return zero, 0, false
	}
}

// Aggregating is an AggregatingState handle of a Backend for namespace type
// N.
type Aggregating[K, N comparable, IN, ACC, OUT any] struct {
	handle[K, N, ACC]
	fn state.AggregateFunction[IN, ACC, OUT]
}

var _ state.AggregatingState[int, int] = (*Aggregating[string, struct{}, int, int, int])(nil)

// GetAggregating returns a handle of the aggregating state described by d,
// registering the state on first use. The handle aggregates with
// d.Function.
func GetAggregating[K comparable, N comparable, IN, ACC, OUT any](b *Backend[K],
	d state.AggregatingDescriptor[IN, ACC, OUT]) (*Aggregating[K, N, IN, ACC, OUT], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	t, err := register[K, N, ACC](b, d.Name, kindAggregating,
		[]reflect.Type{typeOf[N](), typeOf[IN](), typeOf[ACC](), typeOf[OUT]()}, d.TTL, purgeValue[ACC], valueCells[ACC]{codecOr(d.Codec)}, valueCOW[ACC]())
	if err != nil {
		return nil, err
	}
	return &Aggregating[K, N, IN, ACC, OUT]{handle: handle[K, N, ACC]{b: b, t: t}, fn: d.Function}, nil
}

// Get returns GetResult of the accumulator of the current key and
// namespace, or the zero OUT and false when there is no accumulator.
func (s *Aggregating[K, N, IN, ACC, OUT]) Get() (OUT, bool) {
	if s.t.ttl.enabled {
		if c, ok := s.readTTL(); ok {
			return s.fn.GetResult(c.v), true
		}
	} else if c := s.lookup(); c != nil {
		return s.fn.GetResult(s.r(c).v), true
	}
	var zero OUT
	return zero, false
}

// Add adds v to the accumulator of the current key and namespace, creating
// it with CreateAccumulator if there is none (or, with TTL, if it has
// expired and is not returned by the visibility).
func (s *Aggregating[K, N, IN, ACC, OUT]) Add(v IN) {
	if !s.t.ttl.enabled {
		if c := s.lookup(); c != nil {
			c = s.w(c)
			c.v = s.fn.Add(v, c.v)
			return
		}
		s.create(s.fn.Add(v, s.fn.CreateAccumulator()), 0)
		return
	}
	now := s.access()
	c := s.lookup()
	if c == nil {
		s.create(s.fn.Add(v, s.fn.CreateAccumulator()), now)
		return
	}
	c = s.w(c)
	if s.t.ttl.usable(c.ts, now) {
		c.v = s.fn.Add(v, c.v)
	} else {
		c.v = s.fn.Add(v, s.fn.CreateAccumulator())
	}
	c.ts = now
}

// Clear removes the accumulator of the current key and namespace.
func (s *Aggregating[K, N, IN, ACC, OUT]) Clear() {
	if s.t.ttl.enabled {
		s.access()
	}
	s.clear()
}

// MergeNamespaces merges the accumulators of the sources into target's and
// removes the sources, for the current key, as Flink's mergeNamespaces:
// the sources are merged in order with Merge, and the result is merged into
// target's accumulator as Merge(target, merged). With TTL, expired
// accumulators are skipped and the result gets the current time.
func (s *Aggregating[K, N, IN, ACC, OUT]) MergeNamespaces(target N, sources []N) {
	if len(sources) == 0 {
		return
	}
	var now int64
	if s.t.ttl.enabled {
		now = s.access()
	}
	mergeValueCells(&s.handle, target, sources, now, s.fn.Merge)
}
