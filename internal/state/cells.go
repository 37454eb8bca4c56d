package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/state"
)

// cellCodec encodes the body of a stored entry (the cell's value and its
// TTL timestamps) in the form of its state kind; see FORMAT.md.
type cellCodec[S any] interface {
	// appendCell appends the body of c; with ts, TTL timestamps are
	// written.
	appendCell(dst []byte, c *cell[S], ts bool) ([]byte, error)
	// decodeCell decodes a body into c. ts says whether the body carries
	// timestamps, keep whether c keeps them (the table has TTL).
	decodeCell(src []byte, c *cell[S], ts, keep bool) ([]byte, error)
	// schemas returns the schemas of the stored types the bodies hold
	// (FORMAT.md: after the namespace's).
	schemas() []string
	// readerFor returns cells that decode bodies written under the old
	// schemas (as many as schemas returns), or the index of the stored
	// type that cannot be read and the error.
	readerFor(old []string) (cellCodec[S], int, error)
}

// errEmpty reports a stored list or map without elements, which the
// backend never stores.
var errEmpty = errors.New("empty list or map")

// checkCount rejects an element count that cannot fit in the remaining
// input: every element of a type with a non-zero size takes at least one
// byte (see state.Codec).
func checkCount(n uint64, rest []byte, zeroSize bool) error {
	if n > uint64(len(rest)) && (!zeroSize || n > maxZeroSizeCount) {
		return fmt.Errorf("count %d exceeds the %d bytes left", n, len(rest))
	}
	return nil
}

// sizeHint is the capacity to allocate for n decoded elements: n, capped
// so that a corrupt count cannot make a restore allocate far more memory
// than its input takes (larger collections grow as they are filled).
func sizeHint(n uint64) int { return int(min(n, 1<<16)) }

// maxZeroSizeCount bounds the element count of a list of zero-size
// elements, whose elements take no input bytes.
const maxZeroSizeCount = 1 << 24

// zeroSize reports whether values of T encode to nothing, as zero-size
// types do with the built-in codecs.
func zeroSize[T any]() bool {
	t := reflect.TypeFor[T]()
	return t.Kind() != reflect.Interface && t.Size() == 0
}

func readTS(src []byte, c *int64, keep bool) ([]byte, error) {
	ts, rest, err := readVarint(src)
	if err != nil {
		return src, fmt.Errorf("timestamp: %w", err)
	}
	if keep {
		*c = ts
	}
	return rest, nil
}

// valueCells is the body codec of value, reducing and aggregating state:
// [timestamp] value.
type valueCells[V any] struct{ c state.Codec[V] }

func (vc valueCells[V]) appendCell(dst []byte, c *cell[V], ts bool) ([]byte, error) {
	if ts {
		dst = binary.AppendVarint(dst, c.ts)
	}
	return vc.c.Append(dst, c.v)
}

func (vc valueCells[V]) decodeCell(src []byte, c *cell[V], ts, keep bool) ([]byte, error) {
	var err error
	if ts {
		if src, err = readTS(src, &c.ts, keep); err != nil {
			return src, err
		}
	}
	if c.v, src, err = vc.c.Decode(src); err != nil {
		return src, fmt.Errorf("value: %w", err)
	}
	return src, nil
}

// listCells is the body codec of list state: uvarint n, then n times
// [timestamp] element.
type listCells[V any] struct {
	c        state.Codec[V]
	zeroSize bool
}

