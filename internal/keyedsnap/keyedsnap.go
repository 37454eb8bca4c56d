// Package keyedsnap snapshots and restores the keyed part of an operator
// (its keyed state backend and one timer service) per key group, in the
// frame the checkpoint files hold: per key group, the length of the state
// snapshot (uvarint), the state snapshot (internal/state/FORMAT.md), then
// the timer snapshot (internal/timer).
package keyedsnap

import (
	"context"
	"encoding/binary"
	"fmt"

	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/timer"
)

// Backend is the part of a keyed state backend (the heap one of
// internal/state or the Pebble one) that snapshots and restores need.
type Backend interface {
	KeyGroupRange() (first, last int)
	SnapshotKeyGroup(kg int) ([]byte, error)
	RestoreKeyGroup(kg int, data []byte) error
}

// Snapshot encodes every key group of b's range.
func Snapshot[K comparable, N comparable](b Backend, t *timer.Service[K, N]) (map[int][]byte, error) {
	first, last := b.KeyGroupRange()
	kc, nc := istate.DefaultCodec[K](), istate.DefaultCodec[N]()
	timers, err := t.SnapshotKeyGroups(first, last, kc, nc)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]byte, last-first+1)
	for kg := first; kg <= last; kg++ {
		st, err := b.SnapshotKeyGroup(kg)
		if err != nil {
			return nil, err
		}
		frame := binary.AppendUvarint(make([]byte, 0, len(st)+len(timers[kg-first])+4), uint64(len(st)))
		frame = append(frame, st...)
		out[kg] = append(frame, timers[kg-first]...)
	}
	return out, nil
}

// Async is the asynchronous part of a snapshot: it encodes what the
// synchronous part took, in Snapshot's frame. It must be called exactly
// once, on any goroutine; when ctx ends it stops between key groups and
// returns ctx's error. Either way it releases the state backend's view.
type Async func(ctx context.Context) (map[int][]byte, error)

// SnapshotAsync takes the synchronous part of a snapshot of b and t: with
// the heap backend, a copy-on-write view of the keyed state (no entry is
// copied or encoded now) and a copy of the timers (timer.View); other
// backends are encoded now, as Snapshot does, and the returned function
// only hands the result over.
func SnapshotAsync[K comparable, N comparable](b Backend, t *timer.Service[K, N]) (Async, error) {
	hb, ok := b.(*istate.Backend[K])
	if !ok {
		kgs, err := Snapshot(b, t)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (map[int][]byte, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return kgs, nil
		}, nil
	}
	first, last := hb.KeyGroupRange()
	tv, err := t.View(first, last)
	if err != nil {
		return nil, err
	}
	sv, err := hb.View()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (map[int][]byte, error) {
		defer sv.Release()
		kc, nc := istate.DefaultCodec[K](), istate.DefaultCodec[N]()
		out := make(map[int][]byte, last-first+1)
		for kg := first; kg <= last; kg++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			st, err := sv.AppendKeyGroupSnapshot(nil, kg)
			if err != nil {
				return nil, err
			}
			// The frame is built around the state snapshot: its length
			// first, then the timers appended.
			frame := binary.AppendUvarint(make([]byte, 0, len(st)+binary.MaxVarintLen64+64), uint64(len(st)))
			frame = append(frame, st...)
			if frame, err = tv.AppendKeyGroupSnapshot(frame, kg, kc, nc); err != nil {
				return nil, err
			}
			out[kg] = frame
		}
		return out, nil
	}, nil
}

// Restore restores the key groups Snapshot wrote into b and t.
func Restore[K comparable, N comparable](b Backend, t *timer.Service[K, N], kgs map[int][]byte) error {
	kc, nc := istate.DefaultCodec[K](), istate.DefaultCodec[N]()
	for kg, data := range kgs {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			return fmt.Errorf("restoring key group %d: corrupt frame", kg)
		}
		if err := b.RestoreKeyGroup(kg, data[k:k+int(n)]); err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
		if err := t.RestoreKeyGroup(kg, data[k+int(n):], kc, nc); err != nil {
			return fmt.Errorf("restoring the timers of key group %d: %w", kg, err)
		}
	}
	return nil
}
