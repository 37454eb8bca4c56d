package state

import (
	"hash/maphash"
	"math"

	"github.com/weirstream/weir/internal/hashfn"
	"github.com/weirstream/weir/internal/invariants"
	"github.com/weirstream/weir/state"
)

// entryKey addresses one entry of a table. The namespace comes first so that
// a zero-size namespace (struct{}) adds no trailing padding to the key.
type entryKey[K, N comparable] struct {
	ns  N
	key K
}

// cell holds the stored value of one (key, namespace). Cells are referenced
// by pointer from the table's maps so that handles can cache them.
type cell[S any] struct {
	v  S
	ts int64 // last access, for value-granularity TTL
	// pos is the cell's index in its key group's cleanup slots (0 when the
	// table has no incremental cleanup), or -1 once the cell has been
	// removed from its table (or replaced by a copy, cow.go), so that
	// cached pointers to it are dropped.
	pos int32
	// ver is the table's version when the cell was created or copied; a
	// cell with ver <= table.frozen may be read by a snapshot view and is
	// copied before it is changed (cow.go).
	ver uint32
}

func (c *cell[S]) dead() bool { return c.pos < 0 }

// slot is an entry of a key group's cleanup list: the entry's hash, key
// and cell.
type slot[K, N comparable, S any] struct {
	h uint64
	k entryKey[K, N]
	c *cell[S]
}

// ttlParams is the TTL configuration of a table in the form the hot path
// uses. The zero value means TTL is off.
type ttlParams struct {
	enabled       bool
	updateOnRead  bool
	returnExpired bool
	everyRecord   bool
	ttl           int64 // milliseconds
	cleanupN      int   // entries examined per access; 0: no incremental cleanup
}

func newTTLParams(c state.TTLConfig) ttlParams {
	if !c.Enabled() {
		return ttlParams{}
	}
	p := ttlParams{
		enabled:       true,
		updateOnRead:  c.Update == state.UpdateOnReadAndWrite,
		returnExpired: c.Visibility == state.ReturnExpiredIfNotCleanedUp,
		ttl:           c.TTL.Milliseconds(),
	}
	if c.IncrementalCleanup() {
		p.cleanupN = c.CleanupEntries
		p.everyRecord = c.CleanupEveryRecord
	}
	return p
}

// expired reports whether a value last accessed at ts has expired at now:
// ts + ttl <= now, with the addition capped at MaxInt64 as in Flink's
// TtlUtils.getExpirationTimestamp.
func (p *ttlParams) expired(ts, now int64) bool {
	return expiresAt(ts, p.ttl) <= now
}

// usable reports whether a value last accessed at ts may be used at now:
// it has not expired, or the visibility returns expired values (Flink's
// getUnexpired).
func (p *ttlParams) usable(ts, now int64) bool {
	return p.returnExpired || !p.expired(ts, now)
}

func expiresAt(ts, ttl int64) int64 {
	if ts > 0 && ttl > math.MaxInt64-ts {
		return math.MaxInt64
	}
	return ts + ttl
}

// maxEmptyGroupSkips bounds how many empty (or finished) key groups one
// incremental cleanup step may pass over, so that a sparse table with many
// key groups does not make every state access scan all of them.
const maxEmptyGroupSkips = 64

// cleanupCursor is the resumable position of incremental TTL cleanup.
type cleanupCursor struct {
	group int // index of the key group being visited
	pos   int // next slot of that group to examine
}

