package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/internal/invariants"
	"github.com/weirstream/weir/state"
)

// View is a consistent view of a backend's keyed state at one point, taken
// by Backend.View (the synchronous part of an asynchronous snapshot) and
// encoded later, per key group, by AppendKeyGroupSnapshot, which may run
// on another goroutine while the backend goes on being used and changed:
// the backend copies what it changes while the view may still read it
// (cow.go). A key group's encoding is what Backend.AppendKeyGroupSnapshot
// would have returned at the view (the same states, entries and bytes, up
// to the order of entries, which the format leaves free).
//
// A view must be released: Release (any goroutine, any time, more than
// once) ends it; each AppendKeyGroupSnapshot releases its key group. Until
// then the backend keeps copying on writes, and Backend.View fails.
type View[K comparable] struct {
	first, last int
	kc          state.Codec[K]
	keySchema   string
	states      []viewState[K] // ascending name order
	flags       *viewFlags
}

// viewState is one state of a view: a registered state's frozen table,
// or the raw key groups of a restored state not registered yet.
type viewState[K comparable] struct {
	name    string
	kind    stateKind
	ts      bool
	stored  []string
	names   bool             // stored holds type names (a restored version-1 state)
	groups  groupView[K]     // registered states
	pending map[int]rawGroup // unregistered restored states, by key-group index
}

// groupView reads the key groups of a table frozen in a view.
type groupView[K comparable] interface {
	groupLen(idx int) int
	appendGroup(dst []byte, idx int, kc state.Codec[K]) ([]byte, error)
}

// tableView is a table frozen in a view: the key-group maps of a
// copy-on-write table, or the encoded key groups of a table whose values
// could change in place (eager).
type tableView[K, N comparable, S any] struct {
	t       *table[K, N, S] // only its codecs and TTL flag are read
	maps    []flatGroup[K, N, S]
	eager   []rawGroup
	scratch []entryCopy[K, N, S]
}

func (v *tableView[K, N, S]) groupLen(idx int) int {
	if v.eager != nil {
		return v.eager[idx].count
	}
	return v.maps[idx].len()
}

func (v *tableView[K, N, S]) appendGroup(dst []byte, idx int, kc state.Codec[K]) ([]byte, error) {
	if v.eager != nil {
		return append(dst, v.eager[idx].payload...), nil
	}
	return v.t.appendMap(dst, &v.maps[idx], kc, &v.scratch)
}

// view freezes the table for a view with the release flags flags: a
// copy-on-write table keeps its key-group maps as they are and copies on
// later writes; another table is encoded now.
func (t *table[K, N, S]) view(flags *viewFlags, kc state.Codec[K]) (groupView[K], error) {
	if invariants.Enabled {
		t.check()
	}
	v := &tableView[K, N, S]{t: t}
	if t.cow.plain {
		v.maps = slices.Clone(t.groups)
		t.freezeCOW(flags)
		return v, nil
	}
	v.eager = make([]rawGroup, len(t.groups))
	for idx := range t.groups {
		m := &t.groups[idx]
		if m.len() == 0 {
			continue
		}
		payload, err := t.appendGroup(nil, idx, kc)
		if err != nil {
			return nil, err
		}
		v.eager[idx] = rawGroup{count: m.len(), payload: payload}
	}
	return v, nil
}

// errViewInUse is returned by Backend.View while the previous view has
// not been released.
var errViewInUse = errors.New("state: the previous snapshot view has not been released")

// View takes a consistent view of every state for an asynchronous
// snapshot. Its cost is O(states x key groups), plus the encoding of the
// states whose values could change in place (see cow.go), which are
// encoded now. Until the view is released, writes copy the cells and
// key-group maps the view still reads. It fails while another view is in
// use. It must be called on the goroutine that uses the backend.
func (b *Backend[K]) View() (*View[K], error) {
	if b.view != nil && !b.view.all.Load() {
		return nil, errViewInUse
	}
	n := b.last - b.first + 1
	flags := &viewFlags{released: make([]atomic.Bool, n)}
	flags.left.Store(int64(n))
	kc := b.codecForKeys()
	v := &View[K]{first: b.first, last: b.last, kc: kc, keySchema: b.keySchema(), flags: flags,
		states: make([]viewState[K], 0, len(b.states)+len(b.pending))}
	for name, r := range b.states {
		g, err := r.ops.view(flags, kc)
		if err != nil {
			// Tables frozen already stay frozen until the flags say the
			// view is gone.
			flags.all.Store(true)
			return nil, fmt.Errorf("state: snapshot of state %q: %w", name, err)
		}
		v.states = append(v.states, viewState[K]{name: name, kind: r.kind, ts: r.ttl.Enabled(), stored: r.schemas, groups: g})
	}
	for name, p := range b.pending {
		v.states = append(v.states, viewState[K]{name: name, kind: p.kind, ts: p.ts, stored: p.types, names: p.names, pending: maps.Clone(p.groups)})
	}
	slices.SortFunc(v.states, func(a, b viewState[K]) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	b.view = flags
	return v, nil
}

// KeyGroupRange returns the first and last (inclusive) key group of the
// view.
func (v *View[K]) KeyGroupRange() (first, last int) { return v.first, v.last }

// AppendKeyGroupSnapshot appends the snapshot of key group kg as it was
// when the view was taken (the format of FORMAT.md) and releases the key
// group: later writes to it no longer copy. Each key group can be encoded
// once; once every key group is encoded the view is released. It may run
// on any goroutine, but one call at a time per view. On
// error, dst is returned unextended (and the key group is released all
// the same).
func (v *View[K]) AppendKeyGroupSnapshot(dst []byte, kg int) ([]byte, error) {
	if kg < v.first || kg > v.last {
		return dst, fmt.Errorf("state: snapshot of key group %d outside the view's range [%d, %d]", kg, v.first, v.last)
	}
	idx := kg - v.first
	if v.flags.all.Load() || v.flags.released[idx].Load() {
		return dst, fmt.Errorf("state: snapshot of key group %d: the view has released it", kg)
	}
	defer v.flags.release(idx)
	live := make([]*viewState[K], 0, len(v.states))
	for i := range v.states {
		s := &v.states[i]
		if s.groups != nil && s.groups.groupLen(idx) > 0 {
			live = append(live, s)
		} else if _, ok := s.pending[idx]; ok && s.groups == nil {
			live = append(live, s)
		}
	}
	start := len(dst)
	dst = appendKeyGroupHeader(dst, kg, v.keySchema, len(live))
	for _, s := range live {
		if s.groups == nil {
			g := s.pending[idx]
			dst = appendStateHeader(dst, s.name, s.kind, s.ts, s.names, s.stored, g.count)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(len(g.payload)))
			dst = append(dst, g.payload...)
			continue
		}
		dst = appendStateHeader(dst, s.name, s.kind, s.ts, false, s.stored, s.groups.groupLen(idx))
		at := len(dst)
		dst = binary.LittleEndian.AppendUint64(dst, 0)
		var err error
		if dst, err = s.groups.appendGroup(dst, idx, v.kc); err != nil {
			return dst[:start], fmt.Errorf("state: snapshot of key group %d: state %q: %w", kg, s.name, err)
		}
		binary.LittleEndian.PutUint64(dst[at:], uint64(len(dst)-at-8))
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli)), nil
}

// Release ends the view: the backend stops copying on writes, and may take
// the next view. The view must not be used afterwards.
func (v *View[K]) Release() { v.flags.all.Store(true) }
