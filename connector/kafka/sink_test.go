package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

// appended encodes itself (kafka.JSONAppender), with a mark that shows
// AppendJSON was used; plain has no method (encoding/json's reflection).
type appended struct {
	N   int
	Pad string
}

func (a appended) AppendJSON(b []byte) ([]byte, error) {
	return fmt.Appendf(b, `{"N":%d,"Pad":%q,"By":"AppendJSON"}`, a.N, a.Pad), nil
}

type plain struct {
	N   int
	Pad string
}

// jsonSinkRun writes n values of T made by mk through an at-least-once
// JSONValues sink keyed by the value's N, and returns the records read
// back, by key.
func jsonSinkRun[T any](t *testing.T, addr string, n int, ts int64, mk func(i int64) T, key func(T) []byte) map[string]*kgo.Record {
	t.Helper()
	topic := newTopic(t, addr, 2)
	env := weir.NewEnvironment(weir.WithParallelism(2))
	in := weir.Generate(env, int64(n), 0, mk, weir.NoWatermarks[T]().WithTimestampAssigner(func(T, int64) int64 { return ts }))
	kafka.NewSink(kafka.JSONValues(key), kafka.WithBrokers(addr), kafka.WithDefaultTopic(topic),
		kafka.WithDeliveryGuarantee(kafka.AtLeastOnce)).To(in)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "json sink"); err != nil {
		t.Fatal(err)
	}
	got := map[string]*kgo.Record{}
	for _, r := range readAll(t, addr, topic, false) {
		got[string(r.Key)] = r
	}
	if len(got) != n {
		t.Fatalf("read %d distinct keys, want %d", len(got), n)
	}
	return got
}

// TestKafkaSinkJSONValues: JSONValues writes AppendJSON's bytes for a
// JSONAppender and json.Marshal's for any other type, with the key and
// the event timestamp; values of every size, past the sink's value blocks
// (small ones share a block, large ones do not), arrive intact.
func TestKafkaSinkJSONValues(t *testing.T) {
	addr := broker(t)
	const n = 3000
	// A recent time: the broker's time-based retention (7 days) would
	// delete records of an old one.
	ts := time.Now().UnixMilli()
	pad := func(i int64) string { // every 100th above the sink's 8 KiB for a block of its own
		if i%100 == 0 {
			return strings.Repeat("x\"<", 3000)
		}
		return strings.Repeat("x\"<", int(i%100))
	}
	t.Run("appender", func(t *testing.T) {
		got := jsonSinkRun(t, addr, n, ts, func(i int64) appended { return appended{int(i), pad(i)} },
			func(v appended) []byte { return []byte(itoa(v.N)) })
		for i := range int64(n) {
			r := got[itoa(int(i))]
			want, _ := appended{int(i), pad(i)}.AppendJSON(nil)
			if r == nil || string(r.Value) != string(want) || r.Timestamp.UnixMilli() != ts {
				t.Fatalf("record %d = %+v, want value %.80s... at %d", i, r, want, ts)
			}
		}
	})
	t.Run("reflection", func(t *testing.T) {
		got := jsonSinkRun(t, addr, n, ts, func(i int64) plain { return plain{int(i), pad(i)} },
			func(v plain) []byte { return []byte(itoa(v.N)) })
		for i := range int64(n) {
			r := got[itoa(int(i))]
			want, _ := json.Marshal(plain{int(i), pad(i)})
			if r == nil || string(r.Value) != string(want) {
				t.Fatalf("record %d = %+v, want value %.80s...", i, r, want)
			}
		}
	})
}

// TestJSONValuesSerialize: the Serializer that JSONValues returns, called
// as any Serializer, gives the same bytes.
func TestJSONValuesSerialize(t *testing.T) {
	pr, err := kafka.JSONValues[appended](nil).Serialize(appended{7, "a"}, 0)
	if err != nil || string(pr.Value) != `{"N":7,"Pad":"a","By":"AppendJSON"}` || pr.Key != nil {
		t.Fatalf("appender: %+v, %v", pr, err)
	}
	pr, err = kafka.JSONValues(func(p plain) []byte { return []byte("k") }).Serialize(plain{7, "<"}, 0)
	if err != nil || string(pr.Value) != `{"N":7,"Pad":"\u003c"}` || string(pr.Key) != "k" {
		t.Fatalf("reflection: %+v, %v", pr, err)
	}
	if _, err := kafka.JSONValues[func()](nil).Serialize(func() {}, 0); err == nil {
		t.Fatal("a func serialized")
	}
}
