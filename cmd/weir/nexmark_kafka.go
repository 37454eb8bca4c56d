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
	// The records carry the events' times (2015 by default), so the
	// broker's time-based retention would delete them at its next check:
	// the topic keeps them forever.
	if _, err := adm.CreateTopic(ctx, int32(parallelism), 1, map[string]*string{"retention.ms": kadm.StringPtr("-1")}, topic); err != nil {
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			return false, fmt.Errorf("creating topic %s: %w", topic, err)
		}
		n, parts, err := topicRecords(ctx, adm, topic)
		if err != nil {
			return false, err
		}
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

// topicRecords counts the records a topic holds (end minus start offsets,
// so records deleted by retention do not count) and its partitions.
func topicRecords(ctx context.Context, adm *kadm.Client, topic string) (n int64, parts int, err error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("topic %s: %w", topic, err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		parts++
		n += o.Offset
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok {
			n -= s.Offset
		}
	})
	return n, parts, nil
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
	return weir.FromDynamicSource(env, src, nexmark.Watermarks(cfg), "Nexmark")
}

// resultsTopic is the topic of one run's results (--source kafka).
type resultsTopic struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
}

// createResultsTopic creates a fresh topic of p partitions for the results
// of query, read from the events' topic; its records keep the events'
// times, so time-based retention is off.
func createResultsTopic(ctx context.Context, brokers []string, events, query string, p int) (*resultsTopic, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	t := &resultsTopic{cl: cl, adm: kadm.NewClient(cl), topic: fmt.Sprintf("%s-results-%s-%d", events, query, time.Now().UnixNano())}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := t.adm.CreateTopic(ctx, int32(p), 1, map[string]*string{"retention.ms": kadm.StringPtr("-1")}, t.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("creating the results topic %s: %w", t.topic, err)
	}
	return t, nil
}

// records counts the records of the topic.
func (t *resultsTopic) records(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, _, err := topicRecords(ctx, t.adm, t.topic)
	return n, err
}

// delete removes the topic (best effort) and closes the client.
func (t *resultsTopic) delete() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.adm.DeleteTopics(ctx, t.topic)
	t.cl.Close()
}
