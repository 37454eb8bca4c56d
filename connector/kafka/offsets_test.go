package kafka_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/rest"
)

// tenRecords is a one-partition topic with values "0".."9" at offsets 0-9
// and timestamps 1000-1009.
func tenRecords(t *testing.T, addr string) string {
	topic := newTopic(t, addr, 1)
	cl := manual(t, addr)
	for i := range 10 {
		produce(t, cl, rec(topic, 0, itoa(i), int64(1000+i)))
	}
	return topic
}

func readBounded(t *testing.T, addr, topic string, opts ...kafka.Option) []string {
	t.Helper()
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource(kafka.String(), append([]kafka.Option{kafka.WithBrokers(addr), kafka.WithTopics(topic)}, opts...)...)
	got := weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "offsets"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "offsets"); err != nil {
		t.Fatal(err)
	}
	return got.Values()
}

func TestKafkaStartingAndStoppingOffsets(t *testing.T) {
	addr := broker(t)
	topic := tenRecords(t, addr)
	tp := kafka.TopicPartition{Topic: topic, Partition: 0}
	seq := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, itoa(i))
		}
		return out
	}
	// A group with a committed offset at 7.
	group := topic + "-group"
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, 7, -1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin(t, addr).CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts []kafka.Option
		want []string
	}{
		{"earliest to latest", []kafka.Option{kafka.WithBounded(kafka.Latest())}, seq(0, 10)},
		{"latest to latest", []kafka.Option{kafka.WithStartingOffsets(kafka.Latest()), kafka.WithBounded(kafka.Latest())}, nil},
		{"timestamp", []kafka.Option{kafka.WithStartingOffsets(kafka.Timestamp(1004)), kafka.WithBounded(kafka.Latest())}, seq(4, 10)},
		{"timestamp past the end", []kafka.Option{kafka.WithStartingOffsets(kafka.Timestamp(5000)), kafka.WithBounded(kafka.Latest())}, nil},
		{"specific to timestamp", []kafka.Option{kafka.WithStartingOffsets(kafka.Specific(map[kafka.TopicPartition]int64{tp: 2}, kafka.Earliest())),
			kafka.WithBounded(kafka.Timestamp(1006))}, seq(2, 6)},
		{"specific fallback", []kafka.Option{kafka.WithStartingOffsets(kafka.Specific(nil, kafka.Latest())), kafka.WithBounded(kafka.Latest())}, nil},
		{"committed", []kafka.Option{kafka.WithGroupID(group), kafka.WithStartingOffsets(kafka.Committed(kafka.Earliest())),
			kafka.WithBounded(kafka.Specific(map[kafka.TopicPartition]int64{tp: 9}, kafka.Latest()))}, seq(7, 9)},
		{"committed fallback", []kafka.Option{kafka.WithGroupID(group + "-none"), kafka.WithStartingOffsets(kafka.Committed(kafka.Timestamp(1008))),
			kafka.WithBounded(kafka.Latest())}, seq(8, 10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readBounded(t, addr, topic, c.opts...)
			if !slices.Equal(got, c.want) {
				t.Fatalf("read %v, want %v", got, c.want)
			}
		})
	}
}

func TestKafkaInvalidSourceSettings(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := kafka.NewSource(kafka.String(), kafka.WithTopics("a"), kafka.WithStartingOffsets(kafka.Committed(kafka.Earliest())))
	weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "bad"))
	err := env.Execute(context.Background(), "bad")
	for _, w := range []string{"no brokers", "committed offsets need a consumer group"} {
		if err == nil || !regexp.MustCompile(regexp.QuoteMeta(w)).MatchString(err.Error()) {
			t.Fatalf("err = %v, want %q", err, w)
		}
	}
}

