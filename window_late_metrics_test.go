package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/window"
)

// TestMetricsCountLateRecordsDropped: a window operator without a late
// side output reports the late records it dropped in Metrics (Flink's
// numLateRecordsDropped), on the per-window path (tumbling) and on the
// sliced one (sliding reduce); with a late side output nothing is dropped
// and the count stays 0.
func TestMetricsCountLateRecordsDropped(t *testing.T) {
	// A watermark at every record's timestamp: 200 and 300 come after
	// watermark 1500 (window [0, 1000) is gone), 1200 after 2500.
	var recs []weir.Record[int64]
	for _, ts := range []int64{100, 1500, 200, 300, 2500, 1200, 2600} {
		recs = append(recs, weir.Record[int64]{Value: ts, TS: ts})
	}
	late := weir.NewOutputTag[int64]("late")
	sum := func(a, b int64) int64 { return a + b }
	for _, c := range []struct {
		name     string
		assigner window.Assigner[window.TimeWindow]
		side     bool
		want     int64
	}{
		{"tumbling", window.TumblingEventTime(time.Second), false, 3},
		{"sliding (sliced)", window.SlidingEventTime(time.Second, 500*time.Millisecond), false, 3},
		{"tumbling with a late side output", window.TumblingEventTime(time.Second), true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(1))
			ws := weir.Window(weir.KeyBy(weir.FromRecords(env, recs, punctuatedStrategy[int64]()), func(int64) int { return 0 }), c.assigner)
			if c.side {
				ws = ws.SideOutputLateData(late)
			}
			sums := weir.Reduce(ws, sum).Name("window")
			weir.Discard(sums)
			if c.side {
				weir.Discard(weir.SideOutput(sums, late))
			}
			h, err := env.ExecuteAsync(context.Background(), "late")
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Wait(); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, tm := range h.Metrics() {
				for _, om := range tm.Operators {
					if om.Name == "window" {
						found = true
						if om.LateRecordsDropped != c.want {
							t.Errorf("window dropped %d late records, want %d", om.LateRecordsDropped, c.want)
						}
					} else if om.LateRecordsDropped != 0 {
						t.Errorf("%s reports %d late records dropped", om.Name, om.LateRecordsDropped)
					}
				}
			}
			if !found {
				t.Fatal("no metrics for the window operator")
			}
		})
	}
}
