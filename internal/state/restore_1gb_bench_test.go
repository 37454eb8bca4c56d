package state

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/clock"
	"github.com/weirstream/weir/state"
)

// BenchmarkRestore1GB restores about 1 GB of heap keyed state (4M keys,
// a 256-byte value each) from its key-group snapshots into a fresh
// backend, the cost a job pays at restart (issue 6: <= 10 s). It reports
// seconds per restore and the snapshot size. Run it alone: it holds three
// copies of the state (source, snapshot, restored) in memory.
func BenchmarkRestore1GB(b *testing.B) {
	const n, size = 4 << 20, 256
	src := NewBackend[int64](0, 127, clock.NewManual(1))
	h, err := GetValue[int64, struct{}](src, state.Value[[]byte]("blob"))
	if err != nil {
		b.Fatal(err)
	}
	for k := range int64(n) {
		src.SetCurrentKey(k, int(k%128))
		v := make([]byte, size)
		v[0], v[size-1] = byte(k), byte(k>>8)
		h.Update(v)
	}
	snaps := make([][]byte, 128)
	total := 0
	for kg := range snaps {
		if snaps[kg], err = src.SnapshotKeyGroup(kg); err != nil {
			b.Fatal(err)
		}
		total += len(snaps[kg])
	}
	src, h = nil, nil
	b.ResetTimer()
	for b.Loop() {
		be := NewBackend[int64](0, 127, clock.NewManual(1))
		for kg, d := range snaps {
			if err := be.RestoreKeyGroup(kg, d); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := GetValue[int64, struct{}](be, state.Value[[]byte]("blob")); err != nil {
			b.Fatal(err)
		}
		if got := be.KeyCount(); got != n {
			b.Fatal(fmt.Sprintf("restored %d entries", got))
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/restore")
	b.ReportMetric(float64(total)/1e9, "GB")
}
