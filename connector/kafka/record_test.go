package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestKafkaConsumerRecordFields: the ConsumerRecord the source reuses
// shows each record's own topic, partition, offset, timestamp, key, value
// and headers (nil when it has none), even when records with and without
// keys and headers alternate and the deserializer scribbles over the
// record it was given.
func TestKafkaConsumerRecordFields(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 1)
	var recs []*kgo.Record
	for i := range 12 {
		r := rec(topic, 0, itoa(i), int64(1000+i))
		if i%3 == 1 {
			r.Key = []byte("k" + itoa(i))
		}
		if i%4 == 2 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte(itoa(i))}, {Key: "g", Value: nil}}
		}
		recs = append(recs, r)
	}
	produce(t, client(t, addr), recs...)
	deser := kafka.DeserializerFunc[string](func(cr *kafka.ConsumerRecord) (string, error) {
		s := fmt.Sprintf("%t/%d/%d/%d/%s=%s", cr.Topic == topic, cr.Partition, cr.Offset, cr.Timestamp, cr.Key, cr.Value)
		if cr.Headers == nil {
			s += " nil"
		}
		for _, h := range cr.Headers {
			s += " " + h.Key + ":" + string(h.Value)
		}
		*cr = kafka.ConsumerRecord{Topic: "scribbled", Partition: 9, Offset: -1, Timestamp: -1,
			Key: []byte("x"), Value: []byte("y"), Headers: []kafka.Header{{Key: "z"}}}
		return s, nil
	})
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource[string](deser, kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithBounded(kafka.Latest()))
	out := weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "records"))
	if err := env.Execute(context.Background(), "record fields"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 {
		key := ""
		if i%3 == 1 {
			key = "k" + itoa(i)
		}
		s := fmt.Sprintf("true/0/%d/%d/%s=%d", i, 1000+i, key, i)
		if i%4 == 2 {
			s += " h:" + itoa(i) + " g:"
		} else {
			s += " nil"
		}
		want = append(want, s)
	}
	if got := out.Values(); !slices.Equal(got, want) {
		t.Fatalf("records\n%q\nwant\n%q", got, want)
	}
}
