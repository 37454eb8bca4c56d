package asyncio

// A queue holds the operator's entries from their arrival until they are
// emitted, as Flink's StreamElementQueue: the ordered queue emits in
// arrival order, the unordered one as entries complete, but never moves a
// record across a watermark or a watermark status. Both count watermarks
// and statuses against the capacity, as Flink does.
type queue[IN, OUT any] interface {
	// put appends an entry; the caller has checked the capacity. Entries
	// that are not records are complete from the start.
	put(e *entry[IN, OUT])
	// completed tells the queue that a record entry has its result.
	completed(e *entry[IN, OUT])
	// emit passes every entry that may leave now to f, in output order.
	emit(f func(e *entry[IN, OUT]))
	// each visits the entries not yet emitted, in arrival order.
	each(f func(e *entry[IN, OUT]))
	len() int
}

// orderedQueue is Flink's OrderedStreamElementQueue: the head leaves once
// it is complete.
type orderedQueue[IN, OUT any] struct {
	r ring[*entry[IN, OUT]]
}

func (q *orderedQueue[IN, OUT]) put(e *entry[IN, OUT])     { q.r.push(e) }
func (q *orderedQueue[IN, OUT]) completed(*entry[IN, OUT]) {}
func (q *orderedQueue[IN, OUT]) len() int                  { return q.r.len() }
func (q *orderedQueue[IN, OUT]) emit(f func(*entry[IN, OUT])) {
	for q.r.len() > 0 && q.r.front().done {
		f(q.r.pop())
	}
}

func (q *orderedQueue[IN, OUT]) each(f func(*entry[IN, OUT])) {
	for i := range q.r.len() {
		f(q.r.at(i))
	}
}

// unorderedQueue is Flink's UnorderedStreamElementQueue: entries are
// grouped into segments separated by watermarks (and statuses); within
// the first segment complete records leave in completion order, and a
// segment leaves whole before the next one starts.
type unorderedQueue[IN, OUT any] struct {
	segs ring[*segment[IN, OUT]]
	n    int
}

// segment holds its entries not yet emitted in arrival order (a linked
// list, for snapshots) and its complete ones in completion order.
type segment[IN, OUT any] struct {
	head, tail *entry[IN, OUT]
	done       ring[*entry[IN, OUT]]
	incomplete int
}

func (s *segment[IN, OUT]) empty() bool { return s.incomplete == 0 && s.done.len() == 0 }

func (s *segment[IN, OUT]) link(e *entry[IN, OUT]) {
	e.seg, e.prev, e.next = s, s.tail, nil
	if s.tail == nil {
		s.head = e
	} else {
		s.tail.next = e
	}
	s.tail = e
}

func (s *segment[IN, OUT]) unlink(e *entry[IN, OUT]) {
	if e.prev == nil {
		s.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		s.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.seg, e.prev, e.next = nil, nil, nil
}

func (q *unorderedQueue[IN, OUT]) len() int { return q.n }

func (q *unorderedQueue[IN, OUT]) put(e *entry[IN, OUT]) {
	q.n++
	if e.el.Kind == KindRecord {
		if q.segs.len() == 0 {
			q.segs.push(&segment[IN, OUT]{})
		}
		s := q.segs.back()
		s.link(e)
		s.incomplete++
		return
	}
	// A watermark gets a segment of its own (the last one, if that is
	// empty), and the records after it a new one.
	var s *segment[IN, OUT]
	if q.segs.len() > 0 && q.segs.back().empty() {
		s = q.segs.back()
	} else {
		s = &segment[IN, OUT]{}
		q.segs.push(s)
	}
	s.link(e)
	s.done.push(e)
	q.segs.push(&segment[IN, OUT]{})
}

func (q *unorderedQueue[IN, OUT]) completed(e *entry[IN, OUT]) {
	e.seg.incomplete--
	e.seg.done.push(e)
}

func (q *unorderedQueue[IN, OUT]) emit(f func(*entry[IN, OUT])) {
	for q.segs.len() > 0 {
		s := q.segs.front()
		for s.done.len() > 0 {
			e := s.done.pop()
			s.unlink(e)
			q.n--
			f(e)
		}
		// An empty segment goes unless it is the last one (kept for the
		// next records, as Flink does).
		if !s.empty() || q.segs.len() == 1 {
			return
		}
		q.segs.pop()
	}
}

func (q *unorderedQueue[IN, OUT]) each(f func(*entry[IN, OUT])) {
	for i := range q.segs.len() {
		for e := q.segs.at(i).head; e != nil; e = e.next {
			f(e)
		}
	}
}
