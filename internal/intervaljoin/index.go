package intervaljoin

// ijIndex maps the join's keys to their slots: an open-addressing hash table
// with linear probing and backward-shift deletion, indexed by the key's
// hash (the one KeyBy partitions by, remixed: within one subtask the key
// groups, and so some bits of that hash, are fixed). One probe usually
// touches one cache line, where a Go map touches its control word and then
// the slot.
type ijIndex[K comparable] struct {
	ents  []ijIdxEnt[K] // power-of-two length
	n     int
	shift uint // 64 - log2(len(ents))
	hash  func(K) int32
}

type ijIdxEnt[K comparable] struct {
	key  K
	h    uint32
	slot int32 // slot + 1; 0 marks an empty entry
}

func newIJIndex[K comparable](hash func(K) int32) ijIndex[K] {
	return ijIndex[K]{ents: make([]ijIdxEnt[K], 8), shift: 64 - 3, hash: hash}
}

func (x *ijIndex[K]) home(h uint32) int { return int((uint64(h) * 0x9E3779B97F4A7C15) >> x.shift) }

// get returns the slot of k.
func (x *ijIndex[K]) get(k K) (int32, bool) {
	h := uint32(x.hash(k))
	mask := len(x.ents) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		e := &x.ents[i]
		if e.slot == 0 {
			return 0, false
		}
		if e.h == h && e.key == k {
			return e.slot - 1, true
		}
	}
}

// getOrPut returns the slot of k; if k has none it stores the slot newSlot
// returns.
func (x *ijIndex[K]) getOrPut(k K, newSlot func(K) int32) int32 {
	h := uint32(x.hash(k))
	mask := len(x.ents) - 1
	i := x.home(h)
	for ; ; i = (i + 1) & mask {
		e := &x.ents[i]
		if e.slot == 0 {
			break
		}
		if e.h == h && e.key == k {
			return e.slot - 1
		}
	}
	s := newSlot(k)
	if (x.n+1)*5 > len(x.ents)*4 {
		x.grow()
		x.insert(k, h, s)
	} else {
		x.ents[i] = ijIdxEnt[K]{k, h, s + 1}
		x.n++
	}
	return s
}

func (x *ijIndex[K]) insert(k K, h uint32, s int32) {
	mask := len(x.ents) - 1
	i := x.home(h)
	for x.ents[i].slot != 0 {
		i = (i + 1) & mask
	}
	x.ents[i] = ijIdxEnt[K]{k, h, s + 1}
	x.n++
}

func (x *ijIndex[K]) grow() {
	old := x.ents
	x.ents = make([]ijIdxEnt[K], 2*len(old))
	x.shift--
	x.n = 0
	for i := range old {
		if e := &old[i]; e.slot != 0 {
			x.insert(e.key, e.h, e.slot-1)
		}
	}
}

// delete removes k.
func (x *ijIndex[K]) delete(k K) {
	h := uint32(x.hash(k))
	mask := len(x.ents) - 1
	i := x.home(h)
	for {
		e := &x.ents[i]
		if e.slot == 0 {
			return
		}
		if e.h == h && e.key == k {
			break
		}
		i = (i + 1) & mask
	}
	// Backward shift: move each later entry of the run whose home is not
	// cyclically in (i, j] into the hole.
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := &x.ents[j]
		if e.slot == 0 {
			break
		}
		hj := x.home(e.h)
		if (j > i && (hj <= i || hj > j)) || (j < i && hj <= i && hj > j) {
			x.ents[i] = *e
			i = j
		}
	}
	x.ents[i] = ijIdxEnt[K]{}
	x.n--
}

// len returns the number of keys.
func (x *ijIndex[K]) len() int { return x.n }

// all yields every key and its slot.
func (x *ijIndex[K]) all(yield func(K, int32)) {
	for i := range x.ents {
		if e := &x.ents[i]; e.slot != 0 {
			yield(e.key, e.slot-1)
		}
	}
}
