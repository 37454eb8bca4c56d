package kvstate

import (
	"encoding/binary"
	"fmt"
	"reflect"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// handle is the part common to all typed state handles: the registration,
// the current namespace and buffers for keys and values.
type handle[K, N comparable] struct {
	b     *Backend[K]
	r     *registration
	ttl   ttlParams
	nc    state.Codec[N]
	ns    N
	nsBuf []byte
	kbuf  []byte
	vbuf  []byte
	wbuf  []byte
}

func newHandle[K, N comparable](b *Backend[K], r *registration) handle[K, N] {
	h := handle[K, N]{b: b, r: r, ttl: newTTLParams(r.ttl), nc: istate.DefaultCodec[N]()}
	var zero N
	h.SetNamespace(zero)
	return h
}

// SetNamespace sets the namespace that the handle reads and writes; the
// default is the zero N.
func (h *handle[K, N]) SetNamespace(ns N) {
	buf, err := h.nc.Append(h.nsBuf[:0], ns)
	if err != nil {
		panic(fmt.Errorf("kvstate: encoding namespace: %w", err))
	}
	h.ns, h.nsBuf = ns, buf
}

// Namespace returns the handle's current namespace.
func (h *handle[K, N]) Namespace() N { return h.ns }

// dbKey returns the key of the current key and namespace: key group, state
// id, key, namespace. The slice is reused by the next call.
func (h *handle[K, N]) dbKey() []byte {
	b := h.b
	if !b.keySet {
		panic("kvstate: state accessed before SetCurrentKey")
	}
	k := appendPrefix(h.kbuf[:0], b.kg, h.r.id)
	k = append(k, b.keyBuf...)
	h.kbuf = append(k, h.nsBuf...)
	return h.kbuf
}

// get returns a copy of the value stored under key (valid until the next
// get), or false.
func (h *handle[K, N]) get(key []byte) ([]byte, bool) {
	v, found, err := h.b.db.Get(h.vbuf[:0], key)
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", h.r.name, err))
	}
	if !found {
		return nil, false
	}
	h.vbuf = v
	return v, true
}

func (h *handle[K, N]) set(key, v []byte) {
	if err := h.b.db.Set(key, v); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", h.r.name, err))
	}
}

func (h *handle[K, N]) del(key []byte) {
	if err := h.b.db.Delete(key); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", h.r.name, err))
	}
}

func (h *handle[K, N]) now() int64 {
	if h.ttl.enabled {
		return h.b.clk.NowMillis()
	}
	return 0
}

// Clear removes the state of the current key and namespace.
func (h *handle[K, N]) Clear() { h.del(h.dbKey()) }

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

func codecOr[T any](c state.Codec[T]) state.Codec[T] {
	if c != nil {
		return c
	}
	return istate.DefaultCodec[T]()
}

// cellHandle is a handle of value-granularity state (value, reducing,
// aggregating): one stored S per key and namespace, as [ts] S.
type cellHandle[K, N comparable, S any] struct {
	handle[K, N]
	c state.Codec[S]
}

// load decodes the value stored under key.
func (h *cellHandle[K, N, S]) load(key []byte) (v S, ts int64, found bool) {
	raw, ok := h.get(key)
	if !ok {
		return v, 0, false
	}
	var err error
	if h.r.ts {
		if ts, raw, err = istate.ReadVarint(raw); err != nil {
			panic(fmt.Errorf("kvstate: state %q: timestamp: %w", h.r.name, err))
		}
	}
	if v, _, err = h.c.Decode(raw); err != nil {
		panic(fmt.Errorf("kvstate: state %q: decoding: %w", h.r.name, err))
	}
	return v, ts, true
}

// store writes v with timestamp ts under key.
func (h *cellHandle[K, N, S]) store(key []byte, v S, ts int64) {
	w := h.wbuf[:0]
	if h.r.ts {
		w = binary.AppendVarint(w, ts)
	}
	w, err := h.c.Append(w, v)
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: encoding: %w", h.r.name, err))
	}
	h.wbuf = w
	h.set(key, w)
}

