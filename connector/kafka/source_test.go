package kafka_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

func TestKafkaSourceBounded(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 3)
	cl := manual(t, addr)
	var want []string
	var recs []*kgo.Record
	for i := range 300 {
		v := itoa(i)
		want = append(want, v)
		recs = append(recs, rec(topic, int32(i%3), v, int64(1000+i)))
	}
	produce(t, cl, recs...)
	env := weir.NewEnvironment(weir.WithParallelism(2))
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithBounded(kafka.Latest()))
	got := weir.Collect(weir.FromDynamicSource(env, src, weir.ForMonotonousTimestamps[string](), "kafka"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "bounded"); err != nil {
		t.Fatal(err)
	}
	vals := got.Values()
	slices.Sort(vals)
	slices.Sort(want)
	if !slices.Equal(vals, want) {
		t.Fatalf("read %d records, want %d", len(vals), len(want))
	}
	for _, r := range got.Records() {
		if r.TS < 1000 || r.TS >= 1300 {
			t.Fatalf("record %q has timestamp %d, want the Kafka timestamp", r.Value, r.TS)
		}
	}
}
