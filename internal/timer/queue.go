// Package timer implements Flink's InternalTimerService semantics: keyed,
// namespaced timers in an event-time and a processing-time domain, each held
// in a de-duplicating priority queue and fired in timestamp order when the
// watermark or the processing time advances.
package timer

import (
	"cmp"
	"iter"
	"slices"

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

// slot holds one registered timer.
type slot[K comparable, N comparable] struct {
	timer Timer[K, N]
	seq   uint64 // registration order, breaks timestamp ties
	live  bool   // false once deleted or polled; freed when its ref is dropped
}

// entry names a queued timer for snapshots: its timestamp, registration
// number and slot.
type entry struct {
	ts   int64
	seq  uint64
	slot int
}

// ref is a timer's place in the order: its timestamp and registration
// number (copied from its slot, so that ordering never reads a slot) and
// its slot. ord is its position in the pending list when it was added,
// which breaks ties of equal timestamps and numbers (restored timers of
// several old subtasks) in the order they were added.
type ref struct {
	ts   int64
	seq  uint64
	ord  uint32
	slot int32
}

// before reports whether a comes before b: by timestamp, then registration
// number. Equal pairs keep the order in which they were added.
func (a ref) before(b ref) bool { return a.ts < b.ts || (a.ts == b.ts && a.seq < b.seq) }

func cmpRef(a, b ref) int {
	switch {
	case a.ts != b.ts:
		return cmp.Compare(a.ts, b.ts)
	case a.seq != b.seq:
		return cmp.Compare(a.seq, b.seq)
	}
	return cmp.Compare(a.ord, b.ord)
}

// run is a sorted array of refs, consumed from its head.
type run struct {
	refs []ref
	head int
}

func (r *run) len() int { return len(r.refs) - r.head }

// Queue is a priority set of timers ordered by timestamp, ties broken by
// registration order (so the order is deterministic), and de-duplicated on
// (Timestamp, Key, Namespace).
//
// Timers are ordered lazily, for the way timers are used: most are
// registered between two watermarks (or clock advances) and fired, or
// deleted, in bulk. An added timer is appended to a pending list and only
// ordered when the earliest timer is asked for and the pending list may
// hold it: then the pending list's live timers are sorted into a run, and
// runs are merged so that each is at least twice the length of the next
// (a log-structured merge: O(log n) runs, each timer copied O(log n) times
// sequentially). The earliest timer is the least of the runs' heads.
// Ordering compares refs, which carry the timestamp and registration
// number, so it reads arrays in order instead of chasing pointers through a
// heap. An index (index.go) finds a timer's slot for de-duplication and Delete,
// which only marks the slot dead: its ref is dropped when a run's head
// passes it, when the pending list is sorted, or when dead refs outnumber
// live timers (compact). Slots and arrays are recycled, so steady-state
// operation does not allocate beyond growth.
//
// The zero Queue is empty and ready to use. A Queue is not safe for
// concurrent use.
type Queue[K comparable, N comparable] struct {
	slots   []slot[K, N]
	free    []int32
	ix      index                              // the slots of live timers by identity
	hash    func(ts int64, key K, ns N) uint64 // seeded per queue; nil until the first Add
	pend    []ref                              // added since the last sort, in registration order
	pendMin ref                                // the least of pend (valid while pend is not empty)
	runs    []run                              // sorted runs, oldest first; ties go to the older run
	spare   [][]ref
	minp    int // 1 + the index of the run with the earliest live head, 0 if not known
	n       int // live timers
	dead    int // refs (pending or in runs) to deleted timers
	seq     uint64
	checks  uint64 // changes seen by check (the invariants build tag)
}

// NewQueue returns an empty queue.
func NewQueue[K comparable, N comparable]() *Queue[K, N] {
	return &Queue[K, N]{}
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
	if q.hash == nil {
		q.hash = hasher[K, N]()
	}
	h := q.hash(t.Timestamp, t.Key, t.Namespace)
	pos, si := q.find(h, t.Timestamp, t.Key, t.Namespace)
	if si >= 0 {
		return false
	}
	if n := len(q.free); n > 0 {
		si = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		si = int32(len(q.slots))
		q.slots = append(q.slots, slot[K, N]{})
	}
	if seq == 0 {
		q.seq++
		seq = q.seq
	} else if seq > q.seq {
		q.seq = seq
	}
	q.slots[si] = slot[K, N]{timer: t, seq: seq, live: true}
	if q.ix.full() {
		q.ix.grow()
		q.ix.put(h, si)
	} else {
		q.ix.cells[pos] = cell(h, si)
		q.ix.n++
	}
	q.n++
	r := ref{ts: t.Timestamp, seq: seq, ord: uint32(len(q.pend)), slot: si}
	if len(q.pend) == 0 || r.before(q.pendMin) {
		q.pendMin = r
	}
	q.pend = append(q.pend, r)
	if invariants.Enabled {
		q.check()
	}
	return true
}

// Contains reports whether a timer with timestamp ts, key and namespace ns
// is queued.
func (q *Queue[K, N]) Contains(ts int64, key K, ns N) bool {
	if q.ix.n == 0 {
		return false
	}
	_, si := q.find(q.hash(ts, key, ns), ts, key, ns)
	return si >= 0
}

// Delete removes the timer with timestamp ts, key and namespace ns and
// reports whether it was queued.
func (q *Queue[K, N]) Delete(ts int64, key K, ns N) bool {
	if q.ix.n == 0 {
		return false
	}
	pos, si := q.find(q.hash(ts, key, ns), ts, key, ns)
	if si < 0 {
		return false
	}
	q.ix.deleteAt(pos)
	q.slots[si].live = false
	q.n--
	q.dead++
	if q.dead > q.n+compactSlack {
		q.compact()
	}
	if invariants.Enabled {
		q.check()
	}
	return true
}

// compactSlack is how many more dead refs than live timers a queue keeps
// before it drops them all (compact), so that memory stays within about
// twice the live timers and compacting costs O(1) per Delete.
const compactSlack = 1024

func (q *Queue[K, N]) freeSlot(si int32) {
	q.slots[si] = slot[K, N]{} // drop references held by the key and namespace
	q.free = append(q.free, si)
}

// keepLive drops the refs of dead timers from rs, freeing their slots, and
// returns the rest in order.
func (q *Queue[K, N]) keepLive(rs []ref) []ref {
	out := rs[:0]
	for _, r := range rs {
		if q.slots[r.slot].live {
			out = append(out, r)
		} else {
			q.freeSlot(r.slot)
			q.dead--
		}
	}
	return out
}

// compact drops every dead ref, pending or in runs.
func (q *Queue[K, N]) compact() {
	q.pend = q.keepLive(q.pend)
	q.pendMin = ref{}
	for i, r := range q.pend {
		q.pend[i].ord = uint32(i)
		if i == 0 || r.before(q.pendMin) {
			q.pendMin = r
		}
	}
	runs := q.runs[:0]
	for _, r := range q.runs {
		r.refs = q.keepLive(r.refs[r.head:])
		r.head = 0
		if len(r.refs) == 0 {
			q.recycle(r.refs)
			continue
		}
		runs = append(runs, r)
	}
	clear(q.runs[len(runs):])
	q.runs = runs
	q.minp = 0
	q.normalize()
}

// buffer returns an empty array with room for n refs, recycled if one is
// spare.
func (q *Queue[K, N]) buffer(n int) []ref {
	best := -1
	for i, b := range q.spare {
		if cap(b) >= n && (best < 0 || cap(b) < cap(q.spare[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]ref, 0, n+n/4)
	}
	return q.takeSpare(best)
}

// takeSpare removes spare array i and returns it emptied.
func (q *Queue[K, N]) takeSpare(i int) []ref {
	b := q.spare[i]
	last := len(q.spare) - 1
	q.spare[i] = q.spare[last]
	q.spare[last] = nil
	q.spare = q.spare[:last]
	return b[:0]
}

// recycle keeps b for a later buffer; of more than maxSpare arrays the
// smallest is dropped.
func (q *Queue[K, N]) recycle(b []ref) {
	if cap(b) == 0 {
		return
	}
	if len(q.spare) < maxSpare {
		q.spare = append(q.spare, b[:0])
		return
	}
	small := 0
	for i, s := range q.spare {
		if cap(s) < cap(q.spare[small]) {
			small = i
		}
	}
	if cap(q.spare[small]) < cap(b) {
		q.spare[small] = b[:0]
	}
}

const maxSpare = 8

// sortPending turns the pending list's live timers into the newest run.
func (q *Queue[K, N]) sortPending() {
	p := q.keepLive(q.pend)
	if len(p) == 0 {
		q.pend = p
		return
	}
	if !slices.IsSortedFunc(p, cmpRef) {
		slices.SortFunc(p, cmpRef)
	}
	q.runs = append(q.runs, run{refs: p})
	q.pend = q.largestSpare()
	q.minp = 0
	q.normalize()
}

// largestSpare takes the largest spare array (the pending list refills to
// about the size it had), or returns nil.
func (q *Queue[K, N]) largestSpare() []ref {
	if len(q.spare) == 0 {
		return nil
	}
	big := 0
	for i, s := range q.spare {
		if cap(s) > cap(q.spare[big]) {
			big = i
		}
	}
	return q.takeSpare(big)
}

// normalize merges the newest runs while one is not at least twice the
// length of the run after it, so that there are O(log n) runs.
func (q *Queue[K, N]) normalize() {
	for k := len(q.runs); k >= 2 && q.runs[k-2].len() <= 2*q.runs[k-1].len(); k = len(q.runs) {
		q.mergeLast()
	}
}

// mergeLast merges the two newest runs into one, dropping dead refs; on
// ties the older run's ref comes first.
func (q *Queue[K, N]) mergeLast() {
	k := len(q.runs)
	a, b := q.runs[k-2], q.runs[k-1]
	x, y := a.refs[a.head:], b.refs[b.head:]
	out := q.buffer(len(x) + len(y))
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		var r ref
		if y[j].before(x[i]) {
			r = y[j]
			j++
		} else {
			r = x[i]
			i++
		}
		if q.slots[r.slot].live {
			out = append(out, r)
		} else {
			q.freeSlot(r.slot)
			q.dead--
		}
	}
	out = append(out, q.keepLive(x[i:])...)
	out = append(out, q.keepLive(y[j:])...)
	q.recycle(a.refs)
	q.recycle(b.refs)
	q.runs[k-1] = run{}
	q.runs = q.runs[:k-1]
	if len(out) == 0 {
		q.recycle(out)
		q.runs[k-2] = run{}
		q.runs = q.runs[:k-2]
	} else {
		q.runs[k-2] = run{refs: out}
	}
	q.minp = 0
}

// dropRun removes run i, which is empty, keeping the others' order.
func (q *Queue[K, N]) dropRun(i int) {
	q.recycle(q.runs[i].refs)
	q.runs = slices.Delete(q.runs, i, i+1)
	q.minp = 0
}

// minRun returns the index of the run whose head is the earliest live
// timer of the runs, dropping dead heads and empty runs, or -1 if the runs
// hold no live timer.
func (q *Queue[K, N]) minRun() int {
	if i := q.minp - 1; i >= 0 {
		if r := &q.runs[i]; q.slots[r.refs[r.head].slot].live {
			return i
		}
	}
	best := -1
	for i := 0; i < len(q.runs); {
		r := &q.runs[i]
		for r.head < len(r.refs) && !q.slots[r.refs[r.head].slot].live {
			q.freeSlot(r.refs[r.head].slot)
			q.dead--
			r.head++
		}
		if r.head == len(r.refs) {
			q.dropRun(i)
			if best > i {
				best--
			}
			continue
		}
		if best < 0 || r.refs[r.head].before(q.runs[best].refs[q.runs[best].head]) {
			best = i
		}
		i++
	}
	q.minp = best + 1
	return best
}

// front returns the index of the run whose head is the earliest queued
// timer, sorting the pending list first if it may hold it, or -1 if the
// queue is empty.
func (q *Queue[K, N]) front() int {
	if q.n == 0 {
		return -1
	}
	i := q.minRun()
	if len(q.pend) > 0 && (i < 0 || q.pendMin.before(q.runs[i].refs[q.runs[i].head])) {
		q.sortPending()
		i = q.minRun()
	}
	return i
}

// Peek returns the earliest timer without removing it; ok is false if the
// queue is empty.
func (q *Queue[K, N]) Peek() (t Timer[K, N], ok bool) {
	i := q.front()
	if i < 0 {
		return t, false
	}
	r := &q.runs[i]
	return q.slots[r.refs[r.head].slot].timer, true
}

// Poll removes and returns the earliest timer; ok is false if the queue is
// empty.
func (q *Queue[K, N]) Poll() (t Timer[K, N], ok bool) {
	i := q.front()
	if i < 0 {
		return t, false
	}
	r := &q.runs[i]
	si := r.refs[r.head].slot
	t = q.slots[si].timer
	pos, _ := q.find(q.hash(t.Timestamp, t.Key, t.Namespace), t.Timestamp, t.Key, t.Namespace)
	q.ix.deleteAt(pos)
	q.freeSlot(si)
	r.head++
	q.n--
	q.minp = 0
	if r.head == len(r.refs) {
		q.dropRun(i)
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
// then registration number), so snapshots are deterministic. It first
// sorts the pending timers and merges all runs into one.
func (q *Queue[K, N]) entries() iter.Seq[entry] {
	return func(yield func(entry) bool) {
		if len(q.pend) > 0 {
			q.sortPending()
		}
		for len(q.runs) > 1 {
			q.mergeLast()
		}
		if len(q.runs) == 0 {
			return
		}
		r := q.runs[0]
		for _, x := range r.refs[r.head:] {
			if q.slots[x.slot].live && !yield(entry{ts: x.ts, seq: x.seq, slot: int(x.slot)}) {
				return
			}
		}
	}
}

// check verifies the queue's structure (the invariants build tag): every
// run is in order, every ref carries its slot's timestamp and number, the
// live refs are exactly the indexed timers, and the counts of live timers
// and dead refs are right. It runs in full while the queue is small and on
// every 1024th change otherwise, so that large queues stay usable.
func (q *Queue[K, N]) check() {
	q.checks++
	if q.n > 256 && q.checks%1024 != 0 {
		return
	}
	live, dead := 0, 0
	visit := func(where string, r ref) {
		s := &q.slots[r.slot]
		if !s.live {
			dead++
			return
		}
		live++
		if s.timer.Timestamp != r.ts || s.seq != r.seq {
			invariants.Violated("timer queue: %s ref (%d, %d) names slot %d holding (%d, %d)", where, r.ts, r.seq, r.slot, s.timer.Timestamp, s.seq)
		}
		if _, got := q.find(q.hash(s.timer.Timestamp, s.timer.Key, s.timer.Namespace), s.timer.Timestamp, s.timer.Key, s.timer.Namespace); got != r.slot {
			invariants.Violated("timer queue: live slot %d (timestamp %d) is not indexed", r.slot, r.ts)
		}
	}
	for i, r := range q.pend {
		visit("pending", r)
		if r.before(q.pendMin) {
			invariants.Violated("timer queue: pending timer %d before the pending minimum %d", r.ts, q.pendMin.ts)
		}
		if r.ord != uint32(i) {
			invariants.Violated("timer queue: pending ref %d records position %d", i, r.ord)
		}
	}
	for i := range q.runs {
		rs := q.runs[i].refs[q.runs[i].head:]
		if len(rs) == 0 {
			invariants.Violated("timer queue: run %d is empty", i)
		}
		for j, r := range rs {
			visit("run", r)
			if j > 0 && r.before(rs[j-1]) {
				invariants.Violated("timer queue: run %d out of order (%d, %d) after (%d, %d)", i, r.ts, r.seq, rs[j-1].ts, rs[j-1].seq)
			}
		}
	}
	if live != q.n || q.ix.n != q.n {
		invariants.Violated("timer queue: %d live timers in runs and pending, %d indexed, length %d", live, q.ix.n, q.n)
	}
	if dead != q.dead {
		invariants.Violated("timer queue: %d dead refs, %d counted", dead, q.dead)
	}
	cells := 0
	for i, c := range q.ix.cells {
		if c == 0 {
			continue
		}
		cells++
		t := &q.slots[cellSlot(c)].timer
		if h := q.hash(t.Timestamp, t.Key, t.Namespace); c != cell(h, cellSlot(c)) {
			invariants.Violated("timer queue: index cell %d holds hash bits %#x, its timer's are %#x", i, c>>32, uint32(h))
		}
	}
	if cells != q.ix.n || cells*4 > len(q.ix.cells)*3 {
		invariants.Violated("timer queue: %d index cells of %d full, %d counted", cells, len(q.ix.cells), q.ix.n)
	}
}
