package state

// A key group's entries are kept in a flat open-addressed hash table
// (flatGroup): linear probing over a power-of-two array of slots, each
// holding the entry's key and its cell pointer, with a load factor of at
// most 3/4 and backward-shift deletion (no tombstones). A lookup reads the
// key from the slot it probes, so a hit costs the miss on the slot array
// plus the one on the cell. Slots hold no hash: a larger slot array cost
// more in cache and TLB misses than the comparisons it saved; moving an
// entry (growth, deletion) rehashes its key.
//
// The hash of an entry is the hash of its key (computed once per
// SetCurrentKey by the backend and shared by all its tables) combined with
// the hash of its namespace when the namespace is not zero-size.

// fslot is a slot of a flatGroup; c == nil marks it empty. It holds no
// hash, to keep the slot array small (its cache and TLB misses are the
// cost of a lookup): operations that move entries take the hash function.
type fslot[K, N comparable, S any] struct {
	k entryKey[K, N]
	c *cell[S]
}

// flatGroup is the table of one key group. The zero value is empty. A
// flatGroup is held by value; a copy shares the slot array (views keep
// such copies, cow.go).
type flatGroup[K, N comparable, S any] struct {
	slots []fslot[K, N, S] // len 0 or a power of two
	n     int
}

func (g *flatGroup[K, N, S]) len() int { return g.n }

// find returns the slot index of entry k with hash h, or -1.
func (g *flatGroup[K, N, S]) find(h uint64, k entryKey[K, N]) int {
	if g.n == 0 {
		return -1
	}
	mask := uint64(len(g.slots) - 1)
	i := h & mask
	for {
		s := &g.slots[i]
		if s.c == nil {
			return -1
		}
		if s.k == k {
			return int(i)
		}
		i = (i + 1) & mask
	}
}

// get returns the cell of entry k with hash h, or nil.
func (g *flatGroup[K, N, S]) get(h uint64, k entryKey[K, N]) *cell[S] {
	if g.n == 0 {
		return nil
	}
	mask := uint64(len(g.slots) - 1)
	i := h & mask
	for {
		s := &g.slots[i]
		if s.c == nil || s.k == k {
			return s.c
		}
		i = (i + 1) & mask
	}
}

// add stores c for entry k with hash h, which must not be present; hf is
// the hash function.
func (g *flatGroup[K, N, S]) add(h uint64, k entryKey[K, N], c *cell[S], hf func(entryKey[K, N]) uint64) {
	if (g.n+1)*4 > len(g.slots)*3 {
		g.resize(max(8, 2*len(g.slots)), hf)
	}
	g.place(h, k, c)
	g.n++
}

func (g *flatGroup[K, N, S]) place(h uint64, k entryKey[K, N], c *cell[S]) {
	mask := uint64(len(g.slots) - 1)
	i := h & mask
	for g.slots[i].c != nil {
		i = (i + 1) & mask
	}
	g.slots[i] = fslot[K, N, S]{k: k, c: c}
}

// resize moves the entries into a new slot array of n slots (a power of
// two, more than the entries).
func (g *flatGroup[K, N, S]) resize(n int, hf func(entryKey[K, N]) uint64) {
	old := g.slots
	g.slots = make([]fslot[K, N, S], n)
	for i := range old {
		if s := &old[i]; s.c != nil {
			g.place(hf(s.k), s.k, s.c)
		}
	}
}

// sized returns an empty group with room for n entries without growing.
func sized[K, N comparable, S any](n int) flatGroup[K, N, S] {
	if n == 0 {
		return flatGroup[K, N, S]{}
	}
	c := 8
	for n*4 > c*3 {
		c *= 2
	}
	return flatGroup[K, N, S]{slots: make([]fslot[K, N, S], c)}
}

// deleteAt empties slot i, which must be full, shifting back the entries
// of its probe run that may move closer to their home slots.
func (g *flatGroup[K, N, S]) deleteAt(i int, hf func(entryKey[K, N]) uint64) {
	mask := len(g.slots) - 1
	j := i
	for {
		j = (j + 1) & mask
		s := &g.slots[j]
		if s.c == nil {
			break
		}
		home := int(hf(s.k)) & mask
		// s may move to i if i lies on its probe path, from home to j.
		if (j-home)&mask >= (j-i)&mask {
			g.slots[i] = *s
			i = j
		}
	}
	g.slots[i] = fslot[K, N, S]{}
	g.n--
}

// clone returns a copy of g with its own slot array.
func (g *flatGroup[K, N, S]) clone() flatGroup[K, N, S] {
	if g.slots == nil {
		return flatGroup[K, N, S]{}
	}
	s := make([]fslot[K, N, S], len(g.slots))
	copy(s, g.slots)
	return flatGroup[K, N, S]{slots: s, n: g.n}
}

// all yields the group's entries in slot order.
func (g *flatGroup[K, N, S]) all(yield func(entryKey[K, N], *cell[S]) bool) {
	for i := range g.slots {
		if s := &g.slots[i]; s.c != nil {
			if !yield(s.k, s.c) {
				return
			}
		}
	}
}
