package timer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/weirstream/weir/state"
)

// View is the timers of a range of key groups copied out of a Service for
// an asynchronous snapshot: Service.View takes it at the barrier, a copy of
// the queues' slot arrays and of their buckets' slot lists (memory copies,
// no pass over the timers one by one), and AppendKeyGroupSnapshot encodes
// it later, on any goroutine, into the bytes SnapshotKeyGroups would have
// returned at the view; the first call orders the copied timers and sorts
// them by key group. Keys and namespaces are copied by assignment: they
// are map keys of the queues and must not change anyway.
type View[K, N comparable] struct {
	first, last int
	ev, pr      queueCopy[K, N]

	once sync.Once
	err  error
	byEv [][]restored[K, N] // by key-group index, in queue order
	byPr [][]restored[K, N]
}

// queueCopy is a Queue's slots and buckets as they were at a view.
type queueCopy[K, N comparable] struct {
	slots   []slot[K, N]
	items   []int // the buckets' slot lists, back to back
	buckets []bucketCopy
}

// bucketCopy is a bucket's timestamp and where its slot list lies in
// queueCopy.items.
type bucketCopy struct {
	ts         int64
	start, end int
}

func copyQueue[K, N comparable](q *Queue[K, N]) queueCopy[K, N] {
	c := queueCopy[K, N]{slots: slices.Clone(q.slots), buckets: make([]bucketCopy, 0, len(q.heap))}
	n := 0
	for _, b := range q.heap {
		n += len(b.items) - b.head
	}
	c.items = make([]int, 0, n)
	for _, b := range q.heap {
		start := len(c.items)
		c.items = append(c.items, b.items[b.head:]...)
		c.buckets = append(c.buckets, bucketCopy{ts: b.ts, start: start, end: len(c.items)})
	}
	return c
}

// split returns c's live timers by key group in queue order (timestamp,
// then registration number), as Queue.entries yields them.
func (c *queueCopy[K, N]) split(first, last int) ([][]restored[K, N], error) {
	slices.SortFunc(c.buckets, func(a, b bucketCopy) int { return cmp.Compare(a.ts, b.ts) })
	n := last - first + 1
	by := make([][]restored[K, N], n)
	share := len(c.items)/n + len(c.items)/(4*n) + 8
	for _, b := range c.buckets {
		for _, si := range c.items[b.start:b.end] {
			s := &c.slots[si]
			if !s.live {
				continue
			}
			t := s.timer
			if t.KeyGroup < first || t.KeyGroup > last {
				return nil, fmt.Errorf("timer: a timer of key group %d is outside the snapshot range [%d, %d]", t.KeyGroup, first, last)
			}
			i := t.KeyGroup - first
			if by[i] == nil {
				by[i] = make([]restored[K, N], 0, share)
			}
			by[i] = append(by[i], restored[K, N]{Timer: t, seq: s.seq})
		}
	}
	c.slots, c.items, c.buckets = nil, nil, nil
	return by, nil
}

// View copies the timers for a snapshot of key groups first to last
// (inclusive). A timer of a key group outside the range fails the view's
// encoding.
func (s *Service[K, N]) View(first, last int) (*View[K, N], error) {
	if last < first {
		return nil, fmt.Errorf("timer: invalid key-group range [%d, %d]", first, last)
	}
	return &View[K, N]{first: first, last: last, ev: copyQueue(&s.event), pr: copyQueue(&s.proc)}, nil
}

// AppendKeyGroupSnapshot appends the snapshot of the timers of key group
// kg at the view (the format of SnapshotKeyGroup) to dst; keys and
// namespaces are encoded with kc and nc. On error, dst is returned
// unextended.
func (v *View[K, N]) AppendKeyGroupSnapshot(dst []byte, kg int, kc state.Codec[K], nc state.Codec[N]) ([]byte, error) {
	i := kg - v.first
	if i < 0 || kg > v.last {
		return dst, fmt.Errorf("timer: snapshot of key group %d outside the view's range [%d, %d]", kg, v.first, v.last)
	}
	v.once.Do(func() {
		if v.byEv, v.err = v.ev.split(v.first, v.last); v.err == nil {
			v.byPr, v.err = v.pr.split(v.first, v.last)
		}
	})
	if v.err != nil {
		return dst, v.err
	}
	start := len(dst)
	dst = appendHeader[K, N](dst, kg)
	var err error
	for _, ts := range [][]restored[K, N]{v.byEv[i], v.byPr[i]} {
		dst = binary.AppendUvarint(dst, uint64(len(ts)))
		for j := range ts {
			t := &ts[j]
			dst = binary.AppendVarint(dst, t.Timestamp)
			dst = binary.AppendUvarint(dst, t.seq)
			if dst, err = kc.Append(dst, t.Key); err != nil {
				return dst[:start], fmt.Errorf("timer: snapshot of key group %d: key: %w", kg, err)
			}
			if dst, err = nc.Append(dst, t.Namespace); err != nil {
				return dst[:start], fmt.Errorf("timer: snapshot of key group %d: namespace: %w", kg, err)
			}
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}
