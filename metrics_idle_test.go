package weir_test

import (
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/weirtest"
)

// operatorMetrics returns the metrics of every subtask's operator named name.
func operatorMetrics(h *weir.JobHandle, name string) []metrics.Operator {
	var out []metrics.Operator
	for _, tm := range h.Metrics() {
		for _, om := range tm.Operators {
			if om.Name == name {
				out = append(out, om)
			}
		}
	}
	return out
}

// waitMetrics polls the job's metrics until ok holds for them, calling
// step (which moves the manual clock) between polls. It fails the test if
// the job ends first or after 2,000 polls (a guard against hangs).
func waitMetrics(t *testing.T, h *weir.JobHandle, what string, step func(), ok func() bool) {
	t.Helper()
	for range 2000 {
		if ok() {
			return
		}
		select {
		case <-h.Done():
			t.Fatalf("the job ended waiting for %s: %v", what, h.Wait())
		default:
		}
		step()
		time.Sleep(time.Millisecond) // let the tasks take the step
	}
	t.Fatalf("no %s in %+v", what, h.Metrics())
}

// TestMetricsWatermarksAndIdleness: Metrics shows each operator's output
// watermark and, per input, whether it is idle: a source with idleness
// detection emits a watermark, then goes idle; the operator behind the
// network exchange and the one chained after it see the watermark, then
// idle inputs.
func TestMetricsWatermarksAndIdleness(t *testing.T) {
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithClock(clk), weir.WithLogger(quietLogger()))
	src := newChanSource[int64](1)
	strategy := weir.ForMonotonousTimestamps[int64]().WithIdleness(time.Second)
	in := weir.FromSource(env, src, strategy, "src")
	kept := weir.Filter(weir.Rebalance(in), func(int64) bool { return true }).Name("after").DisableChaining()
	weir.Discard(weir.Map(kept, func(v int64) int64 { return v }).Name("chained"))
	h, err := env.ExecuteAsync(t.Context(), "idleness")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { h.Cancel(); h.Wait() }()
	src.send(t, h, 0, rec[int64](1, 100), rec[int64](2, 200))

	var tick int64
	advance := func() { tick += 200; clk.Set(tick) }
	watermarkSeen := func() bool {
		s, a, c := operatorMetrics(h, "src"), operatorMetrics(h, "after"), operatorMetrics(h, "chained")
		return len(s) == 1 && len(a) == 1 && len(c) == 1 && s[0].OutputWatermark == 199 &&
			slices.Equal(a[0].InputWatermarks, []int64{199}) && slices.Equal(a[0].InputIdle, []bool{false}) &&
			a[0].OutputWatermark == 199 && slices.Equal(c[0].InputWatermarks, []int64{199}) && slices.Equal(c[0].InputIdle, []bool{false})
	}
	// send only hands the records to the source's channel: the clock moves
	// once the source has read both, so that the first periodic tick after
	// them emits 199 (a tick before them would emit nothing, and a second
	// tick could count toward the idleness timeout).
	readBoth := func() bool {
		s := operatorMetrics(h, "src")
		return len(s) == 1 && len(s[0].Splits) == 1 && s[0].Splits[0].Records == 2
	}
	waitMetrics(t, h, "watermark 199", func() {
		if tick == 0 && readBoth() {
			advance() // the first periodic tick emits 199
		}
	}, watermarkSeen)

	idleSeen := func() bool {
		a, c := operatorMetrics(h, "after"), operatorMetrics(h, "chained")
		return len(a) == 1 && len(c) == 1 && slices.Equal(a[0].InputIdle, []bool{true}) && slices.Equal(c[0].InputIdle, []bool{true}) &&
			slices.Equal(a[0].InputWatermarks, []int64{199})
	}
	waitMetrics(t, h, "idle inputs", advance, idleSeen)
	if s := operatorMetrics(h, "src"); !s[0].OutputIdle {
		t.Errorf("the idle source's output is not idle: %+v", s[0])
	}
}
