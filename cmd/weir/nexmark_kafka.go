package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/nexmark"
)

// kafkaTopic is the topic of the events of cfg for p generators, unless
// --topic names one: the name says what it holds, so that a second run
// (or the other engine) reads the same events without writing them again.
func kafkaTopic(o nexmarkOptions) string {
	if o.topic != "" {
		return o.topic
	}
	q := ""
	if o.quirk {
		q = "-dbo"
	}
	return fmt.Sprintf("weir-nexmark-e%d-p%d-r%g-s%d%s", o.events, o.parallelism, o.rate, o.seed, q)
}

// produceEvents makes sure topic holds the events of cfg: one partition per
// generator, generator i's events in partition i in its order, each record
// an nexmark.AppendLine line with the event time as its timestamp. A topic
// that exists already must hold exactly cfg.Events records (it is then
// kept as it is); any other count is an error naming the topic.
func produceEvents(ctx context.Context, brokers []string, topic string, cfg nexmark.Config, parallelism int) (wrote bool, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, int32(parallelism), 1, nil, topic); err != nil {
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			return false, fmt.Errorf("creating topic %s: %w", topic, err)
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, fmt.Errorf("topic %s: %w", topic, err)
		}
		var n int64
		parts := 0
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset; parts++ })
		if n != cfg.Events || parts != parallelism {
			return false, fmt.Errorf("topic %s exists with %d records in %d partitions, want %d in %d (delete it, or give another --topic)",
				topic, n, parts, cfg.Events, parallelism)
		}
		return false, nil
	}
	var mu sync.Mutex
	var perr error
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			perr = cmp.Or(perr, err)
			mu.Unlock()
		}
	}
	for i, g := range nexmark.NewGenerators(cfg, parallelism) {
		var e nexmark.Event
		for g.HasNext() {
			g.Next(&e)
			r := &kgo.Record{Topic: topic, Partition: int32(i), Value: nexmark.AppendLine(nil, &e), Timestamp: time.UnixMilli(e.Timestamp())}
			cl.Produce(ctx, r, promise)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return true, err
	}
	mu.Lock()
	defer mu.Unlock()
	if perr != nil {
		return true, fmt.Errorf("writing the events to %s: %w", topic, perr)
	}
	return true, nil
}

// firstRead is the time the first record was decoded.
type firstRead struct {
	once sync.Once
	at   time.Time
}

// kafkaEvents adds a bounded Kafka source of topic's events (from the
// earliest offsets to the latest at start) with the generator source's
// watermark strategy; the records' timestamps are the events' times. The
// run is timed from the first record decoded (as the Flink side), which
// first records.
func kafkaEvents(env *weir.Environment, brokers []string, topic string, cfg nexmark.Config, first *firstRead) weir.DataStream[nexmark.Event] {
	deser := kafka.DeserializerFunc[nexmark.Event](func(rec *kafka.ConsumerRecord) (nexmark.Event, error) {
		first.once.Do(func() { first.at = time.Now() })
		var e nexmark.Event
		err := nexmark.ParseLine(rec.Value, &e)
		return e, err
	})
	src := kafka.NewSource(deser, kafka.WithBrokers(brokers...), kafka.WithTopics(topic),
		kafka.WithStartingOffsets(kafka.Earliest()), kafka.WithBounded(kafka.Latest()))
	return weir.FromSource(env, src, nexmark.Watermarks(cfg), "Nexmark")
}