// TestKafkaExactlyOnceSinkPrefix: in one process an exactly-once sink
// without a transactional id prefix fails at start, saying that a cluster
// needs none; in a cluster (TestClusterFailover's sink has none) the
// task's transactional id is used, and the check passes.
func TestKafkaExactlyOnceSinkPrefix(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	src := weir.FromSlice(env, []string{"a"})
	sink := kafka.NewSink(kafka.StringValues(), kafka.WithBrokers("127.0.0.1:1"), kafka.WithDefaultTopic("t"), kafka.WithDeliveryGuarantee(kafka.ExactlyOnce))
	sink.To(src)
	err := env.Execute(context.Background(), "noprefix")
	if err == nil || !strings.Contains(err.Error(), "WithTransactionalIDPrefix) when the job runs in one process") {
		t.Fatalf("err = %v, want the missing prefix named", err)
	}
	if err := sink.ValidateCluster(context.Background()); err != nil {
		t.Fatalf("ValidateCluster = %v, want nil: a cluster derives the transactional ids", err)
	}
	bad := kafka.NewSink(kafka.StringValues(), kafka.WithDefaultTopic("t"), kafka.WithDeliveryGuarantee(kafka.ExactlyOnce))
	if err := bad.ValidateCluster(context.Background()); err == nil || !strings.Contains(err.Error(), "no brokers") {
		t.Fatalf("ValidateCluster of a sink without brokers = %v", err)
	}
}

// TestKafkaPartitionDiscovery: partitions added to a topic and new topics
// matching the pattern are read while the job runs, from their earliest
// offset; the consumer group gets the offsets of completed checkpoints and
// the metrics show each partition's position and lag.
func TestKafkaPartitionDiscovery(t *testing.T) {
	addr := broker(t)
	prefix := "weir-disc-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	adm := admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mk := func(name string, n int) {
		if _, err := adm.CreateTopic(ctx, int32(n), 1, kafkatest.KeepRecords(), name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { adm.DeleteTopic(context.Background(), name) })
	}
	a, b := prefix+"-a", prefix+"-b"
	mk(a, 2)
	cl := manual(t, addr)
	produce(t, cl, rec(a, 0, "a0", 1), rec(a, 1, "a1", 2))
	srv := rest.New("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithPlugin(srv))
	env.EnableCheckpointing(50 * time.Millisecond)
	group := prefix + "-group"
	src := kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopicPattern(regexp.MustCompile("^"+prefix+"-")),
		kafka.WithPartitionDiscovery(100*time.Millisecond), kafka.WithGroupID(group))
	got := weir.Collect(weir.FromDynamicSource(env, src, weir.NoWatermarks[string](), "pattern"))
	h, err := env.ExecuteAsync(ctx, "discovery")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		h.Cancel()
		h.Wait()
	}()
	waitFor(t, ctx, "a's first partitions", func() bool { return got.Len() == 2 })
	// More partitions for a, and a new topic b: written before the job
	// discovers them, read all the same (from the earliest offset).
	if _, err := adm.UpdatePartitions(ctx, 3, a); err != nil {
		t.Fatal(err)
	}
	mk(b, 2)
	produce(t, manual(t, addr), rec(a, 2, "a2", 3), rec(b, 0, "b0", 4), rec(b, 1, "b1", 5)) // a fresh client: new metadata
	waitFor(t, ctx, "the new partitions", func() bool { return got.Len() == 5 })
	vals := got.Values()
	slices.Sort(vals)
	if want := []string{"a0", "a1", "a2", "b0", "b1"}; !slices.Equal(vals, want) {
		t.Fatalf("read %v, want %v", vals, want)
	}
	// Metrics: position 1 and lag 0 on each of the five partitions.
	waitFor(t, ctx, "position and lag gauges", func() bool {
		n := 0
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, g := range om.Gauges {
					if (g.Name == "kafka_current_offset" && g.Value == 1) || (g.Name == "kafka_consumer_lag" && g.Value == 0) {
						n++
					}
				}
			}
		}
		return n == 10
	})
	// Each partition is a split of the source's metrics, with the record
	// read from it.
	want := map[string]int64{a + "-0": 1, a + "-1": 1, a + "-2": 1, b + "-0": 1, b + "-1": 1}
	splits := map[string]int64{}
	waitFor(t, ctx, "split metrics", func() bool {
		clear(splits)
		for _, tm := range h.Metrics() {
			for _, om := range tm.Operators {
				for _, sp := range om.Splits {
					splits[sp.ID] += sp.Records
				}
			}
		}
		return maps.Equal(splits, want)
	})
	// Prometheus: the lag and each partition's records, labelled.
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	prom, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`weir_kafka_consumer_lag{`, `partition="2"`, `topic="` + b + `"`,
		`weir_source_split_records_total{`, `split="` + a + `-2"`,
	} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	// The group has offset 1 for every partition once a checkpoint after
	// the reads completed.
	waitFor(t, ctx, "committed offsets", func() bool {
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		n := 0
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At == 1 {
				n++
			}
		})
		return n == 5
	})
}
