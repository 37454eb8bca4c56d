package weir_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// Tests that fail a job after a checkpoint must not depend on a checkpoint
// happening to complete before the input ends: on a loaded machine the
// whole input can go by first. This file holds what they wait on instead.

// ckGate opens once the checkpoint store holds a completed checkpoint that
// satisfies cond (nil: any checkpoint).
type ckGate struct {
	st     weir.CheckpointStore
	cond   func(*weir.Checkpoint) bool
	opened atomic.Bool
}

// newCkGate returns a gate on st's checkpoints.
func newCkGate(st weir.CheckpointStore, cond func(*weir.Checkpoint) bool) *ckGate {
	return &ckGate{st: st, cond: cond}
}

// open reports whether the gate has opened: a checkpoint that satisfies
// the condition has completed. It never blocks.
func (g *ckGate) open() bool { return g.opened.Load() }

// wait blocks until the gate opens or ctx is done. It polls the store:
// stores announce nothing.
func (g *ckGate) wait(ctx context.Context) error {
	for pause := 100 * time.Microsecond; !g.opened.Load(); pause = min(2*pause, 5*time.Millisecond) {
		if cp, err := g.st.Latest(ctx); err == nil && cp != nil && (g.cond == nil || g.cond(cp)) {
			g.opened.Store(true)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	return nil
}

// heldGenerate is a bounded source of f(i) for i in [0, n), split in
// contiguous ranges over its subtasks as weir.Generate, that checkpoints
// its positions; each split stops in the middle of its range until gate
// opens (nil: it never stops). So a job whose sources all are held
// completes a checkpoint before the second half of its input, however
// slow the machine is, and no split ends before (a job with a finished
// task takes no more checkpoints). A restored run passes the middle at
// once if the gate is open.
func heldGenerate[T any](env *weir.Environment, n int64, f func(int64) T, gate *ckGate, strategy ...weir.WatermarkStrategy[T]) weir.DataStream[T] {
	s := weir.NoWatermarks[T]()
	if len(strategy) > 0 {
		s = strategy[0]
	}
	return weir.FromSource[T](env, &ckGatedSource[T]{n: n, f: f, gate: gate}, s, "HeldGenerator")
}

// failAfterGate returns a pass-through for Map that panics (once, if fail
// is set) at the first record it sees after gate opened, so that the job
// fails with a checkpoint to restore from, and the flag it sets then.
func failAfterGate[T any](gate *ckGate, fail bool) (func(T) T, *atomic.Bool) {
	failed := new(atomic.Bool)
	return func(v T) T {
		if fail && gate.open() && failed.CompareAndSwap(false, true) {
			panic("fail after a checkpoint")
		}
		return v
	}, failed
}

// pacedGenerate is a bounded source of f(i) for i in [0, n), split in
// contiguous ranges as weir.Generate, that checkpoints its positions;
// from index from on, each split emits one record per checkpoint
// completed in st (it waits for the store to hold a newer checkpoint
// than the one it saw at its last record) until done reports true, then
// the rest at full speed. A test that fails the job once its checkpoints
// look right (done) so sees a checkpoint between any two records of the
// paced part, however slow the machine, and the input never runs out
// first; a run with done nil is not paced.
func pacedGenerate[T any](env *weir.Environment, n, from int64, f func(int64) T, st weir.CheckpointStore, done func() bool) weir.DataStream[T] {
	src := &ckGatedSource[T]{n: n, f: f}
	if done != nil {
		src.pace = &pace{st: st, from: from, done: done}
	}
	return weir.FromSource[T](env, src, weir.NoWatermarks[T](), "PacedGenerator")
}

// pace is the pacing of a pacedGenerate source.
type pace struct {
	st   weir.CheckpointStore
	from int64
	done func() bool
}

// newer waits until st holds a checkpoint with an id above after, the job
// ends (ctx) or done reports true, and returns the latest id.
func (p *pace) newer(ctx context.Context, after int64) (int64, error) {
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		if p.done() {
			return after, nil
		}
		if cp, err := p.st.Latest(ctx); err == nil && cp != nil && cp.ID > after {
			return cp.ID, nil
		}
		select {
		case <-ctx.Done():
			return after, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// failThenResume runs the job build(p1, true) makes, which must fail
// after a checkpoint (setting the flag build returns), then resumes it
// with build(p2, false), which must succeed.
func failThenResume(t *testing.T, build func(p int, fail bool) (*weir.Environment, *atomic.Bool), p1, p2 int) {
	t.Helper()
	env, failed := build(p1, true)
	if err := env.Execute(t.Context(), "first"); err == nil || !failed.Load() {
		t.Fatalf("the first run should fail after a checkpoint (err %v)", err)
	}
	env, _ = build(p2, false)
	if err := env.Execute(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
}

type ckGatedSource[T any] struct {
	n    int64
	f    func(int64) T
	gate *ckGate
	pace *pace
}

type ckGatedSplit struct {
	index, of  int
	start, end int64
}

func (s ckGatedSplit) SplitID() string {
	return "held-" + strconv.Itoa(s.index) + "-of-" + strconv.Itoa(s.of)
}

func (s *ckGatedSource[T]) Splits(p int) ([]connector.Split, error) {
	out := make([]connector.Split, p)
	for i := range p {
		out[i] = ckGatedSplit{index: i, of: p, start: s.n * int64(i) / int64(p), end: s.n * int64(i+1) / int64(p)}
	}
	return out, nil
}

func (s *ckGatedSource[T]) Reader(sp connector.Split) (connector.SplitReader[T], error) {
	h := sp.(ckGatedSplit)
	return &ckGatedReader[T]{s: s, next: h.start, end: h.end, hold: (h.start + h.end) / 2}, nil
}

// ReaderAt resumes a split at a position its reader reported.
func (s *ckGatedSource[T]) ReaderAt(sp connector.Split, pos []byte) (connector.SplitReader[T], error) {
	next, k := binary.Varint(pos)
	h := sp.(ckGatedSplit)
	if k <= 0 || next < h.start || next > h.end {
		return nil, fmt.Errorf("bad position %x of split %s", pos, h.SplitID())
	}
	r, _ := s.Reader(sp)
	r.(*ckGatedReader[T]).next = next
	return r, nil
}

type ckGatedReader[T any] struct {
	s               *ckGatedSource[T]
	next, end, hold int64
	seen            int64 // the latest checkpoint a paced reader saw
}

func (r *ckGatedReader[T]) Read(ctx context.Context, buf []weir.Record[T]) ([]weir.Record[T], error) {
	if p := r.s.pace; p != nil && r.next >= p.from && !p.done() {
		id, err := p.newer(ctx, r.seen)
		if err != nil {
			return buf, err
		}
		r.seen = id
		buf = append(buf, weir.Record[T]{Value: r.s.f(r.next), TS: weir.NoTimestamp})
		if r.next++; r.next >= r.end {
			return buf, io.EOF
		}
		return buf, nil
	}
	if r.next == r.hold && r.s.gate != nil {
		if err := r.s.gate.wait(ctx); err != nil {
			return buf, err
		}
	}
	limit := r.end
	if r.next < r.hold && r.s.gate != nil {
		limit = r.hold
	}
	n := min(int64(max(cap(buf)-len(buf), 1)), limit-r.next)
	for range n {
		buf = append(buf, weir.Record[T]{Value: r.s.f(r.next), TS: weir.NoTimestamp})
		r.next++
	}
	if r.next >= r.end {
		return buf, io.EOF
	}
	return buf, nil
}

func (r *ckGatedReader[T]) Close() error { return nil }

// Position implements the runtime's PositionedReader: the next index.
func (r *ckGatedReader[T]) Position() ([]byte, error) { return binary.AppendVarint(nil, r.next), nil }