func (lc listCells[V]) appendCell(dst []byte, c *cell[listData[V]], ts bool) ([]byte, error) {
	d := &c.v
	dst = binary.AppendUvarint(dst, uint64(len(d.vals)))
	var err error
	for i, v := range d.vals {
		if ts {
			var t int64
			if i < len(d.ts) {
				t = d.ts[i]
			}
			dst = binary.AppendVarint(dst, t)
		}
		if dst, err = lc.c.Append(dst, v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (lc listCells[V]) decodeCell(src []byte, c *cell[listData[V]], ts, keep bool) ([]byte, error) {
	n, src, err := readUvarint(src)
	if err != nil {
		return src, fmt.Errorf("list length: %w", err)
	}
	if n == 0 {
		return src, errEmpty
	}
	if err := checkCount(n, src, lc.zeroSize && !ts); err != nil {
		return src, fmt.Errorf("list length: %w", err)
	}
	d := listData[V]{vals: make([]V, 0, sizeHint(n))}
	if keep {
		d.ts = make([]int64, 0, sizeHint(n))
	}
	for i := range n {
		if ts {
			var t int64
			if src, err = readTS(src, &t, true); err != nil {
				return src, fmt.Errorf("list element %d: %w", i, err)
			}
			if keep {
				d.ts = append(d.ts, t)
			}
		}
		var v V
		if v, src, err = lc.c.Decode(src); err != nil {
			return src, fmt.Errorf("list element %d: %w", i, err)
		}
		d.vals = append(d.vals, v)
	}
	c.v = d
	return src, nil
}

// mapCells is the body codec of map state: uvarint n, then n times map key,
// [timestamp], map value.
type mapCells[UK comparable, UV any] struct {
	kc       state.Codec[UK]
	vc       state.Codec[UV]
	zeroSize bool // UK is a zero-size type
}

func (mc mapCells[UK, UV]) appendCell(dst []byte, c *cell[map[UK]mapEntry[UV]], ts bool) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(c.v)))
	var err error
	for k, e := range c.v {
		if dst, err = mc.kc.Append(dst, k); err != nil {
			return dst, err
		}
		if ts {
			dst = binary.AppendVarint(dst, e.ts)
		}
		if dst, err = mc.vc.Append(dst, e.v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (mc mapCells[UK, UV]) decodeCell(src []byte, c *cell[map[UK]mapEntry[UV]], ts, keep bool) ([]byte, error) {
	n, src, err := readUvarint(src)
	if err != nil {
		return src, fmt.Errorf("map size: %w", err)
	}
	if n == 0 {
		return src, errEmpty
	}
	// A map of zero-size keys holds at most one entry, which may take no
	// bytes.
	if n > uint64(len(src)) && !(mc.zeroSize && n == 1) {
		return src, fmt.Errorf("map size: count %d exceeds the %d bytes left", n, len(src))
	}
	m := make(map[UK]mapEntry[UV], sizeHint(n))
	for i := range n {
		var k UK
		var e mapEntry[UV]
		if k, src, err = mc.kc.Decode(src); err != nil {
			return src, fmt.Errorf("map entry %d: key: %w", i, err)
		}
		if ts {
			if src, err = readTS(src, &e.ts, keep); err != nil {
				return src, fmt.Errorf("map entry %d: %w", i, err)
			}
		}
		if e.v, src, err = mc.vc.Decode(src); err != nil {
			return src, fmt.Errorf("map entry %d: value: %w", i, err)
		}
		if m[k] = e; len(m) != int(i)+1 {
			return src, fmt.Errorf("map entry %d: duplicate key", i)
		}
	}
	c.v = m
	return src, nil
}

// groupLen returns the number of entries of key group idx.
func (t *table[K, N, S]) groupLen(idx int) int { return t.groups[idx].len() }

// snapChunk is the number of entries appendGroup copies out of a key
// group's table before encoding them.
const snapChunk = 256

// entryCopy is an entry copied out of a table for encoding.
type entryCopy[K, N comparable, S any] struct {
	k entryKey[K, N]
	c cell[S]
}

// appendGroup appends the entries of key group idx: key, namespace and
// body each.
//
// The entries are copied out of the table in chunks and then encoded: the
// copy loop's loads of the scattered cells are independent of each other,
// so the processor overlaps their cache misses, which encoding each cell
// as it is reached does not allow. For large states this halves the time.
func (t *table[K, N, S]) appendGroup(dst []byte, idx int, kc state.Codec[K]) ([]byte, error) {
	return t.appendMap(dst, &t.groups[idx], kc, &t.scratch)
}

// appendMap appends the entries of m, a key group's table of t (live, or
// frozen in a view), in slot order, with scratch as the buffer of copies.
// It reads of the table only its codecs and TTL flag, which do not change
// after the registration.
func (t *table[K, N, S]) appendMap(dst []byte, m *flatGroup[K, N, S], kc state.Codec[K], scratch *[]entryCopy[K, N, S]) ([]byte, error) {
	if m.len() == 0 {
		return dst, nil
	}
	buf := *scratch
	if buf == nil {
		buf = make([]entryCopy[K, N, S], min(m.len(), snapChunk))
	}
	// Drop the references the copies hold, and keep a full-size buffer.
	defer func() {
		clear(buf)
		if len(buf) == snapChunk {
			*scratch = buf
		}
	}()
	n := 0
	var err error
	for i := range m.slots {
		s := &m.slots[i]
		c := s.c
		if c == nil {
			continue
		}
		buf[n] = entryCopy[K, N, S]{k: s.k, c: cell[S]{v: c.v, ts: c.ts}}
		if n++; n == len(buf) {
			if dst, err = t.appendEntries(dst, buf, kc); err != nil {
				return dst, err
			}
			n = 0
		}
	}
	return t.appendEntries(dst, buf[:n], kc)
}

func (t *table[K, N, S]) appendEntries(dst []byte, es []entryCopy[K, N, S], kc state.Codec[K]) ([]byte, error) {
	ts := t.ttl.enabled
	var err error
	for i := range es {
		e := &es[i]
		if dst, err = kc.Append(dst, e.k.key); err != nil {
			return dst, fmt.Errorf("key: %w", err)
		}
		if dst, err = t.nsCodec.Append(dst, e.k.ns); err != nil {
			return dst, fmt.Errorf("namespace: %w", err)
		}
		if dst, err = t.cells.appendCell(dst, &e.c, ts); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// decodeGroup decodes count entries from payload, which must be used up,
// for key group idx, and returns a function that installs them into the
// table. ts says whether the entries carry TTL timestamps. It does not
// change the table.
//
// cells, if not nil, is a cellCodec[S] (from readerFor) that decodes the
// bodies in place of the table's own, for entries stored under an older
// schema.
func (t *table[K, N, S]) decodeGroup(idx int, payload []byte, count int, ts bool, kc state.Codec[K], cells any) (func(), error) {
	keep := t.ttl.enabled
	cc := t.cells
	if cells != nil {
		cc = cells.(cellCodec[S])
	}
	m := sized[K, N, S](sizeHint(uint64(count)))
	src := payload
	var err error
	for i := range count {
		var ek entryKey[K, N]
		if ek.key, src, err = kc.Decode(src); err != nil {
			return nil, fmt.Errorf("entry %d: key: %w", i, err)
		}
		if ek.ns, src, err = t.nsCodec.Decode(src); err != nil {
			return nil, fmt.Errorf("entry %d: namespace: %w", i, err)
		}
		c := new(cell[S])
		if src, err = cc.decodeCell(src, c, ts, keep); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		h := t.hashOf(ek)
		if m.find(h, ek) >= 0 {
			return nil, fmt.Errorf("entry %d: duplicate key and namespace", i)
		}
		m.add(h, ek, c, t.hashOf)
	}
	if len(src) != 0 {
		return nil, fmt.Errorf("%d bytes left after %d entries", len(src), count)
	}
	return func() { t.install(idx, m) }, nil
}

// install makes m the entries of key group idx, which must be empty.
func (t *table[K, N, S]) install(idx int, m flatGroup[K, N, S]) {
	if m.len() == 0 {
		return
	}
	t.groups[idx] = m
	t.gver[idx] = t.cow.ver
	for i := range m.slots {
		if c := m.slots[i].c; c != nil {
			c.ver = t.cow.ver
		}
	}
	t.size += m.len()
	if t.slots != nil {
		ss := make([]slot[K, N, S], 0, m.len())
		for i := range m.slots {
			s := &m.slots[i]
			if s.c != nil {
				s.c.pos = int32(len(ss))
				ss = append(ss, slot[K, N, S]{h: t.hashOf(s.k), k: s.k, c: s.c})
			}
		}
		t.slots[idx] = ss
	}
}

func (vc valueCells[V]) schemas() []string { return []string{SchemaOf(vc.c)} }

func (vc valueCells[V]) readerFor(old []string) (cellCodec[V], int, error) {
	r, err := ReaderFor(vc.c, old[0])
	if err != nil {
		return nil, 0, err
	}
	return valueCells[V]{r}, 0, nil
}

func (lc listCells[V]) schemas() []string { return []string{SchemaOf(lc.c)} }

func (lc listCells[V]) readerFor(old []string) (cellCodec[listData[V]], int, error) {
	r, err := ReaderFor(lc.c, old[0])
	if err != nil {
		return nil, 0, err
	}
	return listCells[V]{c: r, zeroSize: lc.zeroSize}, 0, nil
}

func (mc mapCells[UK, UV]) schemas() []string { return []string{SchemaOf(mc.kc), SchemaOf(mc.vc)} }

func (mc mapCells[UK, UV]) readerFor(old []string) (cellCodec[map[UK]mapEntry[UV]], int, error) {
	kr, err := ReaderFor(mc.kc, old[0])
	if err != nil {
		return nil, 0, err
	}
	vr, err := ReaderFor(mc.vc, old[1])
	if err != nil {
		return nil, 1, err
	}
	return mapCells[UK, UV]{kc: kr, vc: vr, zeroSize: mc.zeroSize}, 0, nil
}

// readerFor returns the cells that decode entries stored under the old
// value schemas (nil: the table's own), or the index of the stored type
// that cannot be read and the error.
func (t *table[K, N, S]) readerFor(old []string) (any, int, error) {
	c, i, err := t.cells.readerFor(old)
	if err != nil {
		return nil, i, err
	}
	return c, 0, nil
}
