package main

// Kafka mode: the same reconciliation reading the orders and payments
// topics and writing every result exactly once to the results topic.
//
//	scripts/kafka.sh start                                        # a local broker: WEIR_KAFKA_BOOTSTRAP=127.0.0.1:39092
//	go run ./examples/reconcile -mode produce -orders 100000      # create the topics, write sample orders and payments
//	go run ./examples/reconcile -mode kafka                       # run until Ctrl-C (-bounded: until the end of the topics)
//
// Records are JSON, keyed by order id, with the event time as the Kafka
// record timestamp (which the source takes by default). Results are JSON
// objects {"kind": "matched"|"unmatched", ...} written in Kafka
// transactions committed at each checkpoint: read them with a
// read_committed consumer (kcat -X isolation.level=read_committed).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// KafkaConfig names the broker and the topics of the Kafka mode.
type KafkaConfig struct {
	Brokers                   []string
	Orders, Payments, Results string
	// Bounded reads the topics up to their end when the job starts, then
	// ends; otherwise the job runs until cancelled.
	Bounded bool
	// Checkpoint is the checkpoint interval: results become visible to
	// read_committed consumers at each checkpoint.
	Checkpoint time.Duration
	// Prefix of the sink's transactional ids (stable across restarts).
	TxnPrefix string
}

// Result is one line of the results topic.
type Result struct {
	Kind      string `json:"kind"` // "matched" or "unmatched"
	OrderID   int64  `json:"order_id"`
	OrderTS   int64  `json:"order_ts"`
	PaymentTS int64  `json:"payment_ts,omitempty"`
	Amount    int64  `json:"amount"`
}

// BuildKafka adds the Kafka reconciliation to env.
func BuildKafka(env *weir.Environment, c KafkaConfig) {
	source := func(topic string) []kafka.Option {
		opts := []kafka.Option{kafka.WithBrokers(c.Brokers...), kafka.WithTopics(topic)}
		if c.Bounded {
			opts = append(opts, kafka.WithBounded(kafka.Latest()))
		}
		return opts
	}
	// Record timestamps are the event times: no timestamp assigner needed.
	orders := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[Order](), source(c.Orders)...),
		weir.ForBoundedOutOfOrderness[Order](orderOutOfOrderness), "orders").UID("orders")
	payments := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[Payment](), source(c.Payments)...),
		weir.ForBoundedOutOfOrderness[Payment](paymentOutOfOrderness), "payments").UID("payments")
	matches := weir.KeyedCoProcess(
		weir.ConnectKeyed(
			weir.KeyBy(orders, func(o Order) int64 { return o.ID }),
			weir.KeyBy(payments, func(p Payment) int64 { return p.OrderID })),
		weir.KeyedCoProcessFunction[int64, Order, Payment, Match](&Reconciler{})).Name("reconcile").UID("reconcile")
	results := weir.Union(
		weir.Map(matches, func(m Match) Result {
			return Result{Kind: "matched", OrderID: m.OrderID, OrderTS: m.OrderTS, PaymentTS: m.PaymentTS, Amount: m.Amount}
		}),
		weir.Map(weir.SideOutput(matches, UnmatchedTag), func(o Order) Result {
			return Result{Kind: "unmatched", OrderID: o.ID, OrderTS: o.TS, Amount: o.Amount}
		}))
	kafka.NewSink(kafka.JSONValues(func(r Result) []byte { return []byte(strconv.FormatInt(r.OrderID, 10)) }),
		kafka.WithBrokers(c.Brokers...), kafka.WithDefaultTopic(c.Results),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(c.TxnPrefix),
		kafka.WithTransactionTimeout(5*time.Minute)).To(results).UID("results")
}

// runKafka runs the Kafka mode.
func runKafka(ctx context.Context, c KafkaConfig, p int, stdout io.Writer) error {
	env := weir.NewEnvironment(weir.WithParallelism(p), weir.WithRestartStrategy(weir.FixedDelayRestart(10, time.Second)))
	env.EnableCheckpointing(c.Checkpoint)
	BuildKafka(env, c)
	fmt.Fprintf(stdout, "reconciling %s and %s into %s (exactly once, checkpoint every %v)\n", c.Orders, c.Payments, c.Results, c.Checkpoint)
	start := time.Now()
	if err := env.Execute(ctx, "reconcile-kafka"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// Produce creates the topics (partitions each, if missing) and writes the
// n generated orders and their payments, keyed by order id, with the
// event times as record timestamps.
//
// The sample event times start at 2026-01-01, and a broker deletes
// records by their timestamps (retention.ms, 7 days by default) at its
// next retention check, whenever that comes: so the topics are created
// with retention.ms=-1, and a topic that already exists with a retention
// that would delete the sample records is an error.
func Produce(ctx context.Context, c KafkaConfig, n, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	keep := map[string]*string{"retention.ms": kadm.StringPtr("-1")}
	resp, err := adm.CreateTopics(ctx, int32(partitions), 1, keep, c.Orders, c.Payments, c.Results)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	var existing []string
	for _, r := range resp.Sorted() {
		if errors.Is(r.Err, kerr.TopicAlreadyExists) {
			existing = append(existing, r.Topic)
		} else if r.Err != nil {
			return fmt.Errorf("creating topic %s: %w", r.Topic, r.Err)
		}
	}
	if err := checkRetention(ctx, adm, existing, time.Now().UnixMilli()-epoch); err != nil {
		return err
	}
	var first error
	record := func(topic string, id, ts int64, v any) *kgo.Record {
		data, _ := json.Marshal(v)
		return &kgo.Record{Topic: topic, Key: []byte(strconv.FormatInt(id, 10)), Value: data, Timestamp: time.UnixMilli(ts)}
	}
	promise := func(_ *kgo.Record, err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i := range int64(n) {
		o := OrderAt(i)
		cl.Produce(ctx, record(c.Orders, o.ID, o.TS, o), promise)
		if p, ok := PaymentFor(i); ok {
			cl.Produce(ctx, record(c.Payments, p.OrderID, p.TS, p), promise)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return first
}

// checkRetention fails if one of topics keeps records for less than age
// ms (retention.ms, which the broker applies to the records' timestamps):
// the broker would delete the sample records, or the results, at its next
// retention check.
func checkRetention(ctx context.Context, adm *kadm.Client, topics []string, age int64) error {
	if len(topics) == 0 {
		return nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describing topics %v: %w", topics, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return fmt.Errorf("describing topic %s: %w", rc.Name, rc.Err)
		}
		for _, cfg := range rc.Configs {
			if cfg.Key != "retention.ms" || cfg.Value == nil {
				continue
			}
			ms, err := strconv.ParseInt(*cfg.Value, 10, 64)
			if err == nil && ms >= 0 && ms < age {
				return fmt.Errorf("topic %s exists with retention.ms=%d: the sample event times start at %s, so the broker would delete its records at its next retention check; delete the topic, or set its retention.ms to -1",
					rc.Name, ms, time.UnixMilli(epoch).UTC().Format(time.DateOnly))
			}
		}
	}
	return nil
}

// defaultBrokers is WEIR_KAFKA_BOOTSTRAP, else scripts/kafka.sh's port.
func defaultBrokers() string {
	if b := os.Getenv("WEIR_KAFKA_BOOTSTRAP"); b != "" {
		return b
	}
	return "127.0.0.1:39092"
}
