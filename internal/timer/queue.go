// Package timer implements Flink's InternalTimerService semantics: keyed,
// namespaced timers in an event-time and a processing-time domain, each held
// in a de-duplicating priority queue and fired in timestamp order when the
// watermark or the processing time advances.
package timer

import (
	"iter"
	"slices"
	"sort"

	"github.com/weirstream/weir/internal/invariants"
)

// Timer is a timer registered for a key and namespace. Its identity is
// (Timestamp, Key, Namespace); KeyGroup is carried along so timers can be
// snapshotted and restored per key group.
type Timer[K comparable, N comparable] struct {
	// Timestamp is the time, in milliseconds, at which the timer fires.
	Timestamp int64
	// Key is the key the timer was registered under.
	Key K
	// Namespace is the timer's namespace (for example a window).
	Namespace N
	// KeyGroup is the key group of Key.
	KeyGroup int
}

// ident is the identity of a timer.
type ident[K comparable, N comparable] struct {
	ts  int64
	key K
	ns  N
}

// slot holds one queued timer.
type slot[K comparable, N comparable] struct {
	timer Timer[K, N]
	seq   uint64  // registration order, breaks timestamp ties
	b     *bucket // the bucket of timer.Timestamp, set while the slot is queued
	live  bool    // false once deleted; the slot is freed when its bucket passes it
}

// entry names a queued timer for snapshots: its timestamp, registration
// number and slot.
type entry struct {
	ts   int64
	seq  uint64
	slot int
}

// bucket holds the timers of one timestamp in registration order.
type bucket struct {
	ts    int64
	items []int // slot indices, ascending seq; items[:head] are gone
	head  int
	live  int // live timers in items[head:]
	pos   int // index in Queue.heap
}

// Queue is a priority set of timers ordered by timestamp, ties broken by
// registration order (so the order is deterministic), and de-duplicated on
// (Timestamp, Key, Namespace).
//
// Timers with the same timestamp share a bucket, a FIFO of slot indices in
// registration order; a binary heap orders the buckets by timestamp. Window
// and cleanup timers of many keys usually share a few timestamps, so adding
// and polling are then O(1) (a map lookup and an append or a pop); with
// distinct timestamps they are O(log n) as in a plain heap. An index map
// finds a timer's slot for de-duplication and Delete, which only marks the
// slot dead: the slot is freed when its bucket's head passes it or the
// bucket empties. Slots and buckets are recycled, so steady-state operation
// does not allocate beyond map growth.
//
// The zero Queue is empty and ready to use. A Queue is not safe for
// concurrent use.
type Queue[K comparable, N comparable] struct {
	slots   []slot[K, N]
	free    []int
	index   map[ident[K, N]]int
	buckets map[int64]*bucket // the buckets by timestamp
	heap    []*bucket         // min-heap of the buckets by timestamp
	spare   []*bucket
	last    *bucket // the bucket of the latest Add, to skip a map lookup
	n       int
	seq     uint64
	checks  uint64 // changes seen by check (the invariants build tag)
}

// NewQueue returns an empty queue.
func NewQueue[K comparable, N comparable]() *Queue[K, N] {
	return &Queue[K, N]{index: make(map[ident[K, N]]int), buckets: make(map[int64]*bucket)}
}

// Len returns the number of queued timers.
func (q *Queue[K, N]) Len() int { return q.n }

// Add queues t and reports true, unless a timer with the same timestamp, key
// and namespace is already queued, in which case it changes nothing (not
// even the queued timer's KeyGroup) and reports false.
func (q *Queue[K, N]) Add(t Timer[K, N]) bool { return q.add(t, 0) }

