// Package state is Weir's heap keyed-state backend: the keyed state of one
// operator in one subtask, held as plain Go values in hash tables.
//
// State is stored per key group, so whole key groups can be snapshotted
// and moved between subtasks (SnapshotKeyGroup, RestoreKeyGroup; the
// binary format is in FORMAT.md). Each registered state is a table
// with one flat open-addressed hash table per key group (flat.go), keyed
// by (namespace, key) and holding a
// pointer to a cell with the user value. No value is serialized or boxed
// while records are processed; only snapshots serialize (snapshot.go).
//
// The operator sets the current key (and its key group) before each record
// or timer with SetCurrentKey; the typed handles returned by GetValue,
// GetList, GetMap, GetReducing and GetAggregating then read and write the
// state of the current key in the handle's current namespace. A handle
// caches the cell of the current key and namespace, so reading and then
// updating the same value costs one map lookup.
//
// Semantics follow Flink's heap backend and its TTL decorators
// (flink-runtime .../state/heap and .../state/ttl), with absent values
// reported by a bool instead of null.
//
// A Backend and its handles belong to the single goroutine that runs the
// operator; they are not safe for concurrent use.
package state

import (
	"fmt"
	"hash/maphash"
	"iter"
	"reflect"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/internal/hashfn"
	"github.com/weirstream/weir/state"
)

// Backend holds the keyed state of one operator in one subtask, for the key
// groups firstKeyGroup..lastKeyGroup (inclusive).
type Backend[K comparable] struct {
	first, last int
	clk         clock.Clock

	key    K
	kh     uint64 // hash of key (hashK)
	kg     int    // current key group
	idx    int    // kg - first
	gen    uint64 // bumped by SetCurrentKey; invalidates handle caches
	keySet bool
	hashK  func(K) uint64
	seed   maphash.Seed // seeds the hashes of the backend's tables

	states      map[string]*registration[K]
	everyRecord []tableOps[K] // tables with TTL cleanup on every record

	// Snapshots and restores (snapshot.go).
	keyCodec      state.Codec[K]           // nil until first needed
	keySchemaText string                   // its schema, "" until first needed
	pending       map[string]*pendingState // restored, not yet registered states
	restored      []bool                   // key groups restored, by index
	view          *viewFlags               // the last view taken (view.go)
}

// NewBackend returns an empty backend for the key groups firstKeyGroup to
// lastKeyGroup inclusive. clk is the processing-time source of state TTL.
// It panics if the range is empty or negative, or clk is nil.
func NewBackend[K comparable](firstKeyGroup, lastKeyGroup int, clk clock.Clock) *Backend[K] {
	if firstKeyGroup < 0 || lastKeyGroup < firstKeyGroup {
		panic(fmt.Sprintf("state: invalid key-group range [%d, %d]", firstKeyGroup, lastKeyGroup))
	}
	if clk == nil {
		panic("state: nil clock")
	}
	seed := maphash.MakeSeed()
	hk, _ := hashfn.For[K](seed)
	return &Backend[K]{
		seed:   seed,
		hashK:  hk,
		first:  firstKeyGroup,
		last:   lastKeyGroup,
		clk:    clk,
		kg:     firstKeyGroup,
		gen:    1,
		states: make(map[string]*registration[K]),
	}
}

// KeyGroupRange returns the first and last (inclusive) key group of the
// backend.
func (b *Backend[K]) KeyGroupRange() (first, last int) { return b.first, b.last }

// SetCurrentKey makes key, which belongs to keyGroup, the current key of all
// state handles of the backend. It panics if keyGroup is outside the
// backend's range. With TTL states configured with CleanupEveryRecord, it
// also runs their incremental cleanup.
func (b *Backend[K]) SetCurrentKey(key K, keyGroup int) {
	if keyGroup < b.first || keyGroup > b.last {
		panic(fmt.Sprintf("state: key group %d outside the backend's range [%d, %d]", keyGroup, b.first, b.last))
	}
	b.key = key
	b.kh = b.hashK(key)
	b.kg = keyGroup
	b.idx = keyGroup - b.first
	b.gen++
	b.keySet = true
	if len(b.everyRecord) > 0 {
		now := b.clk.NowMillis()
		for _, t := range b.everyRecord {
			t.cleanup(now)
		}
	}
}

// CurrentKey returns the current key (the zero K before the first
// SetCurrentKey).
func (b *Backend[K]) CurrentKey() K { return b.key }

// CurrentKeyGroup returns the key group of the current key.
func (b *Backend[K]) CurrentKeyGroup() int { return b.kg }

