// Command cluster is one instance of a job that runs on several machines
// (weir.WithCluster(kafkacluster.New(...))): clicks read from a Kafka topic, keyed by user
// (through a repartition topic), counted in tumbling event-time windows of
// 5 seconds and written exactly once to another topic. Start it as many
// times as you like, on any hosts that reach the broker and the checkpoint
// directory; kill any of them: its tasks move to the others.
//
//	go run ./examples/cluster -mode produce -bootstrap B       # creates the topics, writes clicks until stopped
//	go run ./examples/cluster -bootstrap B -checkpoints /shared/dir   # one instance (start several)
//	go run ./examples/cluster -mode read -bootstrap B          # the committed counts (read_committed)
//
// docs/cluster.md walks through it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/window"
)

// Click is one input event.
type Click struct {
	User string `json:"user"`
	At   int64  `json:"at"` // event time, ms
}

// Count is one window's clicks of a user.
type Count struct {
	User   string `json:"user"`
	Window int64  `json:"window"` // its start, ms
	N      int64  `json:"n"`
}

func main() {
	mode := flag.String("mode", "run", "run (one instance of the job), produce (create the topics, write clicks) or read (print the committed counts)")
	bootstrap := flag.String("bootstrap", os.Getenv("WEIR_KAFKA_BOOTSTRAP"), "the Kafka brokers, comma-separated")
	checkpoints := flag.String("checkpoints", "/tmp/weir-cluster-checkpoints", "checkpoint storage every instance reaches: a shared directory or s3://bucket/prefix")
	job := flag.String("job", "click-counts", "the job's name: its consumer group, topics and checkpoints are named after it")
	partitions := flag.Int("partitions", 4, "partitions of the clicks topic (-mode produce): the job's tasks per stage")
	rate := flag.Int("rate", 200, "clicks per second (-mode produce)")
	session := flag.Duration("session-timeout", 10*time.Second, "how long a dead instance keeps its tasks")
	flag.Parse()
	if *bootstrap == "" {
		log.Fatal("-bootstrap (or WEIR_KAFKA_BOOTSTRAP) is needed")
	}
	brokers := strings.Split(*bootstrap, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *mode {
	case "run":
		err = run(ctx, brokers, *bootstrap, *checkpoints, *job, *session)
	case "produce":
		err = produce(ctx, brokers, *partitions, *rate)
	case "read":
		err = read(ctx, brokers)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// run is one instance of the job: the same program on every machine.
func run(ctx context.Context, brokers []string, bootstrap, checkpoints, job string, session time.Duration) error {
	env := weir.NewEnvironment(
		weir.WithCluster(kafkacluster.New(bootstrap, kafkacluster.SessionTimeout(session),
			kafkacluster.OnTasks(func(tasks []string) { log.Printf("this instance runs tasks %v", tasks) }))),
		weir.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(checkpoints))
	clicks := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[Click](), kafka.WithBrokers(brokers...), kafka.WithTopics("clicks")),
		weir.ForBoundedOutOfOrderness[Click](time.Second).WithTimestampAssigner(func(c Click, _ int64) int64 { return c.At }).
			WithIdleness(5*time.Second), "clicks").UID("clicks")
	ones := weir.Map(clicks, func(c Click) Count { return Count{User: c.User, Window: c.At - c.At%5000, N: 1} })
	counts := weir.Reduce(weir.Window(weir.KeyBy(ones, func(c Count) string { return c.User }), window.TumblingEventTime(5*time.Second)),
		func(a, b Count) Count { a.N += b.N; return a }).UID("counts")
	kafka.NewSink(kafka.JSONValues[Count](func(c Count) []byte { return []byte(c.User) }), kafka.WithBrokers(brokers...),
		kafka.WithDefaultTopic("click-counts"), kafka.WithDeliveryGuarantee(kafka.ExactlyOnce)).To(counts).UID("out") // the cluster derives the transactional ids
	return env.Execute(ctx, job)
}

// produce creates the topics and writes clicks of 20 users at rate per
// second, their event time the wall clock's, until ctx ends.
func produce(ctx context.Context, brokers []string, partitions, rate int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, n := range map[string]int{"clicks": partitions, "click-counts": 1} {
		resp, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			v := fmt.Appendf(nil, `{"user":"u%d","at":%d}`, rand.IntN(20), now.UnixMilli())
			cl.Produce(ctx, &kgo.Record{Topic: "clicks", Value: v}, nil)
			if n%(rate*5) == 0 {
				log.Printf("%d clicks written", n)
			}
		}
	}
}

// read prints the committed counts as they come.
func read(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("click-counts"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { fmt.Println(string(r.Value)) })
	}
	return ctx.Err()
}
