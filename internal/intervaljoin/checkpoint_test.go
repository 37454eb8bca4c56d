package intervaljoin

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/keygroup"
)

type ckRec struct {
	Key string
	ID  int
}

// newTestJoin builds an interval join operator over key groups
// [first, last] of 128, restored from kgs if not nil, whose join function
// appends "key left right @ts" (-1 for an absent side) to *got.
func newTestJoin(t interface{ Fatal(...any) }, lower, upper int64, kind Kind, first, last int, kgs map[int][]byte) (*Op[string, ckRec, ckRec], *[]string) {
	got := new([]string)
	emit := func(l, r *ckRec, lts, rts int64) error {
		k, lid, rid := "", -1, -1
		if l != nil {
			k, lid = l.Key, l.ID
		}
		if r != nil {
			k, rid = r.Key, r.ID
		}
		*got = append(*got, fmt.Sprintf("%s %d %d @%d", k, lid, rid, max(lts, rts)))
		return nil
	}
	o := newTestOp(t, lower, upper, kind, first, last, func(r ckRec) string { return r.Key }, emit)
	if kgs != nil {
		if err := o.Restore(kgs); err != nil {
			t.Fatal(err)
		}
	}
	return o, got
}

// newTestOp builds an interval join over key groups [first, last] of 128
// whose left input has type L.
func newTestOp[L any](t interface{ Fatal(...any) }, lower, upper int64, kind Kind, first, last int, keyL func(L) string, emit EmitFunc[L, ckRec]) *Op[string, L, ckRec] {
	h, err := keygroup.HasherFor[string]()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config[string, L, ckRec]{Lower: lower, Upper: upper, Kind: kind,
		KeyL: keyL, KeyR: func(r ckRec) string { return r.Key }, Hash: h,
		MaxParallelism: 128, Emit: emit}
	cfg.KeyGroups.Start, cfg.KeyGroups.End = first, last
	return New(cfg)
}

type ckStep struct {
	left bool
	wm   bool
	rec  ckRec
	ts   int64
}

