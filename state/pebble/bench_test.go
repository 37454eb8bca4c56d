package pebble_test

import (
	"testing"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/kvstate"
	"github.com/weirstream/weir/state"
)

// benchKeys is the number of distinct keys of the count benchmarks.
const benchKeys = 100_000

// countLoop counts per key over benchKeys keys in turn: one read and one
// update of a value state per op, as a keyed running count does.
func countLoop(b *testing.B, set func(k int64, kg int), v state.ValueState[int64]) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := int64(i % benchKeys)
		set(k, int(k%128))
		c, _ := v.Value()
		v.Update(c + 1)
	}
}

// BenchmarkCountHeap is the value-state count on the heap backend.
func BenchmarkCountHeap(b *testing.B) {
	be := istate.NewBackend[int64](0, 127, clock.NewManual(0))
	v, err := istate.GetValue[int64, struct{}](be, state.Value[int64]("count"))
	if err != nil {
		b.Fatal(err)
	}
	countLoop(b, be.SetCurrentKey, v)
}

// BenchmarkCountPebble is the value-state count on the Pebble backend.
func BenchmarkCountPebble(b *testing.B) {
	be := openTest[int64](b, 0, 127, clock.NewManual(0))
	v, err := kvstate.GetValue[int64, struct{}](be, state.Value[int64]("count"))
	if err != nil {
		b.Fatal(err)
	}
	countLoop(b, be.SetCurrentKey, v)
}

// BenchmarkSnapshotPebble is a full snapshot of 100k counts, per key
// group, per op.
func BenchmarkSnapshotPebble(b *testing.B) {
	be := openTest[int64](b, 0, 127, clock.NewManual(0))
	v, err := kvstate.GetValue[int64, struct{}](be, state.Value[int64]("count"))
	if err != nil {
		b.Fatal(err)
	}
	for k := range int64(benchKeys) {
		be.SetCurrentKey(k, int(k%128))
		v.Update(k)
	}
	b.ResetTimer()
	for b.Loop() {
		for kg := range 128 {
			if _, err := be.SnapshotKeyGroup(kg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/entry")
}
