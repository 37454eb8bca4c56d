package kvstate

import (
	"encoding/binary"
	"fmt"
	"iter"
	"reflect"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// List is a ListState handle of a Backend for namespace type N.
//
// A list is stored under one key as a sequence of chunks, each
// uvarint(n) uvarint(len) and len bytes of n elements ([ts] element); Add
// and AddAll append a chunk with the store's Merge (concatenation),
// without reading the list. With TTL, each element has its own timestamp
// and a read drops the expired elements as the heap backend's List does.
type List[K, N comparable, V any] struct {
	handle[K, N]
	c state.Codec[V]
}

var _ state.ListState[int] = (*List[string, struct{}, int])(nil)

// GetList returns a handle of the list state described by d, registering
// the state on first use. A state registered under the same name must be a
// list state of the same namespace and element types with the same TTL
// config.
func GetList[K, N comparable, V any](b *Backend[K], d state.ListDescriptor[V]) (*List[K, N, V], error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	vc := codecOr(d.Codec)
	r, err := register(b, d.Name, istate.KindList, []reflect.Type{reflect.TypeFor[N](), reflect.TypeFor[V]()},
		valueTypes[N](vc), d.TTL,
		skippers{ns: skipperOf(istate.DefaultCodec[N]()), value: skipperOf(vc)})
	if err != nil {
		return nil, err
	}
	return &List[K, N, V]{handle: newHandle[K, N](b, r), c: vc}, nil
}

// chunk encodes vs, each with timestamp now when the state has TTL, as one
// chunk.
func (s *List[K, N, V]) chunk(vs []V, now int64) []byte {
	var body []byte
	var err error
	for _, v := range vs {
		if s.r.ts {
			body = binary.AppendVarint(body, now)
		}
		if body, err = s.c.Append(body, v); err != nil {
			panic(fmt.Errorf("kvstate: state %q: encoding: %w", s.r.name, err))
		}
	}
	return appendChunk(s.wbuf[:0], len(vs), body)
}

func appendChunk(dst []byte, n int, body []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// load decodes the list stored under key: values and, with TTL, their
// timestamps.
func (s *List[K, N, V]) load(key []byte) (vals []V, ts []int64) {
	raw, ok := s.get(key)
	if !ok {
		return nil, nil
	}
	err := forChunks(raw, func(n uint64, body []byte) error {
		for range n {
			var err error
			if s.r.ts {
				var t int64
				if t, body, err = istate.ReadVarint(body); err != nil {
					return err
				}
				ts = append(ts, t)
			}
			var v V
			if v, body, err = s.c.Decode(body); err != nil {
				return err
			}
			vals = append(vals, v)
		}
		if len(body) != 0 {
			return fmt.Errorf("%d bytes left in a list chunk", len(body))
		}
		return nil
	})
	if err != nil {
		panic(fmt.Errorf("kvstate: state %q: decoding: %w", s.r.name, err))
	}
	return vals, ts
}

// forChunks calls f with the element count and body of each chunk of a
// stored list.
func forChunks(raw []byte, f func(n uint64, body []byte) error) error {
	for len(raw) > 0 {
		n, rest, err := istate.ReadUvarint(raw)
		if err != nil {
			return err
		}
		body, rest, err := istate.ReadBytes(rest)
		if err != nil {
			return err
		}
		if err := f(n, body); err != nil {
			return err
		}
		raw = rest
	}
	return nil
}

// view returns the visible elements of the current key and namespace, with
// the TTL semantics of the heap backend's List.
func (s *List[K, N, V]) view() []V {
	key := s.dbKey()
	vals, ts := s.load(key)
	if !s.ttl.enabled || len(vals) == 0 {
		return vals
	}
	now := s.b.clk.NowMillis()
	p := &s.ttl
	keep := make([]V, 0, len(vals))
	for i, v := range vals {
		if !p.expired(ts[i], now) {
			keep = append(keep, v)
		}
	}
	switch {
	case len(keep) == len(vals):
		if p.updateOnRead {
			s.set(key, s.chunk(vals, now))
		}
		return vals
	case len(keep) == 0:
		s.del(key)
	default:
		// Drop the expired elements (lazy cleanup); the survivors keep
		// their timestamps unless the read refreshes them.
		var body []byte
		var err error
		for i, v := range vals {
			if p.expired(ts[i], now) {
				continue
			}
			t := ts[i]
			if p.updateOnRead {
				t = now
			}
			body = binary.AppendVarint(body, t)
			if body, err = s.c.Append(body, v); err != nil {
				panic(fmt.Errorf("kvstate: state %q: encoding: %w", s.r.name, err))
			}
		}
		s.set(key, appendChunk(nil, len(keep), body))
	}
	if p.returnExpired {
		return vals
	}
	return keep
}

// Get returns a copy of the list of the current key and namespace; it is
// empty, not nil, when no list is stored.
func (s *List[K, N, V]) Get() []V {
	v := s.view()
	if v == nil {
		return []V{}
	}
	return v
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
func (s *List[K, N, V]) Add(v V) { s.merge(s.dbKey(), s.chunk([]V{v}, s.now())) }

// AddAll appends vs, in order, to the list of the current key and
// namespace. An empty vs changes nothing.
func (s *List[K, N, V]) AddAll(vs []V) {
	if len(vs) == 0 {
		return
	}
	s.merge(s.dbKey(), s.chunk(vs, s.now()))
}

// Update replaces the list of the current key and namespace with a copy of
// vs. An empty vs clears the state.
func (s *List[K, N, V]) Update(vs []V) {
	key := s.dbKey()
	if len(vs) == 0 {
		s.del(key)
		return
	}
	s.set(key, s.chunk(vs, s.now()))
}

func (s *List[K, N, V]) merge(key, chunk []byte) {
	if err := s.b.db.Merge(key, chunk); err != nil {
		panic(fmt.Errorf("kvstate: state %q: %w", s.r.name, err))
	}
}
