package kafka_test

import (
	"context"
	"fmt"
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

// Brokers that require TLS and SASL: the properties of a Java client (or
// of Flink's Kafka connector, without the "properties." prefix) become a
// Security, given to every source and sink (and to a cluster, with
// kafkacluster.Security).
func ExampleSecurityFromProperties() {
	props, err := kafka.ReadProperties(strings.NewReader(`
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="orders-job" password="secret";
`))
	if err != nil {
		log.Fatal(err)
	}
	sec, err := kafka.SecurityFromProperties(props)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("TLS:", sec.TLS != nil, "SASL:", sec.SASL.Name())
	_ = kafka.NewSource(kafka.String(), kafka.WithBrokers("broker-1.example:9096"), kafka.WithTopics("orders"),
		kafka.WithSecurity(sec))
	// Output: TLS: true SASL: SCRAM-SHA-512
}