// table is the storage of one registered state: one flat hash table per
// key group (flat.go).
//
// Tables with incremental TTL cleanup also keep, per key group, a list of
// the group's entries (slots); each cell knows its position there, so the
// cleanup cursor walks an array instead of restarting a table iteration on
// every state access, and a removal swaps the last slot into the hole.
type table[K, N comparable, S any] struct {
	groups []flatGroup[K, N, S]
	slots  [][]slot[K, N, S] // nil without incremental cleanup
	size   int
	// hk hashes keys, hn namespaces (nsZero: N is zero-size, its hash is
	// not combined in); see hash.
	hk     func(K) uint64
	hn     func(N) uint64
	nsZero bool
	ttl    ttlParams
	// purge drops the expired parts of a cell at now and reports whether
	// anything is left. It is used only when TTL is on.
	purge func(p *ttlParams, c *cell[S], now int64) bool
	cur   cleanupCursor
	// cells and nsCodec serialize the entries in snapshots (cells.go).
	cells   cellCodec[S]
	nsCodec state.Codec[N]
	scratch []entryCopy[K, N, S] // reused by appendGroup
	cow     cowState[S]
	gver    []uint32 // version of each key group's table (cow.go)
}

func newTable[K, N comparable, S any](groups int, ttl state.TTLConfig, purge func(*ttlParams, *cell[S], int64) bool, seed maphash.Seed, hk func(K) uint64) *table[K, N, S] {
	t := &table[K, N, S]{
		groups: make([]flatGroup[K, N, S], groups),
		hk:     hk,
		ttl:    newTTLParams(ttl),
		purge:  purge,
		gver:   make([]uint32, groups),
		cow:    cowState[S]{ver: 1},
	}
	for i := range t.gver {
		t.gver[i] = 1
	}
	t.hn, t.nsZero = hashfn.For[N](seed)
	if t.ttl.cleanupN > 0 {
		t.slots = make([][]slot[K, N, S], groups)
	}
	return t
}

// hash returns the hash of the entry of namespace ns of the key whose hash
// is kh.
func (t *table[K, N, S]) hash(kh uint64, ns N) uint64 {
	if t.nsZero {
		return kh
	}
	return hashfn.Combine(kh, t.hn(ns))
}

// hashOf returns the hash of entry k.
func (t *table[K, N, S]) hashOf(k entryKey[K, N]) uint64 { return t.hash(t.hk(k.key), k.ns) }

// get returns the cell of entry k of key group idx, or nil.
func (t *table[K, N, S]) get(idx int, k entryKey[K, N]) *cell[S] {
	return t.groups[idx].get(t.hashOf(k), k)
}

func (t *table[K, N, S]) insert(idx int, h uint64, k entryKey[K, N], c *cell[S]) {
	g := t.wgroup(idx)
	c.ver = t.cow.ver
	g.add(h, k, c, t.hashOf)
	t.size++
	if t.slots != nil {
		c.pos = int32(len(t.slots[idx]))
		t.slots[idx] = append(t.slots[idx], slot[K, N, S]{h: h, k: k, c: c})
	}
}

// unlink marks c, just deleted from the table of key group idx, removed.
func (t *table[K, N, S]) unlink(idx int, c *cell[S]) {
	t.size--
	if t.slots != nil {
		ss := t.slots[idx]
		last := int32(len(ss) - 1)
		if c.pos != last {
			ss[c.pos] = ss[last]
			ss[c.pos].c.pos = c.pos
		}
		ss[last] = slot[K, N, S]{}
		t.slots[idx] = ss[:last]
	}
	c.pos = -1
}

// remove deletes the entry k (hash h) of key group idx, if any, and
// returns its cell.
func (t *table[K, N, S]) remove(idx int, h uint64, k entryKey[K, N]) *cell[S] {
	i := t.groups[idx].find(h, k)
	if i < 0 {
		return nil
	}
	g := t.wgroup(idx)
	c := g.slots[i].c
	g.deleteAt(i, t.hashOf)
	t.unlink(idx, c)
	return c
}

// removeCell deletes the entry k (hash h) of key group idx if it still
// holds c.
func (t *table[K, N, S]) removeCell(idx int, h uint64, k entryKey[K, N], c *cell[S]) {
	if c == nil {
		return
	}
	if i := t.groups[idx].find(h, k); i >= 0 && t.groups[idx].slots[i].c == c {
		t.wgroup(idx).deleteAt(i, t.hashOf)
		t.unlink(idx, c)
	}
}

