package kafka_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

func runSink(t *testing.T, addr, topic string, g kafka.DeliveryGuarantee, n int, opts ...kafka.Option) []string {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(50 * time.Millisecond)
	in := weir.Generate(env, int64(n), 0, func(i int64) string { return itoa(int(i)) }, weir.NoWatermarks[string]())
	sink := kafka.NewSink(kafka.StringValues(), append([]kafka.Option{kafka.WithBrokers(addr), kafka.WithDefaultTopic(topic),
		kafka.WithDeliveryGuarantee(g), kafka.WithTransactionalIDPrefix(topic)}, opts...)...)
	sink.To(in).UID("kafka-sink")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "sink"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		want = append(want, itoa(i))
	}
	slices.Sort(want)
	return want
}

func TestKafkaSinkGuarantees(t *testing.T) {
	addr := broker(t)
	for _, g := range []kafka.DeliveryGuarantee{kafka.None, kafka.AtLeastOnce, kafka.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			topic := newTopic(t, addr, 3)
			want := runSink(t, addr, topic, g, 5000)
			got := values(readAll(t, addr, topic, g == kafka.ExactlyOnce))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("read %d records, want %d", len(got), len(want))
			}
		})
	}
}

func TestKafkaSinkTransactionTimeoutCheckedAtBuild(t *testing.T) {
	addr := broker(t)
	env := weir.NewEnvironment(weir.WithParallelism(1))
	in := weir.FromSlice(env, []string{"a"})
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic("unused"),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix("t"),
		kafka.WithTransactionTimeout(2*time.Hour)).To(in)
	err := env.Execute(context.Background(), "too long")
	if err == nil || !strings.Contains(err.Error(), "transaction.max.timeout.ms") {
		t.Fatalf("err = %v, want the broker's transaction.max.timeout.ms named", err)
	}
}
