// Package timer implements Flink's InternalTimerService semantics: keyed,
// namespaced timers in an event-time and a processing-time domain, each held
// in a de-duplicating priority queue and fired in timestamp order when the
// watermark or the processing time advances.
package timer

import "iter"

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
	pos   int // index of the slot's entry in Queue.heap
}

// entry is a heap element. It copies the ordering fields out of the slot so
// that sifting compares contiguous memory.
type entry struct {
	ts   int64
	seq  uint64 // registration order, breaks timestamp ties
	slot int
}

// Queue is a priority set of timers ordered by timestamp, ties broken by
// registration order (so the order is deterministic), and de-duplicated on
// (Timestamp, Key, Namespace). Add, Delete and Poll take O(log n) time.
//
// Timers live in a slice of slots recycled through a free list; the binary
// heap holds (timestamp, registration number, slot index) entries and an
// index map finds a timer's slot, so steady state operation does not
// allocate beyond map growth.
//
// The zero Queue is empty and ready to use. A Queue is not safe for
// concurrent use.
type Queue[K comparable, N comparable] struct {
	slots []slot[K, N]
	free  []int
	heap  []entry
	index map[ident[K, N]]int
	seq   uint64
}

// NewQueue returns an empty queue.
func NewQueue[K comparable, N comparable]() *Queue[K, N] {
	return &Queue[K, N]{index: make(map[ident[K, N]]int)}
}

// Len returns the number of queued timers.
func (q *Queue[K, N]) Len() int { return len(q.heap) }

// Add queues t and reports true, unless a timer with the same timestamp, key
// and namespace is already queued, in which case it changes nothing (not
// even the queued timer's KeyGroup) and reports false.
func (q *Queue[K, N]) Add(t Timer[K, N]) bool { return q.add(t, 0) }

// add is Add with the registration number seq of the timer, which orders
// ties; 0 means the next number. A restore passes the number the timer
// had in the snapshotted queue, so ties keep their order.
func (q *Queue[K, N]) add(t Timer[K, N], seq uint64) bool {
	id := ident[K, N]{t.Timestamp, t.Key, t.Namespace}
	if _, ok := q.index[id]; ok {
		return false
	}
	if q.index == nil {
		q.index = make(map[ident[K, N]]int)
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
	q.slots[si] = slot[K, N]{timer: t, pos: len(q.heap)}
	q.heap = append(q.heap, entry{ts: t.Timestamp, seq: seq, slot: si})
	q.index[id] = si
	q.up(len(q.heap) - 1)
	return true
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
	si, ok := q.index[ident[K, N]{ts, key, ns}]
	if !ok {
		return false
	}
	q.removeAt(q.slots[si].pos)
	return true
}

// Peek returns the earliest timer without removing it; ok is false if the
// queue is empty.
func (q *Queue[K, N]) Peek() (t Timer[K, N], ok bool) {
	if len(q.heap) == 0 {
		return t, false
	}
	return q.slots[q.heap[0].slot].timer, true
}

// Poll removes and returns the earliest timer; ok is false if the queue is
// empty.
func (q *Queue[K, N]) Poll() (t Timer[K, N], ok bool) {
	if len(q.heap) == 0 {
		return t, false
	}
	return q.removeAt(0), true
}

// All yields every queued timer, in no particular order. The queue must not
// be modified during the iteration.
func (q *Queue[K, N]) All() iter.Seq[Timer[K, N]] {
	return func(yield func(Timer[K, N]) bool) {
		for _, e := range q.heap {
			if !yield(q.slots[e.slot].timer) {
				return
			}
		}
	}
}

// removeAt removes the heap entry at pos, frees its slot and returns its
// timer.
func (q *Queue[K, N]) removeAt(pos int) Timer[K, N] {
	si := q.heap[pos].slot
	t := q.slots[si].timer
	last := len(q.heap) - 1
	if pos != last {
		q.swap(pos, last)
	}
	q.heap = q.heap[:last]
	if pos != last {
		if !q.down(pos) {
			q.up(pos)
		}
	}
	delete(q.index, ident[K, N]{t.Timestamp, t.Key, t.Namespace})
	q.slots[si] = slot[K, N]{} // drop references held by the key and namespace
	q.free = append(q.free, si)
	return t
}

// less orders heap positions i and j by timestamp, then registration order.
func (q *Queue[K, N]) less(i, j int) bool {
	a, b := &q.heap[i], &q.heap[j]
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	return a.seq < b.seq
}

// swap exchanges heap positions i and j.
func (q *Queue[K, N]) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.slots[q.heap[i].slot].pos = i
	q.slots[q.heap[j].slot].pos = j
}

// up restores the heap order from position i towards the root.
func (q *Queue[K, N]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

// down restores the heap order from position i towards the leaves and
// reports whether the entry moved.
func (q *Queue[K, N]) down(i int) bool {
	start, n := i, len(q.heap)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && q.less(r, child) {
			child = r
		}
		if !q.less(child, i) {
			break
		}
		q.swap(i, child)
		i = child
	}
	return i > start
}
