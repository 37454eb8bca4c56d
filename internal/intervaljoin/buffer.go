package intervaljoin

// The interval join's own keyed storage (replacing two keyed value states
// and one timer-service timer per buffered record):
//
//   - ijIndex (index.go) maps each key with buffered records
//     to a slot of a paged slab; the slot holds both sides' buffers, so a
//     record costs one lookup.
//   - ijBuf is one side's buffer of one key: a slice of (ts, value) entries
//     ordered by timestamp, equal timestamps (a Flink "bucket") in arrival
//     order. Cleanups always take the oldest bucket, so removal advances a
//     head index; the dead prefix is reused by compaction, not reallocated.
//   - ijQueue is one side's pending cleanups, the equivalent of Flink's
//     CLEANUP_LEFT / CLEANUP_RIGHT timers: time buckets (one per distinct
//     cleanup time, sorted) each holding a FIFO list of nodes (one per
//     (key, bucket), de-duplicated as the timers are because a node is
//     queued exactly when its bucket is created). A node carries the
//     registration number the timer would have had, so the two sides'
//     queues merge into exactly the timer service's firing order: timestamp,
//     then registration order.
//
// Nothing allocates per record in steady state: the slabs recycle slots and
// nodes through free lists, a key's slices keep their arrays.

import "sort"

// ijEntry is a buffered record.
type ijEntry[T any] struct {
	ts int64
	v  T
}

// ijBuf holds one key's records of one side, ordered by timestamp; the live
// entries are es[head:]. The joined flags of a side whose unmatched records
// an outer join emits live apart (ijFlags), parallel to es; the methods
// take them as jf, nil for an untracked side.
type ijBuf[T any] struct {
	es   []ijEntry[T]
	head int32
	// idle (used in the left buffer only) marks a key whose buffers became
	// empty; its slot is freed at the next watermark if they still are
	// (so keys that come back soon keep their slot and arrays).
	idle bool
}

// ijFlags are the joined flags of both sides of one key.
type ijFlags struct{ l, r []bool }

func (b *ijBuf[T]) empty() bool { return int(b.head) == len(b.es) }

// live returns the number of live entries.
func (b *ijBuf[T]) live() int { return len(b.es) - int(b.head) }

// search returns the index of the first live entry with ts >= t.
func (b *ijBuf[T]) search(t int64) int {
	es := b.es
	lo, hi := int(b.head), len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].ts < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// add buffers v at ts after the entries with the same timestamp and reports
// whether it opened a new bucket (no live entry had timestamp ts).
func (b *ijBuf[T]) add(ts int64, v *T, joined bool, jf *[]bool) bool {
	n := len(b.es)
	if n == cap(b.es) && b.head > 0 && int(b.head) >= n/4 {
		b.compact(jf)
		n = len(b.es)
	}
	if n == int(b.head) || b.es[n-1].ts <= ts {
		fresh := n == int(b.head) || b.es[n-1].ts < ts
		b.es = append(b.es, ijEntry[T]{ts, *v})
		if jf != nil {
			*jf = append(*jf, joined)
		}
		return fresh
	}
	p := b.search(ts + 1) // after the bucket ts, if any
	fresh := p == int(b.head) || b.es[p-1].ts != ts
	b.es = append(b.es, ijEntry[T]{})
	copy(b.es[p+1:], b.es[p:])
	b.es[p] = ijEntry[T]{ts, *v}
	if jf != nil {
		f := append(*jf, false)
		copy(f[p+1:], f[p:])
		f[p] = joined
		*jf = f
	}
	return fresh
}

// bucket returns the live index range [i, j) of the entries with
// timestamp ts.
func (b *ijBuf[T]) bucket(ts int64) (i, j int) {
	i = int(b.head)
	if i == len(b.es) || b.es[i].ts != ts {
		i = b.search(ts)
	}
	j = i
	for j < len(b.es) && b.es[j].ts == ts {
		j++
	}
	return i, j
}

// removeRange drops the live entries [i, j).
func (b *ijBuf[T]) removeRange(i, j int, jf *[]bool) {
	if i == j {
		return
	}
	if i != int(b.head) {
		n := copy(b.es[i:], b.es[j:])
		clear(b.es[i+n:])
		b.es = b.es[:i+n]
		if jf != nil {
			copy((*jf)[i:], (*jf)[j:])
			*jf = (*jf)[:i+n]
		}
		return
	}
	clear(b.es[i:j]) // drop references for the garbage collector
	b.head = int32(j)
	if j == len(b.es) {
		b.es, b.head = b.es[:0], 0
		if jf != nil {
			*jf = (*jf)[:0]
		}
	}
}

// compact moves the live entries to the front of the array.
func (b *ijBuf[T]) compact(jf *[]bool) {
	n := copy(b.es, b.es[b.head:])
	clear(b.es[n:])
	b.es = b.es[:n]
	if jf != nil {
		copy(*jf, (*jf)[b.head:])
		*jf = (*jf)[:n]
	}
	b.head = 0
}

