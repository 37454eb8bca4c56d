package intervaljoin

import (
	"strconv"
	"testing"

	"github.com/weirstream/weir/internal/engine"
)

type benchRec struct {
	K int64
	V int64
}

// BenchmarkIntervalJoinProbe measures one left record against a right
// buffer of one hot key holding `buffer` records (timestamps 0..buffer-1),
// with bounds [0, 1]: two matches per probe. "indexed" is Weir's
// timestamp-ordered probe, "naive" scans every bucket as Flink does.
func BenchmarkIntervalJoinProbe(b *testing.B) {
	for _, n := range []int{100, 10000, 100000} {
		for _, variant := range []string{"indexed", "naive"} {
			b.Run("buffer="+strconv.Itoa(n)+"/"+variant, func(b *testing.B) {
				matches := 0
				k := func(v benchRec) int64 { return v.K }
				cfg := Config[int64, benchRec, benchRec]{Lower: 0, Upper: 1, KeyL: k, KeyR: k,
					Hash: func(k int64) int32 { return int32(k) }, MaxParallelism: 128, FullScan: variant == "naive",
					Emit: func(*benchRec, *benchRec, int64, int64) error { matches++; return nil }}
				cfg.KeyGroups.End = 127
				o := New(cfg)
				for i := range n {
					if err := o.ProcessBatch2([]engine.Record[benchRec]{{Value: benchRec{1, int64(i)}, TS: int64(i)}}); err != nil {
						b.Fatal(err)
					}
				}
				probe := int64(n / 2)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := o.ProcessBatch1([]engine.Record[benchRec]{{Value: benchRec{1, int64(i)}, TS: probe}}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if matches != 2*b.N {
					b.Fatalf("%d matches for %d probes, want 2 each", matches, b.N)
				}
			})
		}
	}
}
