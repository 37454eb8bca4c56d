package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"

	"github.com/weirstream/weir/state"
)

// Timers are snapshotted and restored per key group, like keyed state, so
// that they follow their key groups when a job is rescaled. The current
// watermark is not part of a snapshot: after a restore it starts at
// math.MinInt64 and event-time timers wait for the first watermark, as in
// Flink. The binary format is documented in internal/state/FORMAT.md.

// ErrCorrupt is wrapped by the errors of RestoreKeyGroup that report
// malformed input: a bad checksum, a truncated or inconsistent structure.
var ErrCorrupt = errors.New("corrupt timer snapshot")

const (
	snapshotMagic   = "WKGT"
	snapshotVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// SnapshotKeyGroup returns a snapshot of the event-time and
// processing-time timers of key group kg; keys and namespaces are encoded
// with kc and nc. See AppendKeyGroupSnapshot.
func (s *Service[K, N]) SnapshotKeyGroup(kg int, kc state.Codec[K], nc state.Codec[N]) ([]byte, error) {
	return s.AppendKeyGroupSnapshot(nil, kg, kc, nc)
}

// AppendKeyGroupSnapshot appends a snapshot of the timers of key group kg
// to dst and returns the extended slice. Each timer keeps its registration
// number, so that after a restore timers with equal timestamps fire in the
// order they had, also across key groups restored from one service. It is
// synchronous, reflects the timers at the call and changes nothing; its
// cost is a pass over all timers of the service (use SnapshotKeyGroups to
// snapshot many key groups in one pass). On error, dst is returned
// unextended.
func (s *Service[K, N]) AppendKeyGroupSnapshot(dst []byte, kg int, kc state.Codec[K], nc state.Codec[N]) ([]byte, error) {
	var ev, pr []entry
	for e := range s.event.entries() {
		if s.event.slots[e.slot].timer.KeyGroup == kg {
			ev = append(ev, e)
		}
	}
	for e := range s.proc.entries() {
		if s.proc.slots[e.slot].timer.KeyGroup == kg {
			pr = append(pr, e)
		}
	}
	out, err := appendTimers(dst, kg, &s.event, ev, &s.proc, pr, kc, nc)
	if err != nil {
		return dst, fmt.Errorf("timer: snapshot of key group %d: %w", kg, err)
	}
	return out, nil
}

// SnapshotKeyGroups returns snapshots of the key groups first to last
// (inclusive), element i holding key group first+i, in one pass over the
// timers. Every key group gets a snapshot, also one without timers. It
// fails if a timer belongs to a key group outside the range.
func (s *Service[K, N]) SnapshotKeyGroups(first, last int, kc state.Codec[K], nc state.Codec[N]) ([][]byte, error) {
	if last < first {
		return nil, fmt.Errorf("timer: invalid key-group range [%d, %d]", first, last)
	}
	n := last - first + 1
	ev := make([][]entry, n)
	pr := make([][]entry, n)
	split := func(q *Queue[K, N], by [][]entry) error {
		// Room for a little more than an even share avoids most growth.
		share := q.Len()/n + q.Len()/(4*n) + 8
		for e := range q.entries() {
			kg := q.slots[e.slot].timer.KeyGroup
			if kg < first || kg > last {
				return fmt.Errorf("timer: a timer of key group %d is outside the snapshot range [%d, %d]", kg, first, last)
			}
			if by[kg-first] == nil {
				by[kg-first] = make([]entry, 0, share)
			}
			by[kg-first] = append(by[kg-first], e)
		}
		return nil
	}
	if err := split(&s.event, ev); err != nil {
		return nil, err
	}
	if err := split(&s.proc, pr); err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range out {
		b, err := appendTimers(nil, first+i, &s.event, ev[i], &s.proc, pr[i], kc, nc)
		if err != nil {
			return nil, fmt.Errorf("timer: snapshot of key group %d: %w", first+i, err)
		}
		out[i] = b
	}
	return out, nil
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// appendHeader writes the header of a key group's snapshot.
func appendHeader[K, N comparable](dst []byte, kg int) []byte {
	dst = append(dst, snapshotMagic...)
	dst = binary.AppendUvarint(dst, snapshotVersion)
	dst = binary.AppendUvarint(dst, uint64(kg))
	dst = appendString(dst, typeName[K]())
	dst = appendString(dst, typeName[N]())
	return dst
}

// appendTimers writes the snapshot of key group kg with the event-time
// timers ev of eq and the processing-time timers pr of pq.
func appendTimers[K, N comparable](dst []byte, kg int, eq *Queue[K, N], ev []entry, pq *Queue[K, N], pr []entry,
	kc state.Codec[K], nc state.Codec[N]) ([]byte, error) {
	start := len(dst)
	dst = appendHeader[K, N](dst, kg)
	var err error
	for _, d := range []struct {
		q  *Queue[K, N]
		es []entry
	}{{eq, ev}, {pq, pr}} {
		dst = binary.AppendUvarint(dst, uint64(len(d.es)))
		for _, e := range d.es {
			t := &d.q.slots[e.slot].timer
			dst = binary.AppendVarint(dst, t.Timestamp)
			dst = binary.AppendUvarint(dst, e.seq)
			if dst, err = kc.Append(dst, t.Key); err != nil {
				return dst[:start], fmt.Errorf("key: %w", err)
			}
			if dst, err = nc.Append(dst, t.Namespace); err != nil {
				return dst[:start], fmt.Errorf("namespace: %w", err)
			}
		}
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// RestoreKeyGroup adds the timers of the snapshot data of key group kg,
// taken by SnapshotKeyGroup of a service with the same key and namespace
// types, to the service; keys and namespaces are decoded with kc and nc.
// Restored timers keep their registration numbers: timers with equal
// timestamps fire in their original order, whatever the order in which key
// groups are restored (between timers from different snapshotted services
// the order of ties is arbitrary but fixed by the snapshots), and timers
// registered later come after them. Timers already registered stay (a
// restored timer equal to one of them is not added again). The data is
// verified and decoded completely first; on any error no timer is added.
// Errors that report malformed data wrap ErrCorrupt.
func (s *Service[K, N]) RestoreKeyGroup(kg int, data []byte, kc state.Codec[K], nc state.Codec[N]) error {
	ev, pr, err := decodeTimers(kg, data, kc, nc)
	if err != nil {
		return fmt.Errorf("timer: restore of key group %d: %w", kg, err)
	}
	for _, t := range ev {
		s.event.add(t.Timer, t.seq)
	}
	for _, t := range pr {
		s.proc.add(t.Timer, t.seq)
	}
	return nil
}

// restored is a decoded timer with its registration number.
type restored[K, N comparable] struct {
	Timer[K, N]
	seq uint64
}

func decodeTimers[K, N comparable](kg int, data []byte, kc state.Codec[K], nc state.Codec[N]) (ev, pr []restored[K, N], err error) {
	if len(data) < len(snapshotMagic)+4 {
		return nil, nil, corruptf("%d bytes are too short for a snapshot", len(data))
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if string(body[:len(snapshotMagic)]) != snapshotMagic {
		return nil, nil, corruptf("bad magic %q, want %q", body[:len(snapshotMagic)], snapshotMagic)
	}
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, nil, corruptf("checksum mismatch: stored %08x, computed %08x", sum, got)
	}
	src := body[len(snapshotMagic):]
	v, src, err := readUvarint(src, "version")
	if err != nil {
		return nil, nil, err
	}
	if v != snapshotVersion {
		return nil, nil, fmt.Errorf("unsupported snapshot version %d (this build reads version %d)", v, snapshotVersion)
	}
	g, src, err := readUvarint(src, "key group")
	if err != nil {
		return nil, nil, err
	}
	if g != uint64(kg) {
		return nil, nil, fmt.Errorf("the snapshot is of key group %d", g)
	}
	for _, want := range []string{typeName[K](), typeName[N]()} {
		var got string
		if got, src, err = readString(src, "type"); err != nil {
			return nil, nil, err
		}
		if got != want {
			return nil, nil, fmt.Errorf("the snapshot has timers of type %s, the service of type %s", got, want)
		}
	}
	for d, out := range []*[]restored[K, N]{&ev, &pr} {
		domain := [...]string{"event-time", "processing-time"}[d]
		var n uint64
		if n, src, err = readUvarint(src, domain+" timer count"); err != nil {
			return nil, nil, err
		}
		// Every timer takes at least two bytes, its timestamp and number.
		if n > uint64(len(src)) {
			return nil, nil, corruptf("%d %s timers in %d bytes", n, domain, len(src))
		}
		// Capped, so that a corrupt count cannot allocate far more than
		// the input takes.
		ts := make([]restored[K, N], 0, min(n, 1<<16))
		for i := range n {
			t := restored[K, N]{Timer: Timer[K, N]{KeyGroup: kg}}
			x, k := binary.Varint(src)
			if k <= 0 {
				return nil, nil, corruptf("%s timer %d: bad timestamp", domain, i)
			}
			t.Timestamp, src = x, src[k:]
			seq, k := binary.Uvarint(src)
			if k <= 0 {
				return nil, nil, corruptf("%s timer %d: bad registration number", domain, i)
			}
			t.seq, src = seq, src[k:]
			if t.Key, src, err = kc.Decode(src); err != nil {
				return nil, nil, fmt.Errorf("%s timer %d: key: %w", domain, i, err)
			}
			if t.Namespace, src, err = nc.Decode(src); err != nil {
				return nil, nil, fmt.Errorf("%s timer %d: namespace: %w", domain, i, err)
			}
			ts = append(ts, t)
		}
		*out = ts
	}
	if len(src) != 0 {
		return nil, nil, corruptf("%d unexpected bytes after the timers", len(src))
	}
	return ev, pr, nil
}

func readUvarint(src []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, src, corruptf("%s: bad or truncated uvarint", what)
	}
	return v, src[n:], nil
}

func readString(src []byte, what string) (string, []byte, error) {
	n, rest, err := readUvarint(src, what)
	if err != nil {
		return "", src, err
	}
	if n > uint64(len(rest)) {
		return "", src, corruptf("%s: %d bytes announced, %d left", what, n, len(rest))
	}
	return string(rest[:n]), rest[n:], nil
}

// CountKeyGroup returns the number of event-time and processing-time
// timers in a key group's snapshot (SnapshotKeyGroup's data) and the
// names of its key and namespace types, skipping each timer's key and
// namespace with skip, which is given those names (false: they cannot be
// skipped, and the processing-time count is not known: -1).
func CountKeyGroup(data []byte, skip func(keyType, nsType string) (key, ns func([]byte) ([]byte, error), ok bool)) (event, processing int, err error) {
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return 0, 0, corruptf("not a timer snapshot")
	}
	src := data[len(snapshotMagic) : len(data)-4]
	if _, src, err = readUvarint(src, "version"); err != nil {
		return 0, 0, err
	}
	if _, src, err = readUvarint(src, "key group"); err != nil {
		return 0, 0, err
	}
	var kt, nt string
	if kt, src, err = readString(src, "type"); err != nil {
		return 0, 0, err
	}
	if nt, src, err = readString(src, "type"); err != nil {
		return 0, 0, err
	}
	n, src, err := readUvarint(src, "event-time timer count")
	if err != nil {
		return 0, 0, err
	}
	skipKey, skipNS, ok := skip(kt, nt)
	if !ok {
		return int(n), -1, nil
	}
	for i := range n {
		if _, k := binary.Varint(src); k > 0 {
			src = src[k:]
		} else {
			return 0, 0, corruptf("event-time timer %d: bad timestamp", i)
		}
		if _, k := binary.Uvarint(src); k > 0 {
			src = src[k:]
		} else {
			return 0, 0, corruptf("event-time timer %d: bad number", i)
		}
		if src, err = skipKey(src); err != nil {
			return 0, 0, fmt.Errorf("event-time timer %d: key: %w", i, err)
		}
		if src, err = skipNS(src); err != nil {
			return 0, 0, fmt.Errorf("event-time timer %d: namespace: %w", i, err)
		}
	}
	p, _, err := readUvarint(src, "processing-time timer count")
	if err != nil {
		return 0, 0, err
	}
	return int(n), int(p), nil
}
