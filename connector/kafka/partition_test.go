package kafka_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestKafkaSinkPartition: a serializer that chooses a partition
// (ProducerRecord.Partition) writes there, whatever the key says, with
// each delivery guarantee; records that choose none go to their key's
// partition (Kafka's murmur2, the same for equal keys); a negative
// partition fails the job naming it.
func TestKafkaSinkPartition(t *testing.T) {
	addr := broker(t)
	const n = 600
	// Value i: even i choose partition i/2 % 3, keyed "k" (which hashes to
	// one partition); odd i choose none, keyed "k" too.
	ser := kafka.SerializerFunc[string](func(v string, _ int64) (*kafka.ProducerRecord, error) {
		i, _ := strconv.Atoi(v)
		pr := &kafka.ProducerRecord{Key: []byte("k"), Value: []byte(v)}
		if i%2 == 0 {
			p := int32(i / 2 % 3)
			pr.Partition = &p
		}
		return pr, nil
	})
	for _, g := range []kafka.DeliveryGuarantee{kafka.None, kafka.AtLeastOnce, kafka.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			topic := newTopic(t, addr, 3)
			env := weir.NewEnvironment(weir.WithParallelism(2))
			env.EnableCheckpointing(50 * time.Millisecond)
			in := weir.Generate(env, n, 0, func(i int64) string { return itoa(int(i)) }, weir.NoWatermarks[string]())
			kafka.NewSink(ser, kafka.WithBrokers(addr), kafka.WithDefaultTopic(topic), kafka.WithDeliveryGuarantee(g),
				kafka.WithTransactionalIDPrefix(topic)).To(in).UID("out")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := env.Execute(ctx, "partition"); err != nil {
				t.Fatal(err)
			}
			recs := readAll(t, addr, topic, g == kafka.ExactlyOnce)
			if len(recs) != n {
				t.Fatalf("%d records, want %d", len(recs), n)
			}
			keyPart := int32(-1)
			perPart := map[int32]int{}
			for _, r := range recs {
				i, _ := strconv.Atoi(string(r.Value))
				perPart[r.Partition]++
				if i%2 == 0 {
					if want := int32(i / 2 % 3); r.Partition != want {
						t.Fatalf("record %d in partition %d, its serializer chose %d", i, r.Partition, want)
					}
					continue
				}
				if keyPart < 0 {
					keyPart = r.Partition
				}
				if r.Partition != keyPart {
					t.Fatalf("record %d without a partition in partition %d, another of its key in %d", i, r.Partition, keyPart)
				}
			}
			if len(perPart) != 3 {
				t.Fatalf("records per partition %v: the chosen partitions were not all used", perPart)
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		topic := newTopic(t, addr, 3)
		env := weir.NewEnvironment(weir.WithParallelism(1))
		in := weir.FromSlice(env, []string{"a"})
		kafka.NewSink(kafka.SerializerFunc[string](func(v string, _ int64) (*kafka.ProducerRecord, error) {
			p := int32(-2)
			return &kafka.ProducerRecord{Value: []byte(v), Partition: &p}, nil
		}), kafka.WithBrokers(addr), kafka.WithDefaultTopic(topic)).To(in)
		err := env.Execute(t.Context(), "negative partition")
		if err == nil || !strings.Contains(err.Error(), "partition -2 is negative") {
			t.Fatalf("err = %v, want the negative partition named", err)
		}
	})
}

// TestKafkaSinkPartitioner: WithPartitioner picks the partition of the
// records whose serializer names none (round robin here: every partition
// gets a third of the records of one key, which Kafka's default would put
// in one), while a named partition still wins.
func TestKafkaSinkPartitioner(t *testing.T) {
	addr := broker(t)
	topic := newTopic(t, addr, 3)
	const n = 300
	env := weir.NewEnvironment(weir.WithParallelism(1))
	in := weir.Generate(env, n, 0, func(i int64) string { return itoa(int(i)) }, weir.NoWatermarks[string]())
	kafka.NewSink(kafka.SerializerFunc[string](func(v string, _ int64) (*kafka.ProducerRecord, error) {
		pr := &kafka.ProducerRecord{Key: []byte("k"), Value: []byte(v)}
		if v == "7" {
			p := int32(2)
			pr.Partition = &p
		}
		return pr, nil
	}), kafka.WithBrokers(addr), kafka.WithDefaultTopic(topic), kafka.WithPartitioner(kgo.RoundRobinPartitioner())).To(in)
	if err := env.Execute(t.Context(), "partitioner"); err != nil {
		t.Fatal(err)
	}
	perPart := map[int32]int{}
	for _, r := range readAll(t, addr, topic, false) {
		perPart[r.Partition]++
		if string(r.Value) == "7" && r.Partition != 2 {
			t.Errorf("record 7 in partition %d, its serializer chose 2", r.Partition)
		}
	}
	for p := range int32(3) {
		if perPart[p] < n/3-1 || perPart[p] > n/3+1 {
			t.Fatalf("records per partition %v, want about %d each (round robin)", perPart, n/3)
		}
	}
}

// TestKafkaSinkPartitionerRefusedInCluster: a cluster's task producers
// partition every sink's records, so a sink with its own partitioner is
// refused there, naming the way out.
func TestKafkaSinkPartitionerRefusedInCluster(t *testing.T) {
	s := kafka.NewSink(kafka.StringValues(), kafka.WithBrokers("127.0.0.1:1"), kafka.WithDefaultTopic("t"),
		kafka.WithPartitioner(kgo.RoundRobinPartitioner()))
	if err := s.ValidateCluster(t.Context()); err == nil || !strings.Contains(err.Error(), "ProducerRecord.Partition") {
		t.Fatalf("ValidateCluster = %v, want the partitioner refused", err)
	}
	if err := kafka.NewSink(kafka.StringValues(), kafka.WithBrokers("127.0.0.1:1"), kafka.WithDefaultTopic("t")).ValidateCluster(t.Context()); err != nil {
		t.Fatalf("ValidateCluster without a partitioner = %v", err)
	}
}