// add is Add with the registration number seq of the timer, which orders
// ties; 0 means the next number. A restore passes the number the timer
// had in the snapshotted queue, so ties keep their order.
func (q *Queue[K, N]) add(t Timer[K, N], seq uint64) bool {
	id := ident[K, N]{t.Timestamp, t.Key, t.Namespace}
	if q.index == nil {
		q.index = make(map[ident[K, N]]int)
		q.buckets = make(map[int64]*bucket)
	} else if _, ok := q.index[id]; ok {
		return false
	}
	var si int
	if n := len(q.free); n > 0 {
		si = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		si = len(q.slots)
		q.slots = append(q.slots, slot[K, N]{})
	}
	if seq == 0 {
		q.seq++
		seq = q.seq
	} else if seq > q.seq {
		q.seq = seq
	}
	b := q.bucketFor(t.Timestamp)
	q.slots[si] = slot[K, N]{timer: t, seq: seq, b: b, live: true}
	q.index[id] = si
	q.n++
	if k := len(b.items); k > b.head && q.slots[b.items[k-1]].seq > seq {
		// An older registration number (restores only): keep seq order.
		i := b.head + sort.Search(k-b.head, func(i int) bool { return q.slots[b.items[b.head+i]].seq > seq })
		b.items = slices.Insert(b.items, i, si)
	} else {
		b.items = append(b.items, si)
	}
	b.live++
	if invariants.Enabled {
		q.check()
	}
	return true
}

// bucketFor returns the live bucket of ts, creating it if needed.
func (q *Queue[K, N]) bucketFor(ts int64) *bucket {
	if b := q.last; b != nil && b.ts == ts {
		return b
	}
	b := q.buckets[ts]
	if b == nil {
		if n := len(q.spare); n > 0 {
			b = q.spare[n-1]
			q.spare = q.spare[:n-1]
		} else {
			b = &bucket{}
		}
		b.ts = ts
		q.buckets[ts] = b
		q.push(b)
	}
	q.last = b
	return b
}

// Contains reports whether a timer with timestamp ts, key and namespace ns
// is queued.
func (q *Queue[K, N]) Contains(ts int64, key K, ns N) bool {
	_, ok := q.index[ident[K, N]{ts, key, ns}]
	return ok
}

// Delete removes the timer with timestamp ts, key and namespace ns and
// reports whether it was queued.
func (q *Queue[K, N]) Delete(ts int64, key K, ns N) bool {
	id := ident[K, N]{ts, key, ns}
	si, ok := q.index[id]
	if !ok {
		return false
	}
	delete(q.index, id)
	s := &q.slots[si]
	s.live = false
	b := s.b
	q.n--
	if b.live--; b.live == 0 {
		q.release(b)
	}
	if invariants.Enabled {
		q.check()
	}
	return true
}

// release frees the slots left in b (all dead), removes b from the
// buckets and the heap and recycles it.
func (q *Queue[K, N]) release(b *bucket) {
	for _, si := range b.items[b.head:] {
		q.freeSlot(si)
	}
	delete(q.buckets, b.ts)
	if q.last == b {
		q.last = nil
	}
	q.remove(b.pos)
	b.items, b.head, b.live = b.items[:0], 0, 0
	q.spare = append(q.spare, b)
}

func (q *Queue[K, N]) freeSlot(si int) {
	q.slots[si] = slot[K, N]{} // drop references held by the key and namespace
	q.free = append(q.free, si)
}

// front returns the bucket of the earliest timer, its head on a live slot,
// or nil if the queue is empty.
func (q *Queue[K, N]) front() *bucket {
	if len(q.heap) == 0 {
		return nil
	}
	b := q.heap[0]
	for !q.slots[b.items[b.head]].live {
		q.freeSlot(b.items[b.head])
		b.head++
	}
	return b
}

// Peek returns the earliest timer without removing it; ok is false if the
// queue is empty.
func (q *Queue[K, N]) Peek() (t Timer[K, N], ok bool) {
	b := q.front()
	if b == nil {
		return t, false
	}
	return q.slots[b.items[b.head]].timer, true
}

// Poll removes and returns the earliest timer; ok is false if the queue is
// empty.
func (q *Queue[K, N]) Poll() (t Timer[K, N], ok bool) {
	b := q.front()
	if b == nil {
		return t, false
	}
	si := b.items[b.head]
	t = q.slots[si].timer
	delete(q.index, ident[K, N]{t.Timestamp, t.Key, t.Namespace})
	q.freeSlot(si)
	b.head++
	q.n--
	if b.live--; b.live == 0 {
		q.release(b)
	}
	if invariants.Enabled {
		q.check()
	}
	return t, true
}

// All yields every queued timer, in timestamp order (ties in registration
// order). The queue must not be modified during the iteration.
func (q *Queue[K, N]) All() iter.Seq[Timer[K, N]] {
	return func(yield func(Timer[K, N]) bool) {
		for e := range q.entries() {
			if !yield(q.slots[e.slot].timer) {
				return
			}
		}
	}
}