// Keys iterates over the distinct keys that currently have state under name,
// in any namespace, as Flink's getKeys for applyToKeyedState. Keys of
// expired but not yet cleaned-up TTL state are included; restored state that
// is not registered yet has no keys here. The keys of a key
// group are collected before they are yielded, so the loop body may set the
// current key and read, write or clear the state. An unknown name yields
// nothing.
func (b *Backend[K]) Keys(name string) iter.Seq[K] {
	return func(yield func(K) bool) {
		r := b.states[name]
		if r == nil {
			return
		}
		r.ops.keys(yield)
	}
}

// KeyCount returns the number of stored (state name, key, namespace)
// entries, including expired TTL entries not yet cleaned up. It is meant
// for metrics.
func (b *Backend[K]) KeyCount() int {
	n := 0
	for _, r := range b.states {
		n += r.ops.count()
	}
	for _, p := range b.pending {
		n += p.count
	}
	return n
}

// stateKind is the primitive of a registered state.
type stateKind uint8

const (
	kindValue stateKind = iota + 1
	kindList
	kindMap
	kindReducing
	kindAggregating
)

func (k stateKind) String() string {
	switch k {
	case kindValue:
		return "value"
	case kindList:
		return "list"
	case kindMap:
		return "map"
	case kindReducing:
		return "reducing"
	case kindAggregating:
		return "aggregating"
	default:
		return "unknown"
	}
}

// registration records a registered state: its kind, its type parameters
// (namespace first), its TTL config and its table.
type registration[K comparable] struct {
	kind  stateKind
	types []reflect.Type
	ttl   state.TTLConfig
	tbl   any // *table[K, N, S]
	ops   tableOps[K]
	// names are the names of the stored types, as version 1 of the
	// format recorded them (storedTypes); schemas their schemas, as
	// snapshots record them now: the namespace's, then the cells'.
	names   []string
	schemas []string
}

// tableOps is the type-erased view of a table that the backend needs.
type tableOps[K comparable] interface {
	count() int
	keys(yield func(K) bool)
	cleanup(now int64)
	// For snapshots and restores (cells.go).
	groupLen(idx int) int
	appendGroup(dst []byte, idx int, kc state.Codec[K]) ([]byte, error)
	decodeGroup(idx int, payload []byte, count int, ts bool, kc state.Codec[K], cells any) (func(), error)
	// readerFor returns cells reading the old value schemas (cells.go).
	readerFor(old []string) (any, int, error)
	// view freezes the table for a snapshot view (view.go).
	view(flags *viewFlags, kc state.Codec[K]) (groupView[K], error)
}

// register returns the table registered under name, creating it if needed.
// A registration under the same name must have the same kind, types and TTL
// config (any two configs that leave TTL disabled count as the same). A new
// table receives the restored entries of the state, if any; cells encodes
// and decodes its entries' bodies (the codecs of the first registration
// are used; later registrations' codecs are ignored), and cow says how to
// copy them for a write after a view (cow.go).
func register[K, N comparable, S any](b *Backend[K], name string, kind stateKind, types []reflect.Type,
	ttl state.TTLConfig, purge func(p *ttlParams, c *cell[S], now int64) bool, cells cellCodec[S], cow cowState[S]) (*table[K, N, S], error) {
	if r, ok := b.states[name]; ok {
		if r.kind != kind || !equalTypes(r.types, types) {
			return nil, fmt.Errorf("state %q is already registered as %v state of %v; cannot register it as %v state of %v",
				name, r.kind, r.types, kind, types)
		}
		if r.ttl != ttl && (r.ttl.Enabled() || ttl.Enabled()) {
			return nil, fmt.Errorf("state %q is already registered with TTL config %+v; cannot register it with %+v",
				name, r.ttl, ttl)
		}
		return r.tbl.(*table[K, N, S]), nil
	}
	t := newTable[K, N, S](b.last-b.first+1, ttl, purge, b.seed, b.hashK)
	t.cells, t.nsCodec = cells, DefaultCodec[N]()
	cow.ver = t.cow.ver
	t.cow = cow
	r := &registration[K]{kind: kind, types: types, ttl: ttl, tbl: t, ops: t, names: storedTypes(kind, types),
		schemas: append([]string{SchemaOf(t.nsCodec)}, cells.schemas()...)}
	if err := b.restorePending(name, r); err != nil {
		return nil, err
	}
	b.states[name] = r
	if t.ttl.everyRecord {
		b.everyRecord = append(b.everyRecord, t)
	}
	return t, nil
}

func equalTypes(a, b []reflect.Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
