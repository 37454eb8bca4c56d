package intervaljoin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"

	"github.com/weirstream/weir/internal/keygroup"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
)

// Checkpoints of the interval join, one blob per key group (so key groups
// move between subtasks on rescale):
//
//	"WIJ2"                       magic and version
//	uvarint key group
//	string K, string L, string R schemas of the key's and the sides' codecs
//	                             (uvarint length + bytes; istate.SchemaOf;
//	                             "WIJ1" has reflect type names, still read)
//	uvarint number of keys, then per key:
//	  key                        istate.DefaultCodec[K]
//	  left side, then right side, each:
//	    uvarint number of buckets, then per bucket (ascending timestamps):
//	      varint  timestamp
//	      uvarint registration number of the bucket's pending cleanup
//	      uvarint number of records, then per record (arrival order):
//	        value                istate.DefaultCodec of the side's type
//	        byte                 1 if the record has been joined, else 0
//	uint32 little-endian CRC-32C of everything before it
//
// Every buffered bucket has exactly one pending cleanup, at the bucket's
// timestamp plus the side's delay, so the cleanups are restored from the
// buckets; the registration numbers keep the firing order of cleanups with
// equal times (as timer snapshots do). The watermark is not part of a
// snapshot: after a restore it starts at math.MinInt64, as in Flink.
//
// A restore resolves the recorded schemas as keyed state does: the key's
// must be the same, each side's is read by the rules of schema evolution
// (fields by name) or refused with a state.IncompatibleError.

const (
	ijMagic   = "WIJ2"
	ijMagicV1 = "WIJ1" // type names instead of schemas
)

var ijCRC = crc32.MakeTable(crc32.Castagnoli)

var errIJCorrupt = errors.New("corrupt interval join snapshot")

type ijCodecs[K comparable, L, R any] struct {
	k state.Codec[K]
	l state.Codec[L]
	r state.Codec[R]
}

func newIJCodecs[K comparable, L, R any]() ijCodecs[K, L, R] {
	return ijCodecs[K, L, R]{istate.DefaultCodec[K](), istate.DefaultCodec[L](), istate.DefaultCodec[R]()}
}

func ijTypeNames[K comparable, L, R any]() [3]string {
	return [3]string{reflect.TypeFor[K]().String(), reflect.TypeFor[L]().String(), reflect.TypeFor[R]().String()}
}

// schemas returns the schemas a snapshot records for cs.
func (cs ijCodecs[K, L, R]) schemas() [3]string {
	return [3]string{istate.SchemaOf(cs.k), istate.SchemaOf(cs.l), istate.SchemaOf(cs.r)}
}

// readers returns the codecs that read a snapshot recorded with the
// schemas old: the key's must be the same, the sides' are resolved.
func (cs ijCodecs[K, L, R]) readers(old [3]string) (ijCodecs[K, L, R], error) {
	if err := istate.CheckExact("key", old[0], istate.SchemaOf(cs.k)); err != nil {
		return cs, err
	}
	l, err := istate.ReaderFor(cs.l, old[1])
	if err != nil {
		return cs, ijSideError("left", err)
	}
	r, err := istate.ReaderFor(cs.r, old[2])
	if err != nil {
		return cs, ijSideError("right", err)
	}
	return ijCodecs[K, L, R]{cs.k, l, r}, nil
}

// ijSideError names the interval join's buffer of one side as the state
// of an IncompatibleError.
func ijSideError(side string, err error) error {
	var ie *state.IncompatibleError
	if errors.As(err, &ie) {
		c := *ie
		c.State, c.What = "interval join buffer of the "+side+" input", "record"
		return &c
	}
	return err
}

// snapshot encodes every key group of the subtask's range.
func (o *Op[K, L, R]) snapshot() (map[int][]byte, error) {
	v, err := o.view(false)
	if err != nil {
		return nil, err
	}
	return v.encode()
}

// ijView is what a snapshot of the interval join encodes: per key group,
// the slots with buffered records, and each side's cleanup registration
// numbers by slot. With copied set, the view owns copies of the slots'
// keys, live buffers and joined flags, so it can be encoded on another
// goroutine while the operator goes on; otherwise it reads the operator's
// slots and must be encoded at once.
type ijView[K comparable, L, R any] struct {
	kgFirst    int
	byKG       [][]int32
	seqL, seqR []uint64
	offL, offR []int
	// at returns slot si's key, buffers and joined flags (nil when not
	// tracked).
	at func(si int32) (*ijKey[K, L, R], *[]bool, *[]bool)
}