func (t *table[K, N, S]) count() int { return t.size }

// check verifies the table's bookkeeping (the invariants build tag, at
// each snapshot view): the entry count matches the groups, each group's
// count its full slots, every entry is found where its hash leads, no
// group holds a removed cell, and the cleanup slots list exactly each
// group's entries at the positions their cells record.
func (t *table[K, N, S]) check() {
	n := 0
	for idx := range t.groups {
		m := &t.groups[idx]
		n += m.len()
		full := 0
		for i := range m.slots {
			s := &m.slots[i]
			if s.c == nil {
				continue
			}
			full++
			if s.c.dead() {
				invariants.Violated("state table: key group %d holds a removed cell for %v", idx, s.k)
			}
			if m.find(t.hashOf(s.k), s.k) != i {
				invariants.Violated("state table: key group %d: entry %v is not found at its slot", idx, s.k)
			}
		}
		if full != m.len() {
			invariants.Violated("state table: key group %d counts %d entries, holds %d", idx, m.len(), full)
		}
		if t.slots == nil {
			continue
		}
		if len(t.slots[idx]) != m.len() {
			invariants.Violated("state table: key group %d has %d entries, %d cleanup slots", idx, m.len(), len(t.slots[idx]))
		}
		for i, sl := range t.slots[idx] {
			if sl.h != t.hashOf(sl.k) || m.get(sl.h, sl.k) != sl.c || sl.c.pos != int32(i) {
				invariants.Violated("state table: cleanup slot %d of key group %d does not match its entry", i, idx)
			}
		}
	}
	if n != t.size {
		invariants.Violated("state table: %d entries in the groups, size %d", n, t.size)
	}
}

// keys yields the distinct keys with an entry in any namespace, one key
// group at a time; a group's keys are collected before they are yielded.
func (t *table[K, N, S]) keys(yield func(K) bool) {
	var buf []K
	var seen map[K]struct{}
	for idx := range t.groups {
		m := &t.groups[idx]
		if m.len() == 0 {
			continue
		}
		buf = buf[:0]
		if t.nsZero {
			for ek := range m.all {
				buf = append(buf, ek.key)
			}
		} else {
			if seen == nil {
				seen = make(map[K]struct{})
			} else {
				clear(seen)
			}
			for ek := range m.all {
				if _, dup := seen[ek.key]; dup {
					continue
				}
				seen[ek.key] = struct{}{}
				buf = append(buf, ek.key)
			}
		}
		for _, k := range buf {
			if !yield(k) {
				return
			}
		}
	}
}

// cleanup is one step of incremental TTL cleanup (Flink's
// TtlIncrementalCleanup): it examines up to ttl.cleanupN entries, resuming
// where the previous step stopped in a cursor over the key groups and their
// slots, and drops the expired ones (for lists and maps, the expired
// elements or entries, and the whole entry when nothing is left).
//
// A removal moves the group's last slot into the hole. Removals behind the
// cursor (by other state operations) can therefore move a not yet examined
// entry behind it, where this pass misses it; the next pass finds it, and an
// expired value is always dropped when it is read.
func (t *table[K, N, S]) cleanup(now int64) {
	if t.size == 0 || t.slots == nil {
		return
	}
	budget := t.ttl.cleanupN
	skips := 0
	for budget > 0 {
		g := t.cur.group
		ss := t.slots[g]
		if t.cur.pos >= len(ss) {
			t.cur.group++
			if t.cur.group == len(t.slots) {
				t.cur.group = 0
			}
			t.cur.pos = 0
			skips++
			if skips > maxEmptyGroupSkips || skips > len(t.slots) {
				return
			}
			continue
		}
		budget--
		s := ss[t.cur.pos]
		c := s.c
		if t.cow.purgeWrites && c.ver <= t.cow.frozen && t.cow.stale(&t.ttl, c, now) {
			c = t.cowCell(g, s.h, s.k, c)
		}
		if t.purge(&t.ttl, c, now) {
			t.cur.pos++
			continue
		}
		// Drop the entry; the last slot moves to cur.pos and is examined
		// next.
		w := t.wgroup(g)
		w.deleteAt(w.find(s.h, s.k), t.hashOf)
		t.unlink(g, c)
	}
}

