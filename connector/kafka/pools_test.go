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

// TestKafkaDeserializedValuesOutliveFetches: the source hands the
// fetched records' memory back to its client's pools once a record is
// deserialized, so a value that still aliased a record's bytes would be
// overwritten by later fetches. Thousands of distinct values in many
// small compressed batches, read over many small fetches and checked only
// when the job has ended, must all come out as written, through each
// ready-made deserializer and one that keeps the key and headers.
func TestKafkaDeserializedValuesOutliveFetches(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 2)
	const n = 20000
	want := make([]string, n)
	recs := make([]*kgo.Record, n)
	for i := range n {
		want[i] = fmt.Sprintf("%q", fmt.Sprintf("value %d %s", i, strings.Repeat(string(rune('a'+i%26)), i%40)))
		r := rec(topic, int32(i%2), want[i], int64(i))
		r.Key = fmt.Appendf(nil, "key %d", i)
		r.Headers = []kgo.RecordHeader{{Key: fmt.Sprintf("h%d", i), Value: fmt.Appendf(nil, "hv %d", i)}}
		recs[i] = r
	}
	// Small snappy batches: many decompressed buffers, each reused.
	produce(t, client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.ProducerBatchMaxBytes(4<<10)), recs...)
	slices.Sort(want)

	source := func(opts ...kafka.Option) []kafka.Option {
		return append([]kafka.Option{kafka.WithBrokers(addr), kafka.WithTopics(topic), kafka.WithBounded(kafka.Latest())}, opts...)
	}
	check := func(t *testing.T, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d values, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("value %q, want %q (of %d, sorted)", got[i], want[i], len(want))
			}
		}
	}

	small := kafka.WithClientOptions(kgo.FetchMaxPartitionBytes(8<<10), kgo.FetchMaxBytes(16<<10))
	t.Run("Bytes", func(t *testing.T) {
		check(t, readAll2(t, kafka.NewSource(kafka.Bytes(), source(small)...), func(b []byte) string { return string(b) }), want)
	})
	t.Run("String", func(t *testing.T) {
		check(t, readAll2(t, kafka.NewSource(kafka.String(), source(small)...), func(s string) string { return s }), want)
	})
	t.Run("JSON", func(t *testing.T) {
		check(t, readAll2(t, kafka.NewSource(kafka.JSON[json.RawMessage](), source(small)...), func(m json.RawMessage) string { return string(m) }), want)
	})
	t.Run("KeyAndHeaders", func(t *testing.T) {
		type kh struct {
			key, hv []byte
			h       string
		}
		deser := kafka.DeserializerFunc[kh](func(cr *kafka.ConsumerRecord) (kh, error) {
			return kh{key: slices.Clone(cr.Key), h: cr.Headers[0].Key, hv: slices.Clone(cr.Headers[0].Value)}, nil
		})
		got := readAll2(t, kafka.NewSource[kh](deser, source(small)...), func(v kh) string { return string(v.key) + "/" + v.h + "/" + string(v.hv) })
		var wantKH []string
		for i := range n {
			wantKH = append(wantKH, fmt.Sprintf("key %d/h%d/hv %d", i, i, i))
		}
		slices.Sort(wantKH)
		check(t, got, wantKH)
	})
}

// readAll2 runs a job of src at parallelism 2 collecting its values as
// they are, and only once the job has ended turns them into sorted
// strings with str.
func readAll2[T any](t *testing.T, src *kafka.Source[T], str func(T) string) []string {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(2))
	out := weir.Collect(weir.FromSource(env, src, weir.NoWatermarks[T](), "values"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, t.Name()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range out.Values() {
		got = append(got, str(v))
	}
	slices.Sort(got)
	return got
}
