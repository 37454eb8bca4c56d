package state

import (
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// TestRapidSnapshotRestore runs random operations on every state kind (with
// or without TTL, over random keys, namespaces and clock moves), snapshots
// every key group, restores the snapshots into fresh backends that split
// the key-group range at random points (registering their states before or
// after the restore, restoring the key groups in random order), and checks
// that together they hold exactly the original entries, TTL timestamps
// included. The restored backends are snapshotted again and merged into
// one backend, which must hold the same entries.
func TestRapidSnapshotRestore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.IntRange(0, 20).Draw(t, "lo")
		hi := rapid.IntRange(lo, lo+12).Draw(t, "hi")
		var ttl state.TTLConfig
		if rapid.Bool().Draw(t, "ttl") {
			ttl = state.TTL(20 * time.Millisecond)
			ttl.Update = rapid.SampledFrom([]state.UpdateType{state.UpdateOnCreateAndWrite, state.UpdateOnReadAndWrite}).Draw(t, "update")
			ttl.CleanupEntries = rapid.IntRange(0, 3).Draw(t, "cleanup")
		}
		clk := clock.NewManual(rapid.Int64Range(0, 100).Draw(t, "start"))
		orig := newFixture(t, lo, hi, clk, ttl)
		kgOfKey := func(k int64) int { return lo + int(uint64(k)*2654435761%uint64(hi-lo+1)) }
		namespaces := rapid.SampledFrom([]string{"", "a", "b"})
		windows := rapid.SampledFrom([]window.TimeWindow{{Start: 0, End: 10}, {Start: 10, End: 20}, {Start: -5, End: 5}})
		vals := rapid.IntRange(-50, 50)
		f := orig
		f.b.SetCurrentKey(0, kgOfKey(0))

		ops := rapid.IntRange(0, 150).Draw(t, "ops")
		for range ops {
			switch rapid.IntRange(0, 17).Draw(t, "op") {
			case 0, 1:
				k := rapid.Int64Range(0, 11).Draw(t, "key")
				f.b.SetCurrentKey(k, kgOfKey(k))
			case 2:
				f.v.SetNamespace(namespaces.Draw(t, "ns"))
				f.l.SetNamespace(namespaces.Draw(t, "ns"))
				f.r.SetNamespace(namespaces.Draw(t, "ns"))
				f.m.SetNamespace(windows.Draw(t, "w"))
			case 3, 4:
				f.v.Update(rapid.StringN(0, 5, 5).Draw(t, "s"))
			case 5:
				f.v.Clear()
			case 6:
				f.v.Value()
			case 7:
				f.l.Add(vals.Draw(t, "v"))
			case 8:
				f.l.Update(rapid.SliceOfN(vals, 0, 3).Draw(t, "vs"))
			case 9:
				f.l.Get()
			case 10:
				f.l.MergeNamespaces(namespaces.Draw(t, "target"), []string{namespaces.Draw(t, "src")})
			case 11:
				f.m.Put(rapid.StringN(0, 2, 2).Draw(t, "mk"), int64(vals.Draw(t, "v")))
			case 12:
				f.m.Remove(rapid.StringN(0, 2, 2).Draw(t, "mk"))
			case 13:
				for range f.m.All() {
				}
			case 14:
				f.r.Add(int64(vals.Draw(t, "v")))
			case 15:
				f.a.Add(vals.Draw(t, "v"))
			case 16:
				f.a.Clear()
			case 17:
				clk.Advance(rapid.Int64Range(0, 15).Draw(t, "ms"))
			}
		}
		want := orig.dump(nil)
		snaps := snapshotAll(t, orig)

		// Split [lo, hi] at random points.
		var parts []*fixture
		start := lo
		for start <= hi {
			end := rapid.IntRange(start, hi).Draw(t, "end")
			parts = append(parts, restoreShuffled(t, snaps, start, end, clk, ttl))
			start = end + 1
		}
		if got := dumpAll(parts...); !maps.Equal(got, want) {
			t.Fatalf("restored into %d parts:\n got %v\nwant %v", len(parts), got, want)
		}

		// And back into one backend.
		again := map[int][]byte{}
		for _, p := range parts {
			maps.Copy(again, snapshotAll(t, p))
		}
		merged := restoreShuffled(t, again, lo, hi, clk, ttl)
		if got := merged.dump(nil); !maps.Equal(got, want) {
			t.Fatalf("merged again:\n got %v\nwant %v", got, want)
		}
		if merged.b.KeyCount() != orig.b.KeyCount() {
			t.Fatalf("KeyCount %d, want %d", merged.b.KeyCount(), orig.b.KeyCount())
		}
	})
}

// restoreShuffled is restoreRange with the key groups restored in a random
// order and the states registered before or after.
func restoreShuffled(t *rapid.T, snaps map[int][]byte, first, last int, clk clock.Clock, ttl state.TTLConfig) *fixture {
	f := &fixture{b: NewBackend[int64](first, last, clk)}
	registerFirst := rapid.Bool().Draw(t, "registerFirst")
	if registerFirst {
		f.register(t, ttl, stateNames...)
	}
	var kgs []int
	for kg := first; kg <= last; kg++ {
		kgs = append(kgs, kg)
	}
	for _, kg := range rapid.Permutation(kgs).Draw(t, "order") {
		if err := f.b.RestoreKeyGroup(kg, snaps[kg]); err != nil {
			t.Fatalf("restore of key group %d: %v", kg, err)
		}
	}
	if !registerFirst {
		f.register(t, ttl, stateNames...)
	}
	f.checkInvariants(t)
	return f
}
