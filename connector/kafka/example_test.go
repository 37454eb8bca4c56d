package kafka_test

import (
	"context"
	"log"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// A topic-to-topic job, exactly once: the source's offsets are part of
// Weir's checkpoints, and the sink writes in Kafka transactions committed
// when the checkpoint completes, so a read_committed consumer of the
// output sees each result once, whatever fails when. (It needs a broker;
// the README's Kafka section has the whole program.)
func ExampleNewSource() {
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(time.Second)
	src := kafka.NewSource(kafka.String(),
		kafka.WithBrokers("127.0.0.1:9092"),
		kafka.WithTopics("words"),
		kafka.WithGroupID("upper"), // offsets committed on checkpoint completion, for monitoring
		kafka.WithStartingOffsets(kafka.Committed(kafka.Earliest())))
	words := weir.FromDynamicSource(env, src, weir.ForBoundedOutOfOrderness[string](5*time.Second), "words").UID("words")
	kafka.NewSink(kafka.StringValues(),
		kafka.WithBrokers("127.0.0.1:9092"),
		kafka.WithDefaultTopic("words-upper"),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce),
		kafka.WithTransactionalIDPrefix("upper")).To(weir.Map(words, strings.ToUpper)).UID("words-upper")
	if err := env.Execute(context.Background(), "upper"); err != nil {
		log.Fatal(err)
	}
}
