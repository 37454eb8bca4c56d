package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// countBackend returns a backend over key groups 0..127 whose value state
// "count" (int64, with the given TTL config) holds n int64 keys.
func countBackend[V any](tb testing.TB, n int, d state.ValueDescriptor[V], val func(k int64) V) *Backend[int64] {
	be := NewBackend[int64](0, 127, clock.NewManual(1))
	v, err := GetValue[int64, struct{}](be, d)
	if err != nil {
		tb.Fatal(err)
	}
	for k := range int64(n) {
		be.SetCurrentKey(k, keyGroupOf(k, 0, 127))
		v.Update(val(k))
	}
	return be
}

// benchSnapshot snapshots all 128 key groups of be per iteration, reusing
// one buffer per key group, and reports the time per entry and the size.
func benchSnapshot(b *testing.B, be *Backend[int64], entries int) {
	bufs := make([][]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	size := 0
	for b.Loop() {
		size = 0
		for kg := range 128 {
			var err error
			if bufs[kg], err = be.AppendKeyGroupSnapshot(bufs[kg][:0], kg); err != nil {
				b.Fatal(err)
			}
			size += len(bufs[kg])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
	b.ReportMetric(float64(size)/float64(entries), "bytes/entry")
}

// BenchmarkSnapshot1MValues snapshots a value state of 1M int64 keys with
// int64 values, all 128 key groups per iteration (ns/op is the whole
// snapshot).
func BenchmarkSnapshot1MValues(b *testing.B) {
	const n = 1_000_000
	be := countBackend(b, n, state.Value[int64]("count"), func(k int64) int64 { return k * 3 })
	benchSnapshot(b, be, n)
}

// BenchmarkSnapshot1MValuesTTL is BenchmarkSnapshot1MValues with TTL: each
// entry also carries its timestamp.
func BenchmarkSnapshot1MValuesTTL(b *testing.B) {
	const n = 1_000_000
	be := countBackend(b, n, state.Value[int64]("count", state.WithTTL(state.TTL(time.Hour))), func(k int64) int64 { return k * 3 })
	benchSnapshot(b, be, n)
}

// BenchmarkSnapshot1MStructValues snapshots 1M values of a struct of
// scalars and a string (the layout codec).
func BenchmarkSnapshot1MStructValues(b *testing.B) {
	type stats struct {
		Sum, Count int64
		Last       float64
		Name       string
	}
	const n = 1_000_000
	be := countBackend(b, n, state.Value[stats]("stats"), func(k int64) stats {
		return stats{Sum: k, Count: 1, Last: 0.5, Name: "sensor"}
	})
	benchSnapshot(b, be, n)
}

// BenchmarkSnapshot100kGobValues shows the cost of the gob fallback: 100k
// values of a struct holding a slice.
func BenchmarkSnapshot100kGobValues(b *testing.B) {
	type hist struct{ Buckets []int64 }
	const n = 100_000
	be := countBackend(b, n, state.Value[hist]("hist"), func(k int64) hist { return hist{Buckets: []int64{k, 1, 2}} })
	benchSnapshot(b, be, n)
}

// BenchmarkRestore1MValues restores the snapshot of BenchmarkSnapshot1MValues
// into a fresh backend and registers the state (decoding it), per
// iteration.
func BenchmarkRestore1MValues(b *testing.B) {
	const n = 1_000_000
	src := countBackend(b, n, state.Value[int64]("count"), func(k int64) int64 { return k * 3 })
	snaps := make([][]byte, 128)
	for kg := range snaps {
		var err error
		if snaps[kg], err = src.SnapshotKeyGroup(kg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		be := NewBackend[int64](0, 127, clock.NewManual(1))
		for kg, d := range snaps {
			if err := be.RestoreKeyGroup(kg, d); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := GetValue[int64, struct{}](be, state.Value[int64]("count")); err != nil {
			b.Fatal(err)
		}
		if be.KeyCount() != n {
			b.Fatal(fmt.Sprintf("restored %d entries", be.KeyCount()))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
}