// view takes the view of a snapshot; copied makes it independent of the
// operator (see ijView).
func (o *Op[K, L, R]) view(copied bool) (*ijView[K, L, R], error) {
	// The registration numbers of each slot's buckets, per side: a queue
	// yields a slot's cleanups in bucket order (their times rise with the
	// bucket timestamps), so the k-th number of a slot is its k-th bucket's.
	v := &ijView[K, L, R]{kgFirst: o.kgFirst}
	v.seqL, v.offL = ijSeqs(&o.qL, o.slots.n)
	v.seqR, v.offR = ijSeqs(&o.qR, o.slots.n)
	n := o.kgLast - o.kgFirst + 1
	v.byKG = make([][]int32, n)
	var err error
	o.keys.all(func(k K, si int32) {
		if ks := o.slots.at(si); (ks.left.empty() && ks.right.empty()) || err != nil {
			return
		}
		kg := keygroup.Of(o.hash(k), o.maxP)
		if kg < o.kgFirst || kg > o.kgLast {
			err = fmt.Errorf("interval join: key %v of key group %d is outside the subtask's range [%d, %d]", k, kg, o.kgFirst, o.kgLast)
			return
		}
		v.byKG[kg-o.kgFirst] = append(v.byKG[kg-o.kgFirst], si)
	})
	if err != nil {
		return nil, err
	}
	if !copied {
		v.at = func(si int32) (*ijKey[K, L, R], *[]bool, *[]bool) { return o.slots.at(si), o.jfL(si), o.jfR(si) }
		return v, nil
	}
	type slotCopy struct {
		ks     ijKey[K, L, R]
		jl, jr *[]bool
	}
	copies := make(map[int32]*slotCopy)
	for _, slots := range v.byKG {
		for _, si := range slots {
			ks := o.slots.at(si)
			c := &slotCopy{ks: ijKey[K, L, R]{key: ks.key, left: copyIJBuf(&ks.left), right: copyIJBuf(&ks.right)}}
			c.jl = copyIJFlags(o.jfL(si), &ks.left)
			c.jr = copyIJFlags(o.jfR(si), &ks.right)
			copies[si] = c
		}
	}
	v.at = func(si int32) (*ijKey[K, L, R], *[]bool, *[]bool) {
		c := copies[si]
		return &c.ks, c.jl, c.jr
	}
	return v, nil
}

// copyIJBuf copies the live records of b.
func copyIJBuf[T any](b *ijBuf[T]) ijBuf[T] {
	return ijBuf[T]{es: slices.Clone(b.es[b.head:])}
}

// copyIJFlags copies the joined flags of b's live records (nil if not
// tracked).
func copyIJFlags[T any](jf *[]bool, b *ijBuf[T]) *[]bool {
	if jf == nil {
		return nil
	}
	c := slices.Clone((*jf)[b.head:len(b.es)])
	return &c
}

// encode writes the view's key groups, each a checksummed blob.
func (v *ijView[K, L, R]) encode() (map[int][]byte, error) {
	cs := newIJCodecs[K, L, R]()
	names := cs.schemas()
	out := make(map[int][]byte, len(v.byKG))
	var err error
	for i, slots := range v.byKG {
		slices.Sort(slots)
		kg := v.kgFirst + i
		dst := append([]byte(nil), ijMagic...)
		dst = binary.AppendUvarint(dst, uint64(kg))
		for _, s := range names {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
		dst = binary.AppendUvarint(dst, uint64(len(slots)))
		for _, si := range slots {
			ks, jl, jr := v.at(si)
			if dst, err = cs.k.Append(dst, ks.key); err != nil {
				return nil, fmt.Errorf("interval join: snapshot of key group %d: key: %w", kg, err)
			}
			if dst, err = appendIJBuf(dst, &ks.left, jl, v.seqL[v.offL[si]:v.offL[si+1]], cs.l); err != nil {
				return nil, fmt.Errorf("interval join: snapshot of key group %d: left record: %w", kg, err)
			}
			if dst, err = appendIJBuf(dst, &ks.right, jr, v.seqR[v.offR[si]:v.offR[si+1]], cs.r); err != nil {
				return nil, fmt.Errorf("interval join: snapshot of key group %d: right record: %w", kg, err)
			}
		}
		out[kg] = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst, ijCRC))
	}
	return out, nil
}

