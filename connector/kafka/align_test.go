package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestKafkaWatermarkAlignment (issue 19): two partitions of one topic at
// very different event-time speeds (partition 0: 10 ms of event time per
// record, partition 1: 1 ms), read by one subtask and joined by an
// interval join on equal timestamps. Records are produced 5 (fast) and 10
// (slow) to a record batch, and the source fetches one batch per
// partition per fetch (kgo.FetchMaxPartitionBytes(1): a fetch returns at
// least one batch), so both partitions advance at the same number of
// fetches: the fast one 50 ms of event time per fetch, the slow one 10.
// Without alignment the fast partition is read to its end while the slow
// one is at a tenth of it, and the join buffers nearly all fast records;
// with alignment (FLIP-217: the fast partition is paused through the
// client's fetch pause) the join's buffer stays within the drift plus the
// fetches in flight. The joined pairs are the same.
func TestKafkaWatermarkAlignment(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 2)
	cl := manual(t, addr)
	const (
		fastN, fastPerBatch, fastSpacing = 400, 5, 10 // ts 0, 10, ..., 3990
		slowN, slowPerBatch              = 4000, 10   // ts 0, 1, ..., 3999
	)
	var batch []*kgo.Record
	for i := range fastN {
		batch = append(batch, rec(topic, 0, fmt.Sprintf("f%d", i), int64(i*fastSpacing)))
		if len(batch) == fastPerBatch {
			produce(t, cl, batch...)
			batch = nil
		}
	}
	for i := range slowN {
		batch = append(batch, rec(topic, 1, fmt.Sprintf("s%d", i), int64(i)))
		if len(batch) == slowPerBatch {
			produce(t, cl, batch...)
			batch = nil
		}
	}
	const drift = 100 * time.Millisecond
	const credits = 2
	run := func(aligned bool) (pairs []string, peak float64) {
		env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithAutoWatermarkInterval(time.Millisecond),
			weir.WithBufferCredits(credits))
		strategy := weir.ForMonotonousTimestamps[string]()
		if aligned {
			strategy = strategy.WithWatermarkAlignment("kafka-skew", drift, time.Millisecond)
		}
		src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithPartitionDiscovery(0),
			kafka.WithBounded(kafka.Latest()), kafka.WithClientOptions(kgo.FetchMaxPartitionBytes(1)))
		in := weir.FromDynamicSource(env, src, strategy, "kafka")
		fast := weir.Filter(in, func(v string) bool { return v[0] == 'f' })
		slow := weir.Filter(in, func(v string) bool { return v[0] == 's' })
		key := func(string) int { return 0 }
		joined := weir.IntervalJoinFunc(weir.KeyBy(fast, key), weir.KeyBy(slow, key), weir.Between(0, 0),
			func(l, r string, ctx weir.JoinContext, out weir.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s@%d=%s@%d", l, ctx.LeftTimestamp(), r, ctx.RightTimestamp()))
				return nil
			})
		got := weir.Collect(joined)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		h, err := env.ExecuteAsync(ctx, "kafka-align")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Wait(); err != nil {
			t.Fatal(err)
		}
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, g := range om.Gauges {
					if g.Name == "interval_join_buffered_records_peak" {
						peak = g.Value
					}
				}
			}
		}
		pairs = got.Values()
		slices.Sort(pairs)
		return pairs, peak
	}
	free, freePeak := run(false)
	aligned, alignedPeak := run(true)
	// Aligned: the fast partition reads on while its watermark is within
	// the drift of the slow one's; the pause reaches the client at the
	// next periodic emission and alignment update (1 ms each) and leaves
	// in flight the batches the fetch loop handed to the task (credits),
	// the fetch the client buffered and the one under way: the fetches
	// allowed, each 50 ms of fast event time, are those plus the ones a
	// millisecond's ticks let through (allowance 5), while the slow side
	// holds its last few fetches.
	inFlight := int64(credits + 2 + 5)
	bound := float64((drift.Milliseconds()+inFlight*fastPerBatch*fastSpacing)/fastSpacing + (inFlight+1)*slowPerBatch)
	// Unaligned: when the fast partition ends (fastN/fastPerBatch
	// fetches), the slow one has read as many fetches; every fast record
	// above that is buffered (less what the fetch loop's run-ahead lets
	// the slow side catch up: credits fetches).
	fetches := int64(fastN/fastPerBatch + credits + 2)
	floor := float64(fastN - fetches*slowPerBatch/fastSpacing)
	t.Logf("peak buffered: unaligned %v (floor %v), aligned %v (bound %v)", freePeak, floor, alignedPeak, bound)
	if len(free) != fastN || !slices.Equal(free, aligned) {
		t.Fatalf("results differ: %d pairs unaligned, %d aligned, want %d", len(free), len(aligned), fastN)
	}
	if freePeak < floor {
		t.Errorf("unaligned, the join buffered at most %v records, want at least %v", freePeak, floor)
	}
	if alignedPeak > bound {
		t.Errorf("aligned, the join buffered up to %v records, want at most %v", alignedPeak, bound)
	}
}
