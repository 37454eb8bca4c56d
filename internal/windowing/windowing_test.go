package windowing

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/window"
)

func hashString(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}

// TestCleanupLeavesNothing: after the maximum watermark, the per-window
// and the sliced operator hold no state and no timers (sliding windows,
// random input and lateness).
func TestCleanupLeavesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slide := rapid.Int64Range(1, 5).Draw(t, "slide")
		size := rapid.Int64Range(slide+1, 20).Draw(t, "size")
		lateness := rapid.Int64Range(0, 6).Draw(t, "lateness")
		sum := func(a, b int64) int64 { return a + b }
		bs := istate.NewBackend[string](0, 127, clock.NewManual(0))
		bp := istate.NewBackend[string](0, 127, clock.NewManual(0))
		sl, err := NewSliced(SlicedConfig[string, int64, int64]{Size: size, Slide: slide, Lateness: lateness,
			Backend: bs, Hash: hashString, MaxParallelism: 128,
			Add: func(v, acc int64, has bool) int64 { return acc + v }, Merge: sum,
			Emit: func(string, window.TimeWindow, int64) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		contents, _ := NewReducing[string, window.TimeWindow, int64](bp, sum)
		ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
		pw, err := New(Config[string, int64, int64, window.TimeWindow]{
			Assigner: window.SlidingEventTime(ms(size), ms(slide)), Trigger: window.EventTimeTrigger(), Lateness: lateness,
			Backend: bp, Hash: hashString, MaxParallelism: 128, Now: func() int64 { return 0 },
			Schedule: func(int64, func(int64) error) {}, Contents: contents,
			Emit: func(string, window.TimeWindow, int64) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		wm := int64(0)
		for i := range rapid.IntRange(1, 60).Draw(t, "n") {
			if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				wm += rapid.Int64Range(1, 10).Draw(t, "step")
				_ = sl.AdvanceWatermark(wm)
				_ = pw.AdvanceWatermark(wm)
				continue
			}
			k := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "k")
			ts := rapid.Int64Range(wm-size-lateness, wm+2*size).Draw(t, "ts")
			sl.SetCurrentKey(k)
			_ = sl.ProcessElement(int64(i), ts)
			pw.SetCurrentKey(k)
			_ = pw.ProcessElement(int64(i), ts)
		}
		_ = sl.AdvanceWatermark(math.MaxInt64)
		_ = pw.AdvanceWatermark(math.MaxInt64)
		if n := bs.KeyCount(); n != 0 || sl.Timers().EventTimers().Len() != 0 {
			t.Fatalf("sliced: %d state entries and %d timers left", n, sl.Timers().EventTimers().Len())
		}
		if n := bp.KeyCount(); n != 0 || pw.Timers().EventTimers().Len() != 0 {
			t.Fatalf("per-window: %d state entries and %d timers left", n, pw.Timers().EventTimers().Len())
		}
	})
}
