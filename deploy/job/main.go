// Command job is the example job of deploy/: the program the Dockerfile
// builds and the Kubernetes manifests run (docs/operations.md,
// "Deploying on Kubernetes").
//
// With -mode service (one process) it counts generated events per key
// as a service (weir.Environment.RunService): on SIGTERM it stops with a
// savepoint into -dir, and the next start resumes from it. With -mode
// cluster (several processes, weir.WithCluster on Kafka) it counts the
// clicks of a Kafka topic per user in 5 s windows into another topic,
// exactly once, with its checkpoints in -checkpoints (s3://...): on
// SIGTERM the instance leaves the cluster and its tasks resume on the
// other instances from their last committed checkpoint.
//
// Both serve the REST API, /healthz and /readyz, the dashboard and
// /metrics on -rest; the token comes from $WEIR_REST_TOKEN (needed on an
// address that is not loopback). With -archive, each ended job is
// archived there for `weir history`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/rest"
	"github.com/weirstream/weir/storage/s3"
	"github.com/weirstream/weir/window"
)

// Click is a click on the clicks topic: {"user": "u1", "at": 1700000000000}.
type Click struct {
	User string `json:"user"`
	At   int64  `json:"at"`
}

// Count is a user's clicks in a 5 s window.
type Count struct {
	User   string `json:"user"`
	Window int64  `json:"window"`
	N      int64  `json:"n"`
}

func main() {
	mode := flag.String("mode", "service", "service (one process, savepoint on SIGTERM) or cluster (several processes on Kafka)")
	name := flag.String("name", "counts", "the job's name (in cluster mode: its consumer group and topics' prefix)")
	dir := flag.String("dir", "/var/lib/weir", "service mode: the directory (or s3://bucket/prefix) of the job's savepoints and checkpoints")
	checkpoints := flag.String("checkpoints", "", "cluster mode: the checkpoint storage every instance reaches (s3://bucket/prefix)")
	bootstrap := flag.String("bootstrap", os.Getenv("WEIR_KAFKA_BOOTSTRAP"), "cluster mode: the Kafka brokers, comma-separated")
	addr := flag.String("rest", "0.0.0.0:8081", "the REST server's address")
	archive := flag.String("archive", "", "a directory where each ended job is archived (weir history)")
	parallelism := flag.Int("parallelism", 2, "service mode: the job's parallelism")
	rate := flag.Float64("rate", 1000, "service mode: events per second")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	opts := []rest.Option{rest.WithToken(os.Getenv("WEIR_REST_TOKEN"))}
	if *archive != "" {
		opts = append(opts, rest.WithArchiveDir(*archive))
	}
	srv := rest.New(*addr, opts...)
	envOpts := []weir.Option{weir.WithPlugin(srv), weir.WithLogger(logger)}
	if strings.HasPrefix(*dir, "s3://") || strings.HasPrefix(*checkpoints, "s3://") {
		// Credentials and endpoint from the standard chain: $AWS_* or the
		// pod's web identity (IRSA).
		envOpts = append(envOpts, weir.WithStorage(s3.New(s3.Options{})))
	}

	// SIGTERM (Kubernetes stopping the pod) ends ctx: the service stops
	// with a savepoint, a cluster member leaves.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch *mode {
	case "service":
		env := weir.NewEnvironment(append(envOpts, weir.WithParallelism(*parallelism))...)
		env.EnableCheckpointing(10 * time.Second)
		wm := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(i int64, _ int64) int64 { return i })
		events := weir.Generate(env, -1, *rate, func(i int64) int64 { return i }, wm).UID("events")
		counts := weir.Sum(weir.KeyBy(events, func(i int64) int64 { return i % 16 }), func(int64) int64 { return 1 },
			func(p *int64, v int64) { *p = v }).UID("counts")
		weir.Discard(counts)
		var res weir.JobResult
		res, err = env.RunService(ctx, *name, *dir)
		if err == nil {
			logger.Info("job ended", "status", res.Status.String(), "savepoint", res.Savepoint)
		}
	case "cluster":
		if *bootstrap == "" || *checkpoints == "" {
			fmt.Fprintln(os.Stderr, "job: -mode cluster needs -bootstrap and -checkpoints")
			os.Exit(2)
		}
		brokers := strings.Split(*bootstrap, ",")
		env := weir.NewEnvironment(append(envOpts, weir.WithCluster(kafkacluster.New(*bootstrap)))...)
		env.EnableCheckpointing(time.Second, weir.CheckpointStorage(*checkpoints))
		clicks := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[Click](), kafka.WithBrokers(brokers...), kafka.WithTopics("clicks")),
			weir.ForBoundedOutOfOrderness[Click](time.Second).WithTimestampAssigner(func(c Click, _ int64) int64 { return c.At }).
				WithIdleness(5*time.Second), "clicks").UID("clicks")
		ones := weir.Map(clicks, func(c Click) Count { return Count{User: c.User, Window: c.At - c.At%5000, N: 1} })
		counts := weir.Reduce(weir.Window(weir.KeyBy(ones, func(c Count) string { return c.User }), window.TumblingEventTime(5*time.Second)),
			func(a, b Count) Count { a.N += b.N; return a }).UID("counts")
		kafka.NewSink(kafka.JSONValues[Count](func(c Count) []byte { return []byte(c.User) }), kafka.WithBrokers(brokers...),
			kafka.WithDefaultTopic("click-counts"), kafka.WithDeliveryGuarantee(kafka.ExactlyOnce)).To(counts).UID("out")
		err = env.Execute(ctx, *name)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
	default:
		fmt.Fprintf(os.Stderr, "job: unknown -mode %q\n", *mode)
		os.Exit(2)
	}
	// Close archives the job (-archive) and stops the REST server.
	if cerr := srv.Close(); cerr != nil {
		logger.Warn("closing the REST server", "err", cerr)
	}
	if err != nil {
		log.Fatal(err)
	}
}
