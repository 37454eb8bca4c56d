package state

import (
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
)

// Copy-on-write snapshots.
//
// Backend.View takes a consistent view of the keyed state for an
// asynchronous snapshot, as Flink's heap backend does with its
// CopyOnWriteStateMap: the view costs O(states x key groups) and copies no
// entry; the backend then copies what it is about to change, lazily, as
// long as the view may still read it.
//
// Versions: every table has a version (cowState.ver), stamped on each cell
// it creates or copies and on each key-group map it creates or clones
// (table.gver). A view bumps the version of every table and records the
// previous one as frozen: a cell or key-group map with a version <= frozen
// existed when the view was taken and may be read by it. Before a write,
// the backend checks the version (one comparison on the hot path); an old
// cell or map is copied (the map with maps.Clone, once per key group; the
// cell into a new cell with the new version that replaces it in the live
// map), unless the view has already released the key group (it encodes key
// groups one by one and releases each when done, with an atomic flag), in
// which case the old cell or map is just stamped with the new version. A
// replaced cell is marked dead (pos -1) so that handles drop their cached
// pointers to it; the view reads only its value and timestamp.
//
// Values that user code could change in place (pointers, slices, maps,
// interfaces, channels or functions anywhere in the stored type) cannot be
// protected by copying the cell: the view of such a table is encoded at
// once, when the view is taken (the synchronous snapshot of before, for
// that table only). Plain values (booleans, numbers, strings and arrays
// and structs of them) are copied by assignment. The backend's own
// mutable parts are copied with the cell: a list's TTL timestamps (updated
// in place on reads) are cloned, its elements are shared (the backend only
// appends beyond the length the view holds, or builds new slices); a map
// state's inner map is cloned (maps.Clone).
//
// At most one view is in flight per backend: Backend.View fails while the
// previous one has not been released. Versions are 32 bits: a backend takes
// 2^32 views (136 years at one per second) before they wrap.

// viewFlags are the release flags of a view, shared by the view (which
// sets them, on any goroutine) and the tables (which read them, on the
// backend's goroutine, on the slow path of a write).
type viewFlags struct {
	released []atomic.Bool // by key-group index
	all      atomic.Bool   // the view is gone
	left     atomic.Int64  // key groups not released yet
}

// release releases key group idx, and the view once none is left.
func (f *viewFlags) release(idx int) {
	if !f.released[idx].Swap(true) && f.left.Add(-1) == 0 {
		f.all.Store(true)
	}
}

// cowState is the copy-on-write state of a table.
type cowState[S any] struct {
	ver    uint32     // the version of cells and maps created now
	frozen uint32     // cells and maps with a version <= frozen may be read by the view
	flags  *viewFlags // the view in flight; nil if none
	// plain reports that stored values cannot be changed in place by user
	// code, so copy-on-write applies; otherwise views encode the table at
	// once.
	plain bool
	// copy copies a stored value for a write after a view (nil: by
	// assignment).
	copy func(S) S
	// copyOnRead: reads also copy (values with a Copier).
	copyOnRead bool
	// purgeWrites: TTL cleanup may change a cell in place (lists, maps);
	// stale reports whether it would.
	purgeWrites bool
	stale       func(p *ttlParams, c *cell[S], now int64) bool
}

// shared reports whether the view in flight may still read key group idx.
// Once the view is fully released it forgets it, so that the hot path's
// version checks fail again.
func (t *table[K, N, S]) shared(idx int) bool {
	f := t.cow.flags
	if f == nil {
		return false
	}
	if f.all.Load() {
		t.cow.flags, t.cow.frozen = nil, 0
		return false
	}
	return !f.released[idx].Load()
}

// wgroup returns the table of key group idx, ready to be changed.
func (t *table[K, N, S]) wgroup(idx int) *flatGroup[K, N, S] {
	if t.gver[idx] > t.cow.frozen {
		return &t.groups[idx]
	}
	return t.cowGroup(idx)
}

func (t *table[K, N, S]) cowGroup(idx int) *flatGroup[K, N, S] {
	m := &t.groups[idx]
	if m.slots != nil && t.shared(idx) {
		// The view keeps the slot array; an empty one is dropped rather
		// than filled under the view's eyes.
		if m.len() == 0 {
			*m = flatGroup[K, N, S]{}
		} else {
			*m = m.clone()
		}
	}
	t.gver[idx] = t.cow.ver
	return m
}

// wcell returns c, the cell of entry k in key group idx, or its copy that
// replaced it, ready to be changed.
func (t *table[K, N, S]) wcell(idx int, h uint64, k entryKey[K, N], c *cell[S]) *cell[S] {
	if c.ver > t.cow.frozen {
		return c
	}
	return t.cowCell(idx, h, k, c)
}