func runSteps(t interface{ Fatal(...any) }, o *Op[string, ckRec, ckRec], steps []ckStep, owns func(string) bool) {
	for _, s := range steps {
		var err error
		switch {
		case s.wm:
			err = o.Advance(s.ts)
		case !owns(s.rec.Key):
		case s.left:
			err = o.ProcessBatch1([]engine.Record[ckRec]{{Value: s.rec, TS: s.ts}})
		default:
			err = o.ProcessBatch2([]engine.Record[ckRec]{{Value: s.rec, TS: s.ts}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// drawJoinSteps draws bounds, a join kind and up to max steps: records of
// the keys on either side at random timestamps, and rising watermarks.
func drawJoinSteps(t *rapid.T, keys []string, max int) (lower, upper int64, kind Kind, steps []ckStep) {
	lower = rapid.Int64Range(-4, 4).Draw(t, "lower")
	upper = rapid.Int64Range(lower, lower+5).Draw(t, "upper")
	kind = Kind(rapid.IntRange(0, 3).Draw(t, "kind"))
	n := rapid.IntRange(1, max).Draw(t, "steps")
	wm := int64(-1)
	for i := range n {
		if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
			wm += rapid.Int64Range(0, 6).Draw(t, "advance")
			steps = append(steps, ckStep{wm: true, ts: wm})
			continue
		}
		steps = append(steps, ckStep{left: rapid.Bool().Draw(t, "left"),
			rec: ckRec{rapid.SampledFrom(keys).Draw(t, "key"), i}, ts: rapid.Int64Range(0, 40).Draw(t, "ts")})
	}
	return lower, upper, kind, steps
}

// TestIntervalJoinSnapshotRestore snapshots a join at a random point and
// restores it at parallelism 1 and 2: the restored operators emit exactly
// what the original emits from then on (the same sequence at parallelism
// 1; at parallelism 2, each subtask the original's sequence restricted to
// its keys), so buffers, joined flags, pending cleanups and the order of
// cleanups with equal times all survive.
func TestIntervalJoinSnapshotRestore(t *testing.T) {
	h, _ := keygroup.HasherFor[string]()
	keys := []string{"a", "b", "key", "hello", "x", "y"}
	rapid.Check(t, func(t *rapid.T) {
		lower, upper, kind, steps := drawJoinSteps(t, keys, 60)
		n := len(steps)
		cut := rapid.IntRange(0, n).Draw(t, "cut")
		all := func(string) bool { return true }
		a, gotA := newTestJoin(t, lower, upper, kind, 0, 127, nil)
		runSteps(t, a, steps[:cut], all)
		kgs, err := a.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		rest := steps[cut:]
		if a.wm != math.MinInt64 {
			// A restored operator starts at the minimum watermark; give it
			// the original's, which both then fire up to.
			rest = append([]ckStep{{wm: true, ts: a.wm}}, rest...)
		}
		rest = append(rest, ckStep{wm: true, ts: math.MaxInt64})
		before := len(*gotA)
		runSteps(t, a, rest, all)
		want := (*gotA)[before:]

		c, gotC := newTestJoin(t, lower, upper, kind, 0, 127, kgs)
		runSteps(t, c, rest, all)
		if !slices.Equal(*gotC, want) {
			t.Fatalf("restored at p=1:\n got %q\nwant %q", *gotC, want)
		}
		for _, r := range []keygroup.Range{{Start: 0, End: 63}, {Start: 64, End: 127}} {
			owns := func(k string) bool { kg := keygroup.Of(h(k), 128); return kg >= r.Start && kg <= r.End }
			part := map[int][]byte{}
			for kg := r.Start; kg <= r.End; kg++ {
				part[kg] = kgs[kg]
			}
			b, gotB := newTestJoin(t, lower, upper, kind, r.Start, r.End, part)
			runSteps(t, b, rest, owns)
			var wantB []string
			for _, s := range want {
				var k string
				fmt.Sscan(s, &k)
				if owns(k) {
					wantB = append(wantB, s)
				}
			}
			if !slices.Equal(*gotB, wantB) {
				t.Fatalf("restored key groups %v:\n got %q\nwant %q", r, *gotB, wantB)
			}
		}
	})
}

// TestIntervalJoinAsyncSnapshotIsPointInTime takes the asynchronous
// snapshot's view at a random point, goes on processing (records join,
// buffers grow, cleanups fire and buffers shrink), and only then encodes
// the view: it must equal, byte for byte, the synchronous snapshot taken
// at the same point.
func TestIntervalJoinAsyncSnapshotIsPointInTime(t *testing.T) {
	keys := []string{"a", "b", "key", "hello", "x", "y"}
	rapid.Check(t, func(t *rapid.T) {
		lower, upper, kind, steps := drawJoinSteps(t, keys, 80)
		n := len(steps)
		cut := rapid.IntRange(0, n).Draw(t, "cut")
		all := func(string) bool { return true }
		a, _ := newTestJoin(t, lower, upper, kind, 0, 127, nil)
		runSteps(t, a, steps[:cut], all)
		want, err := a.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		async, err := a.SnapshotAsync()
		if err != nil {
			t.Fatal(err)
		}
		runSteps(t, a, append(steps[cut:], ckStep{wm: true, ts: math.MaxInt64}), all)
		got, err := async(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.KeyGroups) != len(want) {
			t.Fatalf("%d key groups, want %d", len(got.KeyGroups), len(want))
		}
		for kg, b := range want {
			if !slices.Equal(got.KeyGroups[kg], b) {
				t.Fatalf("key group %d differs from the synchronous snapshot", kg)
			}
		}
	})
}

// TestIntervalJoinSnapshotRejectsCorruption checks that a damaged or
// foreign key-group blob fails the restore.
func TestIntervalJoinSnapshotRejectsCorruption(t *testing.T) {
	a, _ := newTestJoin(t, 0, 5, FullOuter, 0, 127, nil)
	for i := range 20 {
		if err := a.ProcessBatch1([]engine.Record[ckRec]{{Value: ckRec{"k", i}, TS: int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	kgs, err := a.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := keygroup.HasherFor[string]()
	kg := keygroup.Of(h("k"), 128)
	bad := slices.Clone(kgs[kg])
	bad[len(bad)/2] ^= 1
	o, _ := newTestJoin(t, 0, 5, FullOuter, 0, 127, nil)
	if err := o.restore(map[int][]byte{kg: bad}); err == nil {
		t.Fatal("restored a corrupt snapshot")
	}
	o, _ = newTestJoin(t, 0, 5, FullOuter, 0, 127, nil)
	if err := o.restore(map[int][]byte{kg + 1: kgs[kg]}); err == nil {
		t.Fatal("restored a key group under another number")
	}
}
