package windowing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/weirstream/weir/internal/keyedsnap"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Checkpoints of the window engines. Everything an engine keeps per key
// lives in its keyed state backend (window contents, the trigger and
// window-function state of the Store, the merging-window sets, the sliced
// engine's partials) or in its timer service, so a snapshot is
// keyedsnap's frame per key group of the two; key groups move between
// subtasks on a restore at another parallelism. The per-key values below
// that are not plain data get codecs here:
//
//   - the merging-window set of a key (mergeSetCodec): count (uvarint),
//     then per in-flight window the window and its state window (the
//     window type's default codec);
//   - the partials of a key in the sliced engine (sliceListCodec): the
//     key's registered timer (varint, MaxInt64 for none), the time of its
//     last timer (varint, MinInt64 for none), count (uvarint),
//     then per slice its start (varint) and partial (the accumulator's
//     default codec). The two-stacks merges are caches, rebuilt on demand.

var errCorrupt = errors.New("corrupt window state")

// mergeSetCodec encodes *mergeSet[W].
type mergeSetCodec[W comparable] struct{ w state.Codec[W] }

func (c mergeSetCodec[W]) Append(dst []byte, s *mergeSet[W]) ([]byte, error) {
	if s == nil {
		return binary.AppendUvarint(dst, 0), nil
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.ws)))
	var err error
	for i := range s.ws {
		if dst, err = c.w.Append(dst, s.ws[i]); err != nil {
			return dst, err
		}
		if dst, err = c.w.Append(dst, s.states[i]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (c mergeSetCodec[W]) Decode(src []byte) (*mergeSet[W], []byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, src, errCorrupt
	}
	src = src[k:]
	s := &mergeSet[W]{ws: make([]W, 0, n), states: make([]W, 0, n)}
	for range n {
		w, rest, err := c.w.Decode(src)
		if err != nil {
			return nil, src, err
		}
		st, rest, err := c.w.Decode(rest)
		if err != nil {
			return nil, src, err
		}
		s.ws, s.states, src = append(s.ws, w), append(s.states, st), rest
	}
	return s, src, nil
}

// CopyForSnapshot implements istate.Copier: the set's windows are plain
// values (window types are comparable structs).
func (s *mergeSet[W]) CopyForSnapshot() (*mergeSet[W], bool) {
	if !istate.IsPlain(reflect.TypeFor[W]()) {
		return nil, false
	}
	if s == nil {
		return nil, true
	}
	return &mergeSet[W]{ws: slices.Clone(s.ws), states: slices.Clone(s.states)}, true
}

// CopyForSnapshot implements istate.Copier when the accumulator is a
// plain value (else the partials are encoded when a view is taken).
func (l *sliceList[ACC]) CopyForSnapshot() (*sliceList[ACC], bool) {
	if !istate.IsPlain(reflect.TypeFor[ACC]()) {
		return nil, false
	}
	if l == nil {
		return nil, true
	}
	c := *l
	c.parts = slices.Clone(l.parts)
	return &c, true
}

// sliceListCodec encodes *sliceList[ACC].
type sliceListCodec[ACC any] struct{ acc state.Codec[ACC] }

func (c sliceListCodec[ACC]) Append(dst []byte, l *sliceList[ACC]) ([]byte, error) {
	if l == nil {
		l = &sliceList[ACC]{timerAt: math.MaxInt64, done: math.MinInt64}
	}
	dst = binary.AppendVarint(dst, l.timerAt)
	dst = binary.AppendVarint(dst, l.done)
	dst = binary.AppendUvarint(dst, uint64(len(l.parts)))
	var err error
	for i := range l.parts {
		dst = binary.AppendVarint(dst, l.parts[i].start)
		if dst, err = c.acc.Append(dst, l.parts[i].acc); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (c sliceListCodec[ACC]) Decode(src []byte) (*sliceList[ACC], []byte, error) {
	at, k := binary.Varint(src)
	if k <= 0 {
		return nil, src, errCorrupt
	}
	src = src[k:]
	done, k := binary.Varint(src)
	if k <= 0 {
		return nil, src, errCorrupt
	}
	src = src[k:]
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, src, errCorrupt
	}
	src = src[k:]
	l := &sliceList[ACC]{timerAt: at, done: done, parts: make([]slicePart[ACC], n)}
	for i := range l.parts {
		start, k := binary.Varint(src)
		if k <= 0 {
			return nil, src, errCorrupt
		}
		acc, rest, err := c.acc.Decode(src[k:])
		if err != nil {
			return nil, src, err
		}
		l.parts[i].start, l.parts[i].acc, src = start, acc, rest
	}
	return l, src, nil
}

// Snapshot encodes the operator's state and timers per key group.
func (o *Operator[K, IN, V, W]) Snapshot() (map[int][]byte, error) {
	return keyedsnap.Snapshot(o.cfg.Backend, o.timers)
}

// SnapshotAsync takes the synchronous part of Snapshot (a copy-on-write
// view of the backend and a copy of the timers) and returns the part that
// encodes them, which may run on another goroutine. The merging-window
// sets copy themselves on the first access after the view (Copier); window
// contents whose element or accumulator types hold pointers are encoded in
// the synchronous part (internal/state/cow.go).
func (o *Operator[K, IN, V, W]) SnapshotAsync() (keyedsnap.Async, error) {
	return keyedsnap.SnapshotAsync(o.cfg.Backend, o.timers)
}

// Restore restores key groups Snapshot wrote (of any subtask) and
// schedules the earliest processing-time timer; timers already due fire
// at the first watermark or processing-time callback.
func (o *Operator[K, IN, V, W]) Restore(kgs map[int][]byte) error {
	if err := keyedsnap.Restore(o.cfg.Backend, o.timers, kgs); err != nil {
		return fmt.Errorf("window operator: %w", err)
	}
	if next, ok := o.timers.NextProcessingTime(); ok && next < o.scheduledAt {
		o.scheduledAt = next
		o.cfg.Schedule(next, o.OnProcessingTime)
	}
	return nil
}

// Snapshot encodes the operator's partials and timers per key group.
func (s *Sliced[K, IN, ACC]) Snapshot() (map[int][]byte, error) {
	return keyedsnap.Snapshot(s.cfg.Backend, s.timers)
}

// SnapshotAsync is Operator.SnapshotAsync for the sliced engine. A key's
// partials (one pointer value per key) copy themselves on the first
// access after the view when the accumulator is a plain value; otherwise
// they are encoded in the synchronous part.
func (s *Sliced[K, IN, ACC]) SnapshotAsync() (keyedsnap.Async, error) {
	return keyedsnap.SnapshotAsync(s.cfg.Backend, s.timers)
}

// Restore restores key groups Snapshot wrote (of any subtask).
func (s *Sliced[K, IN, ACC]) Restore(kgs map[int][]byte) error {
	if err := keyedsnap.Restore(s.cfg.Backend, s.timers, kgs); err != nil {
		return fmt.Errorf("sliced window operator: %w", err)
	}
	return nil
}

// The codecs' descriptors.
func mergeSetDescriptor[W window.Window]() state.ValueDescriptor[*mergeSet[W]] {
	return state.Value[*mergeSet[W]]("merging-window-set", state.WithCodec[*mergeSet[W]](mergeSetCodec[W]{istate.DefaultCodec[W]()}))
}

func sliceListDescriptor[ACC any]() state.ValueDescriptor[*sliceList[ACC]] {
	return state.Value[*sliceList[ACC]]("window-slices", state.WithCodec[*sliceList[ACC]](sliceListCodec[ACC]{istate.DefaultCodec[ACC]()}))
}
