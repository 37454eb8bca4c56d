package kafka_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// TestKafkaBrokerRestart restarts the broker in the middle of an
// exactly-once Kafka-to-Kafka job: the test runs a broker of its own
// (kafkatest.StartOwnBroker, kept data), the job's source stalls once
// with transactions open and checkpoints taken, the broker is stopped, the
// source goes on (reading and writing into the outage), and the broker is
// started again. The job rides it out (its clients retry, or it fails
// and restarts from its checkpoint), ends, and a read_committed consumer
// sees every result exactly once.
func TestKafkaBrokerRestart(t *testing.T) {
	b := kafkatest.StartOwnBroker(t)
	addr := b.Addr
	// Two partitions of 5,000 records: the source hands on at most 2,048
	// per partition per fetch round, so the record at offset 3,000 of
	// partition 0 is decoded after the first records reached the sink.
	const per, stallAt = 5000, 3000
	in, out := newTopic(t, addr, 2), newTopic(t, addr, 2)
	var recs []*kgo.Record
	var want []string
	for p := range 2 {
		for i := range per {
			v := "p" + itoa(p) + "-" + itoa(i)
			recs = append(recs, rec(in, int32(p), v, int64(i)))
			want = append(want, strings.ToUpper(v))
		}
	}
	produce(t, manual(t, addr), recs...)
	slices.Sort(want)
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	deser := kafka.DeserializerFunc[string](func(cr *kafka.ConsumerRecord) (string, error) {
		if cr.Partition == 0 && cr.Offset == stallAt {
			once.Do(func() {
				close(stalled)
				<-release
			})
		}
		return string(cr.Value), nil
	})
	env := weir.NewEnvironment(weir.WithParallelism(1),
		weir.WithRestartStrategy(weir.ExponentialDelayRestart(100*time.Millisecond, 2*time.Second, 100)))
	env.EnableCheckpointing(100*time.Millisecond, weir.CheckpointTimeout(time.Minute))
	src := weir.FromDynamicSource(env, kafka.NewSource(deser, kafka.WithBrokers(addr), kafka.WithTopics(in),
		kafka.WithBounded(kafka.Latest()), kafka.WithRequestTimeout(2*time.Minute)), weir.NoWatermarks[string](), "in").UID("in")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic(out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(out),
		kafka.WithTransactionTimeout(time.Minute)).To(weir.Map(src, strings.ToUpper).UID("upper")).UID("out")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	h, err := env.ExecuteAsync(ctx, "broker-restart")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stalled:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	// Some checkpoints complete while the source waits (their barriers
	// pass the stalled fetcher), committing the first records.
	adm := admin(t, addr)
	waitFor(t, ctx, "a committed result", func() bool {
		stable, err := adm.ListCommittedOffsets(ctx, out) // the last stable offsets
		if err != nil {
			t.Fatal(err)
		}
		committed := false
		stable.Each(func(o kadm.ListedOffset) { committed = committed || o.Offset > 0 })
		return committed
	})
	b.Stop()
	close(release)
	b.Start()
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, values(readAll(t, addr, out, true)), want)
}
