package weir

import (
	"strconv"
	"testing"
	"time"
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
				opts := []IntervalJoinOption{}
				if variant == "naive" {
					opts = append(opts, func(c *intervalJoinConfig) { c.fullScan = true })
				}
				matches := 0
				h, err := NewTwoInputHarness(func(l, r DataStream[benchRec]) DataStream[int] {
					k := func(v benchRec) int64 { return v.K }
					return IntervalJoin(KeyBy(l, k), KeyBy(r, k), Between(0, time.Millisecond),
						processJoinFunc[benchRec, benchRec, int](func(benchRec, benchRec, JoinContext, Collector[int]) error {
							matches++
							return nil
						}), opts...)
				})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if err := h.ProcessElement2(0, benchRec{1, int64(i)}, int64(i)); err != nil {
						b.Fatal(err)
					}
				}
				probe := int64(n / 2)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := h.ProcessElement1(0, benchRec{1, int64(i)}, probe); err != nil {
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
