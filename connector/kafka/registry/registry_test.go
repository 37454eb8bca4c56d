package registry_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/registry"
	"github.com/weirstream/weir/internal/kafkatest"
)

// reading is the test's record type, in Avro and in JSON.
type reading struct {
	Sensor string  `avro:"sensor" json:"sensor"`
	Seq    int64   `avro:"seq" json:"seq"`
	Value  float64 `avro:"value" json:"value"`
}

const readingAvro = `{"type":"record","name":"Reading","namespace":"weir.test","fields":[
 {"name":"sensor","type":"string"},{"name":"seq","type":"long"},{"name":"value","type":"double"}]}`

const readingJSONSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Reading","type":"object",
 "properties":{"sensor":{"type":"string"},"seq":{"type":"integer"},"value":{"type":"number"}},"required":["sensor","seq"]}`

// newTopic creates a one-partition topic, deleted when the test ends.
func newTopic(t *testing.T, addr, kind string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	name := fmt.Sprintf("weir-registry-%s-%d", kind, time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, kafkatest.KeepRecords(), name)
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

// produceRaw writes values as they are to topic.
func produceRaw(t *testing.T, addr, topic string, values ...[]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func readings(n int) []reading {
	out := make([]reading, n)
	for i := range out {
		out[i] = reading{Sensor: fmt.Sprintf("s%d", i%3), Seq: int64(i), Value: float64(i) * 1.5}
	}
	return out
}

// roundTrip writes want through ser with one job, adds the records of
// extra to the topic, and reads the topic back through deser with another
// job, whose dead letters it returns too.
func roundTrip(t *testing.T, addr, topic string, want []reading, ser kafka.Serializer[reading], deser kafka.Deserializer[reading], extra ...[]byte) ([]reading, []kafka.DeadLetter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := weir.NewEnvironment(weir.WithParallelism(1))
	kafka.NewSink(ser, kafka.WithBrokers(addr), kafka.WithDeliveryGuarantee(kafka.AtLeastOnce)).To(weir.FromSlice(env, want))
	if err := env.Execute(ctx, "write through the registry"); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, addr, topic, extra...)
	env = weir.NewEnvironment(weir.WithParallelism(1))
	dead := weir.NewOutputTag[kafka.DeadLetter]("dead")
	src := kafka.NewSource(deser, kafka.WithBrokers(addr), kafka.WithTopics(topic),
		kafka.WithBounded(kafka.Latest()), kafka.WithDeadLetters(dead))
	in := weir.FromDynamicSource(env, src, weir.NoWatermarks[reading](), "readings")
	good := weir.Collect(in)
	bad := weir.Collect(weir.SideOutput(in, dead))
	if err := env.Execute(ctx, "read through the registry"); err != nil {
		t.Fatal(err)
	}
	return good.Values(), bad.Values()
}

// framed is a value in the Confluent wire format with schema id id.
func framed(id uint32, payload string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, payload...)
}

func TestKafkaSchemaRegistry(t *testing.T) {
	addr := kafkatest.Broker(t)
	url := kafkatest.SchemaRegistry(t)
	reg, err := registry.New(url)
	if err != nil {
		t.Fatal(err)
	}
	const unknownID = 0x7fff_fff0
	for _, tc := range []struct {
		kind  string
		ser   func(topic string) (kafka.Serializer[reading], error)
		deser kafka.Deserializer[reading]
	}{
		{"avro", func(topic string) (kafka.Serializer[reading], error) {
			return registry.AvroSerializer[reading](reg, topic, readingAvro)
		}, registry.AvroDeserializer[reading](reg)},
		{"json", func(topic string) (kafka.Serializer[reading], error) {
			return registry.JSONSchemaSerializer[reading](reg, topic, readingJSONSchema)
		}, registry.JSONSchemaDeserializer[reading](reg)},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			topic := newTopic(t, addr, tc.kind)
			ser, err := tc.ser(topic)
			if err != nil {
				t.Fatal(err)
			}
			want := readings(7)
			got, dead := roundTrip(t, addr, topic, want, ser, tc.deser,
				framed(unknownID, "x"), []byte("no framing"))
			if !slices.Equal(got, want) {
				t.Fatalf("read back %v, want %v", got, want)
			}
			if len(dead) != 2 {
				t.Fatalf("dead letters %+v, want the unknown id and the unframed record", dead)
			}
			if !strings.Contains(dead[0].Error, "unknown schema id") || !strings.Contains(dead[0].Error, fmt.Sprint(unknownID)) {
				t.Errorf("dead letter of the unknown id: %q", dead[0].Error)
			}
			if string(dead[1].Record.Value) != "no framing" || !strings.Contains(dead[1].Error, "Confluent wire format") {
				t.Errorf("dead letter of the unframed record: %+v", dead[1])
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			subjects, err := reg.Client().Subjects(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(subjects, registry.ValueSubject(topic)) {
				t.Fatalf("the registry's subjects %v lack %s", subjects, registry.ValueSubject(topic))
			}
			// The written records name the subject's schema.
			ss, err := reg.Client().SchemaByVersion(ctx, registry.ValueSubject(topic), -1)
			if err != nil {
				t.Fatal(err)
			}
			recs := readRaw(t, addr, topic)
			if len(recs) == 0 || binary.BigEndian.Uint32(recs[0][1:5]) != uint32(ss.ID) || recs[0][0] != 0 {
				t.Fatalf("first record % x does not frame schema id %d", recs[0][:5], ss.ID)
			}
		})
	}
}

// readRaw reads the values of topic's partition 0 up to its end.
func readRaw(t *testing.T, addr, topic string) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out [][]byte
	for len(out) == 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value) })
	}
	return out
}
