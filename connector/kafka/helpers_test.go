package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
)

// broker returns the test broker's address (kafkatest.Broker).
func broker(t testing.TB) string { t.Helper(); return kafkatest.Broker(t) }

var topicSeq atomic.Int64

// newTopic creates a topic with n partitions, deleted when the test ends.
func newTopic(t testing.TB, addr string, n int) string {
	t.Helper()
	name := fmt.Sprintf("weir-%s-%d-%d", sanitize(t.Name()), time.Now().UnixNano()%1_000_000_000, topicSeq.Add(1))
	adm := admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(n), 1, kafkatest.KeepRecords(), name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adm.DeleteTopic(ctx, name)
	})
	return name
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

func client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func admin(t testing.TB, addr string) *kadm.Client { return kadm.NewClient(client(t, addr)) }

// produce writes records synchronously.
func produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// rec is a record for partition p of topic with value v and timestamp ts.
func rec(topic string, p int32, v string, ts int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Value: []byte(v), Timestamp: time.UnixMilli(ts)}
}

// manual is a producer client that writes to the partition each record names.
func manual(t testing.TB, addr string) *kgo.Client {
	return client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

func itoa(i int) string { return strconv.Itoa(i) }

// readAll reads every record of topic up to its end offsets at the time of
// the call, with read_committed isolation when committed is set (the end
// is then the last stable offset, which a lingering transaction holds
// back: the call fails after a minute instead of waiting for it).
func readAll(t testing.TB, addr, topic string, committed bool) []*kgo.Record {
	t.Helper()
	adm := admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ends kadm.ListedOffsets
	var err error
	if committed {
		ends, err = kafkatest.Decided(ctx, adm, topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	opts := []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords()}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := client(t, addr, opts...)
	var out []*kgo.Record
	done := func() bool {
		for _, o := range want {
			if o > 0 {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: only %d records before the deadline (still to read up to: %v)", topic, len(out), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}