// entries yields every queued timer's entry in queue order (timestamp,
// then registration number), so snapshots are deterministic.
func (q *Queue[K, N]) entries() iter.Seq[entry] {
	return func(yield func(entry) bool) {
		times := make([]int64, 0, len(q.buckets))
		for ts := range q.buckets {
			times = append(times, ts)
		}
		slices.Sort(times)
		for _, ts := range times {
			b := q.buckets[ts]
			for _, si := range b.items[b.head:] {
				if s := &q.slots[si]; s.live && !yield(entry{ts: b.ts, seq: s.seq, slot: si}) {
					return
				}
			}
		}
	}
}

// push adds b to the heap.
func (q *Queue[K, N]) push(b *bucket) {
	b.pos = len(q.heap)
	q.heap = append(q.heap, b)
	q.up(b.pos)
}

// remove removes the bucket at heap position i.
func (q *Queue[K, N]) remove(i int) {
	h := q.heap
	n := len(h) - 1
	if i != n {
		h[i] = h[n]
		h[i].pos = i
	}
	h[n] = nil
	q.heap = h[:n]
	if i != n && !q.down(i) {
		q.up(i)
	}
}

// up moves the bucket at heap position i towards the root.
func (q *Queue[K, N]) up(i int) {
	h := q.heap
	b := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if h[p].ts <= b.ts {
			break
		}
		h[i] = h[p]
		h[i].pos = i
		i = p
	}
	h[i] = b
	b.pos = i
}

// down moves the bucket at heap position i towards the leaves and reports
// whether it moved.
func (q *Queue[K, N]) down(i int) bool {
	h := q.heap
	n := len(h)
	b := h[i]
	start := i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].ts < h[c].ts {
			c++
		}
		if b.ts <= h[c].ts {
			break
		}
		h[i] = h[c]
		h[i].pos = i
		i = c
	}
	h[i] = b
	b.pos = i
	return i > start
}

// check verifies the queue's structure (the invariants build tag): the
// heap orders the buckets by timestamp and knows their positions, the
// bucket map holds exactly the heap's buckets, every bucket's live slots
// are in registration order with its count, and the index names exactly
// the live slots. It runs in full while the queue is small and on every
// 1024th change otherwise, so that large queues stay usable.
func (q *Queue[K, N]) check() {
	q.checks++
	if q.n > 256 && q.checks%1024 != 0 {
		return
	}
	if len(q.heap) != len(q.buckets) {
		invariants.Violated("timer queue: %d buckets in the heap, %d in the map", len(q.heap), len(q.buckets))
	}
	live := 0
	for i, b := range q.heap {
		if b.pos != i {
			invariants.Violated("timer queue: bucket %d at heap position %d records position %d", b.ts, i, b.pos)
		}
		if i > 0 && q.heap[(i-1)/2].ts > b.ts {
			invariants.Violated("timer queue: bucket %d below bucket %d in the heap", b.ts, q.heap[(i-1)/2].ts)
		}
		if q.buckets[b.ts] != b {
			invariants.Violated("timer queue: the bucket map does not hold the heap's bucket %d", b.ts)
		}
		n, last := 0, uint64(0)
		for _, si := range b.items[b.head:] {
			s := &q.slots[si]
			if !s.live {
				continue
			}
			if s.b != b || s.timer.Timestamp != b.ts {
				invariants.Violated("timer queue: slot %d (timestamp %d) queued in bucket %d", si, s.timer.Timestamp, b.ts)
			}
			if s.seq < last { // equal numbers: timers merged from several old subtasks
				invariants.Violated("timer queue: bucket %d out of registration order (%d after %d)", b.ts, s.seq, last)
			}
			if got, ok := q.index[ident[K, N]{s.timer.Timestamp, s.timer.Key, s.timer.Namespace}]; !ok || got != si {
				invariants.Violated("timer queue: live slot %d of bucket %d is not indexed", si, b.ts)
			}
			n, last = n+1, s.seq
		}
		if n != b.live || n == 0 {
			invariants.Violated("timer queue: bucket %d holds %d live timers, records %d", b.ts, n, b.live)
		}
		live += n
	}
	if live != q.n || len(q.index) != q.n {
		invariants.Violated("timer queue: %d live timers in buckets, %d indexed, length %d", live, len(q.index), q.n)
	}
}