// ijSeqs returns the registration numbers of q's cleanups grouped by slot
// (slot s has seqs[off[s]:off[s+1]]), each group in firing order.
func ijSeqs(q *ijQueue, slots int32) (seqs []uint64, off []int) {
	off = make([]int, slots+1)
	q.each(func(_ int64, _ uint64, s int32) { off[s+1]++ })
	for s := range slots {
		off[s+1] += off[s]
	}
	seqs = make([]uint64, q.n)
	next := slices.Clone(off[:slots])
	q.each(func(_ int64, seq uint64, s int32) {
		seqs[next[s]] = seq
		next[s]++
	})
	return seqs, off
}

func appendIJBuf[T any](dst []byte, b *ijBuf[T], jf *[]bool, seqs []uint64, c state.Codec[T]) ([]byte, error) {
	live := b.es[b.head:]
	nb := 0
	for i := range live {
		if i == 0 || live[i].ts != live[i-1].ts {
			nb++
		}
	}
	if nb != len(seqs) {
		return dst, fmt.Errorf("%d buckets but %d pending cleanups", nb, len(seqs))
	}
	dst = binary.AppendUvarint(dst, uint64(nb))
	var err error
	for i, k := 0, 0; i < len(live); k++ {
		j := i + 1
		for j < len(live) && live[j].ts == live[i].ts {
			j++
		}
		dst = binary.AppendVarint(dst, live[i].ts)
		dst = binary.AppendUvarint(dst, seqs[k])
		dst = binary.AppendUvarint(dst, uint64(j-i))
		for e := i; e < j; e++ {
			if dst, err = c.Append(dst, live[e].v); err != nil {
				return dst, err
			}
			joined := byte(0)
			if jf != nil && (*jf)[int(b.head)+e] {
				joined = 1
			}
			dst = append(dst, joined)
		}
		i = j
	}
	return dst, nil
}

// ijPending is a restored cleanup.
type ijPending struct {
	ts   int64
	seq  uint64
	slot int32
}

// restore adds the key groups of a snapshot (taken at any parallelism) to
// the operator, which must not have buffered anything yet.
func (o *Op[K, L, R]) restore(kgs map[int][]byte) error {
	cs := newIJCodecs[K, L, R]()
	var pl, pr []ijPending
	order := make([]int, 0, len(kgs))
	for kg := range kgs {
		order = append(order, kg)
	}
	slices.Sort(order) // ties of equal registration numbers: key group order
	for _, kg := range order {
		if err := o.restoreKeyGroup(kg, kgs[kg], cs, &pl, &pr); err != nil {
			return fmt.Errorf("interval join: restoring key group %d: %w", kg, err)
		}
	}
	for _, p := range [2]struct {
		ps []ijPending
		q  *ijQueue
	}{{pl, &o.qL}, {pr, &o.qR}} {
		slices.SortStableFunc(p.ps, func(a, b ijPending) int {
			if a.ts != b.ts {
				if a.ts < b.ts {
					return -1
				}
				return 1
			}
			if a.seq != b.seq {
				if a.seq < b.seq {
					return -1
				}
				return 1
			}
			return 0
		})
		for _, x := range p.ps {
			p.q.push(x.ts, x.slot, x.seq)
			o.seq = max(o.seq, x.seq)
		}
	}
	return nil
}

