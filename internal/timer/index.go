package timer

import (
	"hash/maphash"

	"github.com/weirstream/weir/internal/hashfn"
)

// index finds a queued timer's slot by the timer's identity (timestamp,
// key, namespace). It is an open-addressed table in the manner of keyed
// state's flat tables: linear probing over a power-of-two array of cells,
// a load of at most 3/4, backward-shift deletion (no tombstones), growth
// by doubling. A cell is 0 when empty, else the low 32 bits of the
// identity's hash (high half) and 1 + the slot number (low half). The
// identity itself is read from the queue's slot, and only when the hash
// bits match: probing past other timers, as an Add of a new timer does,
// reads no slot; moving a cell (growth, deletion) computes no hash.
type index struct {
	cells []uint64 // len 0 or a power of two
	n     int
}

// cell packs hash h and slot si into a cell.
func cell(h uint64, si int32) uint64 { return h<<32 | uint64(uint32(si+1)) }

// cellSlot is the slot number of full cell c.
func cellSlot(c uint64) int32 { return int32(uint32(c)) - 1 }

// full reports whether the index needs to grow before one more cell.
func (x *index) full() bool { return (x.n+1)*4 > len(x.cells)*3 }

// put stores the cell of hash h and slot si in the first empty cell of
// h's probe run; the index must have room.
func (x *index) put(h uint64, si int32) {
	mask := uint64(len(x.cells) - 1)
	i := h & mask
	for x.cells[i] != 0 {
		i = (i + 1) & mask
	}
	x.cells[i] = cell(h, si)
	x.n++
}

// grow doubles the cell array (to at least 8), moving the cells to their
// probe runs in the new one.
func (x *index) grow() {
	old := x.cells
	x.cells = make([]uint64, max(8, 2*len(old)))
	mask := uint64(len(x.cells) - 1)
	for _, c := range old {
		if c == 0 {
			continue
		}
		i := c >> 32 & mask
		for x.cells[i] != 0 {
			i = (i + 1) & mask
		}
		x.cells[i] = c
	}
}

// deleteAt empties cell i, which must be full, shifting back the cells of
// its probe run that may move closer to their home cells.
func (x *index) deleteAt(i int) {
	mask := len(x.cells) - 1
	j := i
	for {
		j = (j + 1) & mask
		c := x.cells[j]
		if c == 0 {
			break
		}
		home := int(c>>32) & mask
		// c may move to i if i lies on its probe path, from home to j.
		if (j-home)&mask >= (j-i)&mask {
			x.cells[i] = c
			i = j
		}
	}
	x.cells[i] = 0
	x.n--
}

// hasher returns the hash function of timer identities for a queue, seeded
// with a new seed: the key's hash combined with the salted timestamp and,
// unless the namespace is zero-size, with the namespace's hash.
func hasher[K comparable, N comparable]() func(ts int64, key K, ns N) uint64 {
	seed := maphash.MakeSeed()
	hk, _ := hashfn.For[K](seed)
	hn, nsZero := hashfn.For[N](seed)
	salt := maphash.Comparable(seed, uint64(1))
	if nsZero {
		return func(ts int64, key K, _ N) uint64 { return hashfn.Combine(hk(key), uint64(ts)^salt) }
	}
	return func(ts int64, key K, ns N) uint64 {
		return hashfn.Combine(hashfn.Combine(hk(key), uint64(ts)^salt), hn(ns))
	}
}

// find returns the position in the index of the timer (ts, key, ns) with
// hash h and its slot; if the timer is not queued, it returns the empty
// cell that ends h's probe run (-1 if the index has no cells) and -1.
func (q *Queue[K, N]) find(h uint64, ts int64, key K, ns N) (int, int32) {
	if len(q.ix.cells) == 0 {
		return -1, -1
	}
	mask := uint64(len(q.ix.cells) - 1)
	tag := h << 32
	for i := h & mask; ; i = (i + 1) & mask {
		c := q.ix.cells[i]
		if c == 0 {
			return int(i), -1
		}
		if c&^0xffffffff == tag {
			si := cellSlot(c)
			if t := &q.slots[si].timer; t.Timestamp == ts && t.Key == key && t.Namespace == ns {
				return int(i), si
			}
		}
	}
}