// handle is the part common to all typed state handles: the table, the
// current namespace and the cached cell of the current key and namespace.
type handle[K, N comparable, S any] struct {
	b   *Backend[K]
	t   *table[K, N, S]
	ns  N
	gen uint64   // Backend.gen when c was looked up
	c   *cell[S] // cached cell; valid if gen == b.gen and c is not dead
}

// SetNamespace sets the namespace that the handle reads and writes; the
// default is the zero N. Window operators set the window here.
func (h *handle[K, N, S]) SetNamespace(ns N) {
	h.ns = ns
	h.c = nil
}

// Namespace returns the handle's current namespace.
func (h *handle[K, N, S]) Namespace() N { return h.ns }

// lookup returns the cell of the current key and namespace, or nil.
func (h *handle[K, N, S]) lookup() *cell[S] {
	if c := h.c; c != nil && h.gen == h.b.gen && !c.dead() {
		return c
	}
	return h.slowLookup()
}

func (h *handle[K, N, S]) slowLookup() *cell[S] {
	b := h.b
	if !b.keySet {
		panic(errNoKey)
	}
	k := entryKey[K, N]{h.ns, b.key}
	c := h.t.groups[b.idx].get(h.t.hash(b.kh, h.ns), k)
	h.c, h.gen = c, b.gen
	return c
}

const errNoKey = "state: state accessed before SetCurrentKey"

// create stores a new cell for the current key and namespace, which must
// have none, and caches it.
func (h *handle[K, N, S]) create(v S, ts int64) *cell[S] {
	b := h.b
	if !b.keySet {
		panic(errNoKey)
	}
	c := &cell[S]{v: v, ts: ts}
	h.t.insert(b.idx, h.t.hash(b.kh, h.ns), entryKey[K, N]{h.ns, b.key}, c)
	h.c, h.gen = c, b.gen
	return c
}

// clear removes the state of the current key and namespace.
func (h *handle[K, N, S]) clear() {
	b := h.b
	if !b.keySet {
		panic(errNoKey)
	}
	h.t.remove(b.idx, h.t.hash(b.kh, h.ns), entryKey[K, N]{h.ns, b.key})
	h.c = nil
}

// removeCurrent removes c, the cell of the current key and namespace.
func (h *handle[K, N, S]) removeCurrent(c *cell[S]) {
	h.t.removeCell(h.b.idx, h.t.hash(h.b.kh, h.ns), entryKey[K, N]{h.ns, h.b.key}, c)
	h.c = nil
}

// access is the TTL prologue of every state access: it reads the clock and
// runs a step of incremental cleanup, as Flink's accessCallback.
func (h *handle[K, N, S]) access() int64 {
	now := h.b.clk.NowMillis()
	if h.t.slots != nil {
		h.t.cleanup(now)
	}
	return now
}

// take removes the state of the current key in namespace ns and returns
// its cell, or nil.
func (h *handle[K, N, S]) take(ns N) *cell[S] {
	b := h.b
	if !b.keySet {
		panic(errNoKey)
	}
	return h.t.remove(b.idx, h.t.hash(b.kh, ns), entryKey[K, N]{ns, b.key})
}

// peek returns the cell of the current key in namespace ns, or nil.
func (h *handle[K, N, S]) peek(ns N) *cell[S] {
	return h.t.groups[h.b.idx].get(h.t.hash(h.b.kh, ns), entryKey[K, N]{ns, h.b.key})
}

// put stores c for the current key in namespace ns, which must have none.
func (h *handle[K, N, S]) put(ns N, c *cell[S]) {
	h.t.insert(h.b.idx, h.t.hash(h.b.kh, ns), entryKey[K, N]{ns, h.b.key}, c)
}
