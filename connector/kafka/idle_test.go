package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// TestKafkaIdlePartition: one partition of two is silent. With
// WithIdleness it turns idle after the timeout (on the job's manual
// processing-time clock), the downstream watermark follows the other
// partition and the event-time windows fire; without idleness the silent
// partition holds the watermark at its minimum and no window fires.
func TestKafkaIdlePartition(t *testing.T) {
	addr := broker(t)
	t.Run("with idleness", func(t *testing.T) { idlePartition(t, addr, true, 2, 1) })
	t.Run("without idleness", func(t *testing.T) { idlePartition(t, addr, false, 2, 1) })
	// One partition, two subtasks: the subtask without a partition is
	// idle from the start, so the watermark advances without idleness.
	t.Run("subtask without partition", func(t *testing.T) { idlePartition(t, addr, false, 1, 2) })
}

func idlePartition(t *testing.T, addr string, idle bool, partitions, parallelism int) {
	topic := newTopic(t, addr, partitions)
	cl := manual(t, addr)
	// Partition 0: one record every 100 ms of event time; partition 1: none.
	for i := range 30 {
		produce(t, cl, rec(topic, 0, "x", int64(i*100)))
	}
	clk := weirtest.NewManualClock(0)
	env := weir.NewEnvironment(weir.WithParallelism(parallelism), weir.WithClock(clk))
	strategy := weir.ForBoundedOutOfOrderness[string](0)
	if idle {
		strategy = strategy.WithIdleness(time.Second)
	}
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithPartitionDiscovery(0))
	in := weir.FromDynamicSource(env, src, strategy, "kafka")
	raw := weir.Collect(in)
	counts := weir.Reduce(weir.Window(weir.KeyBy(in, func(string) string { return "k" }), window.TumblingEventTime(time.Second)),
		func(a, b string) string { return a + b }).Name("window").SetParallelism(1)
	fired := weir.Collect(counts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := env.ExecuteAsync(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		h.Cancel()
		h.Wait()
	}()
	waitFor(t, ctx, "the first records", func() bool { return raw.Len() == 30 })
	// Ten periodic ticks of 200 ms, partition 0 staying active: after 1 s
	// without records partition 1 is idle.
	n := 30
	for i := range 10 {
		clk.Advance(200)
		produce(t, cl, rec(topic, 0, "x", int64(3000+i*100)))
		n++
		waitFor(t, ctx, "a record", func() bool { return raw.Len() == n })
	}
	// Once the window operator has taken every record, it has also taken
	// every watermark the source emitted before them.
	window := func() metrics.Operator {
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				if om.Name == "window" {
					return om
				}
			}
		}
		t.Fatal("no window operator in the metrics")
		return metrics.Operator{}
	}
	waitFor(t, ctx, "the window operator's input", func() bool { return window().RecordsIn == int64(n) })
	wm := window().InputWatermarks[0]
	if !idle && partitions > parallelism {
		if fired.Len() != 0 || wm != weir.MinWatermark {
			t.Fatalf("without idleness: %d windows fired, input watermark %d; the silent partition must hold it at the minimum", fired.Len(), wm)
		}
		return
	}
	// The watermark follows partition 0: windows up to [2000, 3000) fire.
	waitFor(t, ctx, "three windows", func() bool { return fired.Len() >= 3 })
	if wm < 2999 {
		t.Fatalf("with idleness the input watermark is %d, want partition 0's (>= 2999)", wm)
	}
}
