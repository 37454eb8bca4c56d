package timer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/weirstream/weir/state"
)

// View is the timers of a range of key groups copied out of a Service for
// an asynchronous snapshot: Service.View takes it at the barrier (one pass
// over the timers, copying each timer's timestamp, registration number,
// key and namespace, no encoding), and AppendKeyGroupSnapshot encodes it
// later, on any goroutine, into the bytes SnapshotKeyGroups would have
// returned at the view. Keys and namespaces are copied by assignment: they
// are map keys of the queues and must not change anyway.
type View[K, N comparable] struct {
	first  int
	ev, pr [][]restored[K, N] // by key-group index, in queue order
}

// View copies the timers of key groups first to last (inclusive). It
// fails if a timer belongs to a key group outside the range.
func (s *Service[K, N]) View(first, last int) (*View[K, N], error) {
	if last < first {
		return nil, fmt.Errorf("timer: invalid key-group range [%d, %d]", first, last)
	}
	n := last - first + 1
	v := &View[K, N]{first: first, ev: make([][]restored[K, N], n), pr: make([][]restored[K, N], n)}
	split := func(q *Queue[K, N], by [][]restored[K, N]) error {
		share := q.Len()/n + q.Len()/(4*n) + 8
		for e := range q.entries() {
			t := q.slots[e.slot].timer
			if t.KeyGroup < first || t.KeyGroup > last {
				return fmt.Errorf("timer: a timer of key group %d is outside the snapshot range [%d, %d]", t.KeyGroup, first, last)
			}
			i := t.KeyGroup - first
			if by[i] == nil {
				by[i] = make([]restored[K, N], 0, share)
			}
			by[i] = append(by[i], restored[K, N]{Timer: t, seq: e.seq})
		}
		return nil
	}
	if err := split(&s.event, v.ev); err != nil {
		return nil, err
	}
	if err := split(&s.proc, v.pr); err != nil {
		return nil, err
	}
	return v, nil
}

// AppendKeyGroupSnapshot appends the snapshot of the timers of key group
// kg at the view (the format of SnapshotKeyGroup) to dst; keys and
// namespaces are encoded with kc and nc. On error, dst is returned
// unextended.
func (v *View[K, N]) AppendKeyGroupSnapshot(dst []byte, kg int, kc state.Codec[K], nc state.Codec[N]) ([]byte, error) {
	i := kg - v.first
	if i < 0 || i >= len(v.ev) {
		return dst, fmt.Errorf("timer: snapshot of key group %d outside the view's range [%d, %d]", kg, v.first, v.first+len(v.ev)-1)
	}
	start := len(dst)
	dst = appendHeader[K, N](dst, kg)
	var err error
	for _, ts := range [][]restored[K, N]{v.ev[i], v.pr[i]} {
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