// read is the read of value-granularity state with Flink's TTL semantics
// (getWithTtlCheckAndUpdate): an expired value is removed and returned
// only with ReturnExpiredIfNotCleanedUp; an unexpired one gets a new
// timestamp under UpdateOnReadAndWrite.
func (h *cellHandle[K, N, S]) read() (S, bool) {
	key := h.dbKey()
	v, ts, found := h.load(key)
	var zero S
	if !found {
		return zero, false
	}
	if !h.ttl.enabled {
		return v, true
	}
	now := h.b.clk.NowMillis()
	if h.ttl.expired(ts, now) {
		h.del(key)
		if h.ttl.returnExpired {
			return v, true
		}
		return zero, false
	}
	if h.ttl.updateOnRead {
		h.store(key, v, now)
	}
	return v, true
}

// fold implements Add of reducing and aggregating state: f(stored) when a
// usable value is stored, else f of nothing (first), written with the
// current time.
func (h *cellHandle[K, N, S]) fold(first func() S, f func(S) S) {
	key := h.dbKey()
	v, ts, found := h.load(key)
	now := h.now()
	if !found || (h.ttl.enabled && !h.ttl.usable(ts, now)) {
		h.store(key, first(), now)
		return
	}
	h.store(key, f(v), now)
}

func register[K comparable](b *Backend[K], name string, kind byte, goTypes []reflect.Type, stored storedTypes,
	ttl state.TTLConfig, sk skippers) (*registration, error) {
	return b.register(name, kind, goTypes, stored, ttl, sk)
}

// storedTypes describes the types a state stores (FORMAT.md of
// internal/state): their names, as version 1 of the snapshot format
// recorded them, their schemas, as version 2 does, and how to read
// entries stored under other schemas of the values.
type storedTypes struct {
	names, schemas []string
	// resolve returns transcoders of values stored under the old value
	// schemas (after the namespace's) into the codecs' current encoding,
	// or the index of the one that cannot be read and the error.
	resolve func(old []string) (any, int, error)
}

// transcoders rewrite stored values from an older schema into the
// current encoding: each reads one value from the front of src and
// appends its current encoding to dst. nil ones copy.
type transcoders struct {
	value func(src, dst []byte) ([]byte, []byte, error)
	mkey  func(src, dst []byte) ([]byte, []byte, error)
}

// transcoder returns a transcoder from what r reads to what w writes, or
// nil if r is w (the encoding is the same).
func transcoder[T any](r, w state.Codec[T]) func(src, dst []byte) ([]byte, []byte, error) {
	if any(r) == any(w) {
		return nil
	}
	return func(src, dst []byte) ([]byte, []byte, error) {
		v, rest, err := r.Decode(src)
		if err != nil {
			return src, dst, err
		}
		dst, err = w.Append(dst, v)
		return rest, dst, err
	}
}

// valueTypes describes a state with namespace N storing one type V with
// codec vc (value, reducing, aggregating and list state).
func valueTypes[N, V any](vc state.Codec[V]) storedTypes {
	return storedTypes{
		names:   []string{typeName[N](), typeName[V]()},
		schemas: []string{istate.SchemaOf(istate.DefaultCodec[N]()), istate.SchemaOf(vc)},
		resolve: func(old []string) (any, int, error) {
			r, err := istate.ReaderFor(vc, old[0])
			if err != nil {
				return nil, 0, err
			}
			return &transcoders{value: transcoder(r, vc)}, 0, nil
		},
	}
}

// Value is a ValueState handle of a Backend for namespace type N.
type Value[K, N comparable, V any] struct {
	cellHandle[K, N, V]
}

var _ state.ValueState[int] = (*Value[string, struct{}, int])(nil)