func (t *table[K, N, S]) cowCell(idx int, h uint64, k entryKey[K, N], c *cell[S]) *cell[S] {
	if !t.shared(idx) {
		c.ver = t.cow.ver
		return c
	}
	m := t.wgroup(idx)
	n := &cell[S]{v: c.v, ts: c.ts, pos: c.pos, ver: t.cow.ver}
	if t.cow.copy != nil {
		n.v = t.cow.copy(c.v)
	}
	m.slots[m.find(h, k)].c = n
	if t.slots != nil {
		t.slots[idx][c.pos].c = n
	}
	c.pos = -1
	return n
}

// w returns the writable cell of the current key and namespace for c, its
// cell, and caches it.
// It is small enough to be inlined, so a write that needs no copy costs
// one comparison.
func (h *handle[K, N, S]) w(c *cell[S]) *cell[S] {
	if c.ver > h.t.cow.frozen {
		return c
	}
	return h.copyCell(c)
}

// copyCell is w's slow path.
//
//go:noinline
func (h *handle[K, N, S]) copyCell(c *cell[S]) *cell[S] {
	n := h.t.cowCell(h.b.idx, h.t.hash(h.b.kh, h.ns), entryKey[K, N]{h.ns, h.b.key}, c)
	h.c, h.gen = n, h.b.gen
	return n
}

// wns is w for the cell of the current key in namespace ns (merges).
func (h *handle[K, N, S]) wns(ns N, c *cell[S]) *cell[S] {
	if c.ver > h.t.cow.frozen {
		return c
	}
	return h.t.cowCell(h.b.idx, h.t.hash(h.b.kh, ns), entryKey[K, N]{ns, h.b.key}, c)
}

// freezeCOW makes the table's current cells and maps part of the view
// flags belongs to.
func (t *table[K, N, S]) freezeCOW(flags *viewFlags) {
	t.cow.frozen = t.cow.ver
	t.cow.ver++
	t.cow.flags = flags
}

// isPlain reports whether values of type t cannot be changed in place
// through a copy: no pointers, slices, maps, interfaces, channels,
// functions or unsafe pointers anywhere in it (strings are immutable).
func isPlain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return isPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !isPlain(t.Field(i).Type) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// staleList reports whether purgeList would change c.
func staleList[V any](p *ttlParams, c *cell[listData[V]], now int64) bool {
	return firstExpired(p, c.v.ts, now) >= 0
}

// staleMap reports whether purgeMap would change c.
func staleMap[UK comparable, UV any](p *ttlParams, c *cell[map[UK]mapEntry[UV]], now int64) bool {
	for _, e := range c.v {
		if p.expired(e.ts, now) {
			return true
		}
	}
	return false
}

// copyList copies a stored list for a write: the elements are shared (the
// backend never overwrites elements within a list's length), the TTL
// timestamps, which reads update in place, are cloned.
func copyList[V any](d listData[V]) listData[V] {
	return listData[V]{vals: d.vals, ts: slices.Clone(d.ts)}
}

// copyMap copies a stored map for a write.
func copyMap[UK comparable, UV any](m map[UK]mapEntry[UV]) map[UK]mapEntry[UV] {
	return maps.Clone(m)
}

// Copier is implemented by stored value types that hold pointers (so that
// copy-on-write could not protect them by copying the cell) but can copy
// themselves: CopyForSnapshot returns a copy sharing nothing that the
// holder of the original may change in place, and whether the type
// supports it at all (it is called on the zero value when the state is
// registered; false: views encode the state when they are taken). A value
// state of such a type is copied before a write and also before a read
// (the reader may change what it gets), while a view may still read it, as
// Flink's CopyOnWriteStateMap does for mutable values. The window engines'
// per-key structures implement it; their holders must not keep the value
// past the call that read it.
type Copier[V any] interface {
	CopyForSnapshot() (V, bool)
}

// IsPlain reports whether values of type t can be copied by assignment
// for a snapshot: no pointers, slices, maps, interfaces, channels,
// functions or unsafe pointers anywhere in it (strings are immutable).
func IsPlain(t reflect.Type) bool { return isPlain(t) }

// valueCOW is the copy-on-write configuration of value, reducing and
// aggregating state, whose stored value is V.
func valueCOW[V any]() cowState[V] {
	if isPlain(typeOf[V]()) {
		return cowState[V]{plain: true}
	}
	if cp, ok := any(*new(V)).(Copier[V]); ok {
		if _, can := cp.CopyForSnapshot(); can {
			return cowState[V]{plain: true, copyOnRead: true, copy: func(v V) V {
				c, _ := any(v).(Copier[V]).CopyForSnapshot()
				return c
			}}
		}
	}
	return cowState[V]{}
}
