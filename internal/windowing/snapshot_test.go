package windowing

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/internal/clock"
	istate "github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/window"
)

// snapEngine is an engine that can be snapshotted.
type snapEngine interface {
	benchEngine
	Snapshot() (map[int][]byte, error)
	Restore(map[int][]byte) error
}

// TestSnapshotRestoreContinues: on random sliding-window input, an engine
// snapshotted at a random step and restored into a fresh engine (with the
// watermark brought back) emits exactly what the uninterrupted engine
// emits, for the per-window operator (sessions too) and the sliced one.
func TestSnapshotRestoreContinues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slide := rapid.Int64Range(1, 5).Draw(t, "slide")
		size := rapid.Int64Range(slide+1, 20).Draw(t, "size")
		lateness := rapid.Int64Range(0, 6).Draw(t, "lateness")
		kind := rapid.SampledFrom([]string{"sliced", "per-window", "sessions"}).Draw(t, "engine")
		ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
		sum := func(a, b int64) int64 { return a + b }
		newEngine := func(out *[]string) snapEngine {
			b := istate.NewBackend[string](0, 127, clock.NewManual(0))
			emit := func(k string, w window.TimeWindow, v int64) error {
				*out = append(*out, fmt.Sprintf("%s %v %d", k, w, v))
				return nil
			}
			if kind == "sliced" {
				e, err := NewSliced(SlicedConfig[string, int64, int64]{Size: size, Slide: slide, Lateness: lateness,
					Backend: b, Hash: hashString, MaxParallelism: 128,
					Add: func(v, acc int64, has bool) int64 { return acc + v }, Merge: sum, Emit: emit})
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			var a window.Assigner[window.TimeWindow] = window.SlidingEventTime(ms(size), ms(slide))
			if kind == "sessions" {
				a = window.EventTimeSessions(ms(slide))
			}
			contents, _ := NewReducing[string, window.TimeWindow, int64](b, sum)
			e, err := New(Config[string, int64, int64, window.TimeWindow]{
				Assigner: a, Trigger: window.EventTimeTrigger(), Lateness: lateness,
				Backend: b, Hash: hashString, MaxParallelism: 128, Now: func() int64 { return 0 },
				Schedule: func(int64, func(int64) error) {}, Contents: contents, Emit: emit})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		var want, got []string
		ref, cur := newEngine(&want), newEngine(&got)
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		at := rapid.IntRange(0, steps).Draw(t, "snapshot at")
		wm, advanced := int64(0), false
		for i := range steps {
			if i == at {
				kgs, err := cur.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				cur = newEngine(&got)
				if err := cur.Restore(kgs); err != nil {
					t.Fatal(err)
				}
				if advanced {
					if err := cur.AdvanceWatermark(wm); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				wm += rapid.Int64Range(1, 10).Draw(t, "step")
				advanced = true
				_ = ref.AdvanceWatermark(wm)
				_ = cur.AdvanceWatermark(wm)
				continue
			}
			k := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "k")
			ts := rapid.Int64Range(wm-size-lateness, wm+2*size).Draw(t, "ts")
			for _, e := range []snapEngine{ref, cur} {
				e.SetCurrentKey(k)
				v := int64(i)
				_ = e.ProcessElementPtr(&v, ts)
			}
		}
		_ = ref.AdvanceWatermark(1 << 40)
		_ = cur.AdvanceWatermark(1 << 40)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Fatalf("restored engine emitted\n%v\nuninterrupted\n%v", got, want)
		}
	})
}