// reset empties the buffer, keeping a small array for the next key.
func (b *ijBuf[T]) reset(jf *[]bool) {
	clear(b.es)
	if cap(b.es) > 16 {
		b.es = nil
		if jf != nil {
			*jf = nil
		}
	} else {
		b.es = b.es[:0]
		if jf != nil {
			*jf = (*jf)[:0]
		}
	}
	b.head = 0
}

// ijKey is the slot of one key: both sides' buffers.
type ijKey[K comparable, L, R any] struct {
	key   K
	left  ijBuf[L]
	right ijBuf[R]
}

const ijPageBits = 10

// ijSlab is a paged slab: index i is element i&mask of page i>>bits, so it
// grows without copying and without the slack of a doubling slice.
type ijSlab[T any] struct {
	pages [][]T
	n     int32 // elements handed out (free or not)
	free  []int32
}

func (s *ijSlab[T]) at(i int32) *T { return &s.pages[i>>ijPageBits][i&(1<<ijPageBits-1)] }

// alloc returns a free index; its element is the zero T or what release
// left in it.
func (s *ijSlab[T]) alloc() int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	i := s.n
	if int(i>>ijPageBits) == len(s.pages) {
		s.pages = append(s.pages, make([]T, 1<<ijPageBits))
	}
	s.n++
	return i
}

func (s *ijSlab[T]) release(i int32) { s.free = append(s.free, i) }

// ijNode is a pending cleanup: key slot and registration number.
type ijNode struct {
	seq  uint64
	slot int32
	next int32 // next node of the same time bucket, or -1
}

// ijTime is the list of nodes with one cleanup time.
type ijTime struct {
	ts          int64
	first, last int32
}

// ijQueue is one side's pending cleanups in firing order.
type ijQueue struct {
	times []ijTime // sorted by ts; live from th
	th    int
	hint  int // index of the last time bucket used, probably the next
	nodes ijSlab[ijNode]
	n     int // queued nodes
}

// find returns the index of the time bucket ts, creating it if needed.
func (q *ijQueue) find(ts int64) int {
	if h := q.hint; h >= q.th && h < len(q.times) && q.times[h].ts == ts {
		return h
	}
	n := len(q.times)
	if n == q.th || q.times[n-1].ts < ts {
		if n == cap(q.times) && q.th > 0 && q.th >= n/4 {
			q.compact()
			n = len(q.times)
		}
		q.times = append(q.times, ijTime{ts: ts, first: -1, last: -1})
		return n
	}
	if q.times[n-1].ts == ts {
		return n - 1
	}
	p := q.th + sort.Search(n-q.th, func(i int) bool { return q.times[q.th+i].ts >= ts })
	if q.times[p].ts == ts {
		return p
	}
	if p == q.th && q.th > 0 {
		q.th--
		q.times[q.th] = ijTime{ts: ts, first: -1, last: -1}
		return q.th
	}
	q.times = append(q.times, ijTime{})
	copy(q.times[p+1:], q.times[p:])
	q.times[p] = ijTime{ts: ts, first: -1, last: -1}
	return p
}

func (q *ijQueue) compact() {
	n := copy(q.times, q.times[q.th:])
	q.times = q.times[:n]
	q.hint -= q.th
	q.th = 0
}

// push queues a cleanup at ts for slot with registration number seq, after
// every queued cleanup at ts (pushes at one ts come in seq order, except
// on restore, which pushes in sorted order).
func (q *ijQueue) push(ts int64, slot int32, seq uint64) {
	t := q.find(ts)
	q.hint = t
	i := q.nodes.alloc()
	*q.nodes.at(i) = ijNode{seq: seq, slot: slot, next: -1}
	tb := &q.times[t]
	if tb.last < 0 {
		tb.first = i
	} else {
		q.nodes.at(tb.last).next = i
	}
	tb.last = i
	q.n++
}

// peek returns the earliest cleanup; ok is false if there is none.
func (q *ijQueue) peek() (ts int64, seq uint64, ok bool) {
	if q.th == len(q.times) {
		return 0, 0, false
	}
	tb := &q.times[q.th]
	return tb.ts, q.nodes.at(tb.first).seq, true
}

// pop removes the earliest cleanup and returns its time and slot.
func (q *ijQueue) pop() (ts int64, slot int32) {
	tb := &q.times[q.th]
	i := tb.first
	nd := q.nodes.at(i)
	ts, slot = tb.ts, nd.slot
	tb.first = nd.next
	q.nodes.release(i)
	q.n--
	if tb.first < 0 {
		q.th++
		if q.th == len(q.times) {
			q.times, q.th, q.hint = q.times[:0], 0, 0
		}
	}
	return ts, slot
}

// each yields every queued cleanup in firing order.
func (q *ijQueue) each(yield func(ts int64, seq uint64, slot int32)) {
	for _, tb := range q.times[q.th:] {
		for i := tb.first; i >= 0; {
			nd := q.nodes.at(i)
			yield(tb.ts, nd.seq, nd.slot)
			i = nd.next
		}
	}
}