// GetValue returns a handle of the value state described by d, registering
// the state on first use. A state registered under the same name must be a
// value state of the same namespace and value types with the same TTL
// config.
func GetValue[K, N comparable, V any](b *Backend[K], d state.ValueDescriptor[V]) (*Value[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	vc := codecOr(d.Codec)
	r, err := register(b, d.Name, istate.KindValue, []reflect.Type{reflect.TypeFor[N](), reflect.TypeFor[V]()},
		valueTypes[N](vc), d.TTL,
		skippers{ns: skipperOf(istate.DefaultCodec[N]()), value: skipperOf(vc)})
	if err != nil {
		return nil, err
	}
	return &Value[K, N, V]{cellHandle[K, N, V]{handle: newHandle[K, N](b, r), c: vc}}, nil
}

// Value returns the value of the current key and namespace, or the zero V
// and false.
func (s *Value[K, N, V]) Value() (V, bool) { return s.read() }

// Update stores v for the current key and namespace.
func (s *Value[K, N, V]) Update(v V) { s.store(s.dbKey(), v, s.now()) }

// Reducing is a ReducingState handle of a Backend for namespace type N.
type Reducing[K, N comparable, V any] struct {
	cellHandle[K, N, V]
	reduce func(a, b V) V
}

var _ state.ReducingState[int] = (*Reducing[string, struct{}, int])(nil)

// GetReducing returns a handle of the reducing state described by d,
// registering the state on first use. The handle folds with d.Reduce.
func GetReducing[K, N comparable, V any](b *Backend[K], d state.ReducingDescriptor[V]) (*Reducing[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	vc := codecOr(d.Codec)
	r, err := register(b, d.Name, istate.KindReducing, []reflect.Type{reflect.TypeFor[N](), reflect.TypeFor[V]()},
		valueTypes[N](vc), d.TTL,
		skippers{ns: skipperOf(istate.DefaultCodec[N]()), value: skipperOf(vc)})
	if err != nil {
		return nil, err
	}
	return &Reducing[K, N, V]{cellHandle: cellHandle[K, N, V]{handle: newHandle[K, N](b, r), c: vc}, reduce: d.Reduce}, nil
}

// Get returns the folded value of the current key and namespace, or the
// zero V and false.
func (s *Reducing[K, N, V]) Get() (V, bool) { return s.read() }

// Add folds v into the value of the current key and namespace as
// reduce(stored, v); the first value is stored as is. With TTL, a stored
// value that has expired (and is not returned by the visibility) is
// replaced by v, as Flink's TtlReduceFunction.
func (s *Reducing[K, N, V]) Add(v V) {
	s.fold(func() V { return v }, func(old V) V { return s.reduce(old, v) })
}

// Aggregating is an AggregatingState handle of a Backend for namespace type
// N.
type Aggregating[K, N comparable, IN, ACC, OUT any] struct {
	cellHandle[K, N, ACC]
	fn state.AggregateFunction[IN, ACC, OUT]
}

var _ state.AggregatingState[int, int] = (*Aggregating[string, struct{}, int, int, int])(nil)

// GetAggregating returns a handle of the aggregating state described by d,
// registering the state on first use. The handle aggregates with
// d.Function.
func GetAggregating[K, N comparable, IN, ACC, OUT any](b *Backend[K],
	d state.AggregatingDescriptor[IN, ACC, OUT]) (*Aggregating[K, N, IN, ACC, OUT], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	ac := codecOr(d.Codec)
	r, err := register(b, d.Name, istate.KindAggregating,
		[]reflect.Type{reflect.TypeFor[N](), reflect.TypeFor[IN](), reflect.TypeFor[ACC](), reflect.TypeFor[OUT]()},
		valueTypes[N](ac), d.TTL,
		skippers{ns: skipperOf(istate.DefaultCodec[N]()), value: skipperOf(ac)})
	if err != nil {
		return nil, err
	}
	return &Aggregating[K, N, IN, ACC, OUT]{cellHandle: cellHandle[K, N, ACC]{handle: newHandle[K, N](b, r), c: ac}, fn: d.Function}, nil
}

// Get returns GetResult of the accumulator of the current key and
// namespace, or the zero OUT and false when there is no accumulator.
func (s *Aggregating[K, N, IN, ACC, OUT]) Get() (OUT, bool) {
	acc, ok := s.read()
	if !ok {
		var zero OUT
		return zero, false
	}
	return s.fn.GetResult(acc), true
}

// Add adds v to the accumulator of the current key and namespace, creating
// it with CreateAccumulator if there is none (or, with TTL, if it has
// expired and is not returned by the visibility).
func (s *Aggregating[K, N, IN, ACC, OUT]) Add(v IN) {
	s.fold(func() ACC { return s.fn.Add(v, s.fn.CreateAccumulator()) },
		func(acc ACC) ACC { return s.fn.Add(v, acc) })
}