func (o *Op[K, L, R]) restoreKeyGroup(kg int, data []byte, cs ijCodecs[K, L, R], pl, pr *[]ijPending) error {
	if len(data) < len(ijMagic)+4 {
		return fmt.Errorf("%w: %d bytes", errIJCorrupt, len(data))
	}
	body := data[:len(data)-4]
	magic := string(body[:len(ijMagic)])
	if magic != ijMagic && magic != ijMagicV1 {
		return fmt.Errorf("%w: bad magic %q (not an interval join snapshot of this version)", errIJCorrupt, magic)
	}
	if crc32.Checksum(body, ijCRC) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return fmt.Errorf("%w: checksum mismatch", errIJCorrupt)
	}
	src := body[len(ijMagic):]
	uv := func(what string) (uint64, error) {
		v, n := binary.Uvarint(src)
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad %s", errIJCorrupt, what)
		}
		src = src[n:]
		return v, nil
	}
	g, err := uv("key group")
	if err != nil {
		return err
	}
	if g != uint64(kg) {
		return fmt.Errorf("the snapshot is of key group %d", g)
	}
	var stored [3]string
	for i := range stored {
		n, err := uv("type")
		if err != nil {
			return err
		}
		if n > uint64(len(src)) {
			return fmt.Errorf("%w: type of %d bytes", errIJCorrupt, n)
		}
		stored[i], src = string(src[:n]), src[n:]
	}
	if magic == ijMagicV1 {
		if want := ijTypeNames[K, L, R](); stored != want {
			return fmt.Errorf("the snapshot holds types %v where the join has %v", stored, want)
		}
	} else if cs, err = cs.readers(stored); err != nil {
		return err
	}
	nk, err := uv("key count")
	if err != nil {
		return err
	}
	if nk > uint64(len(src)) {
		return fmt.Errorf("%w: %d keys in %d bytes", errIJCorrupt, nk, len(src))
	}
	for range nk {
		var k K
		if k, src, err = cs.k.Decode(src); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if got := keygroup.Of(o.hash(k), o.maxP); got != kg {
			return fmt.Errorf("key %v belongs to key group %d", k, got)
		}
		if _, dup := o.keys.get(k); dup {
			return fmt.Errorf("key %v restored twice", k)
		}
		si, ks := o.slotOf(k)
		if src, err = restoreIJBuf(src, &ks.left, o.jfL(si), cs.l, func(ts int64, seq uint64) {
			*pl = append(*pl, ijPending{ts + o.delayL, seq, si})
		}); err != nil {
			return fmt.Errorf("left records of key %v: %w", k, err)
		}
		if src, err = restoreIJBuf(src, &ks.right, o.jfR(si), cs.r, func(ts int64, seq uint64) {
			*pr = append(*pr, ijPending{ts + o.delayR, seq, si})
		}); err != nil {
			return fmt.Errorf("right records of key %v: %w", k, err)
		}
		o.buffered += int64(ks.left.live() + ks.right.live())
		if ks.left.empty() && ks.right.empty() && !ks.left.idle {
			ks.left.idle = true
			o.idle = append(o.idle, si)
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d bytes after the keys", errIJCorrupt, len(src))
	}
	return nil
}

func restoreIJBuf[T any](src []byte, b *ijBuf[T], jf *[]bool, c state.Codec[T], pending func(ts int64, seq uint64)) ([]byte, error) {
	nb, n := binary.Uvarint(src)
	if n <= 0 || nb > uint64(len(src)) {
		return src, fmt.Errorf("%w: bad bucket count", errIJCorrupt)
	}
	src = src[n:]
	prev := int64(0)
	for k := range nb {
		ts, n := binary.Varint(src)
		if n <= 0 {
			return src, fmt.Errorf("%w: bad timestamp", errIJCorrupt)
		}
		src = src[n:]
		if k > 0 && ts <= prev {
			return src, fmt.Errorf("%w: bucket timestamps not ascending", errIJCorrupt)
		}
		prev = ts
		seq, n := binary.Uvarint(src)
		if n <= 0 {
			return src, fmt.Errorf("%w: bad registration number", errIJCorrupt)
		}
		src = src[n:]
		cnt, n := binary.Uvarint(src)
		if n <= 0 || cnt == 0 || cnt > uint64(len(src)) {
			return src, fmt.Errorf("%w: bad record count", errIJCorrupt)
		}
		src = src[n:]
		for range cnt {
			var v T
			var err error
			if v, src, err = c.Decode(src); err != nil {
				return src, err
			}
			if len(src) == 0 || src[0] > 1 {
				return src, fmt.Errorf("%w: bad joined flag", errIJCorrupt)
			}
			b.add(ts, &v, src[0] == 1, jf)
			src = src[1:]
		}
		pending(ts, seq)
	}
	return src, nil
}
