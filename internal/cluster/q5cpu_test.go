package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/queries"
	"github.com/weirstream/weir/window"
)

// The CPU cost of going through Kafka between stages: Nexmark q5's
// repartitioned part (bids keyed by auction into a sliding 10 s / 2 s
// count per auction) over the same events in a topic, run as a cluster
// of 1, 2 and 3 OS processes and as one process of the single-process
// engine (bounded source, parallelism = partitions), each until every
// event is consumed; the CPU seconds are the children's getrusage (user +
// system), the broker's excluded. A recorded run, not part of the suite:
//
//	WEIR_CLUSTER_Q5=1000000 go test -count=1 -v -run TestClusterQ5CPU ./internal/cluster
//
// q5's last step, the hottest auctions over all (windowAll), is left out:
// it runs in a cluster only once windowAll edges do.
func TestClusterQ5CPU(t *testing.T) {
	n, _ := strconv.ParseInt(os.Getenv("WEIR_CLUSTER_Q5"), 10, 64)
	if n <= 0 {
		t.Skip("a recorded run: set WEIR_CLUSTER_Q5 to the number of events")
	}
	broker := kafkatest.Broker(t)
	_, adm := clients(t, broker)
	const parts = 3
	in := unique(t, "nexmark")
	createTopic(t, adm, in, parts)
	produceNexmark(t, broker, in, n, parts)
	load := func() string { b, _ := os.ReadFile("/proc/loadavg"); return string(b[:min(len(b), 14)]) }
	row := func(what string, cpu time.Duration, wall time.Duration, ld string) {
		t.Logf("q5 %-22s CPU %7.2f s  %6.2f CPU s per M events  wall %6.1f s  load %s", what, cpu.Seconds(), cpu.Seconds()/(float64(n)/1e6), wall.Seconds(), ld)
	}
	// The single-process engine.
	s := jobSpec{Broker: broker, Job: unique(t, "single"), In: in, Checkpoints: t.TempDir(), Q5: n, Single: true, Parallelism: parts}
	ld := load()
	start := time.Now()
	cmd := memberCmd(s)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("single-process q5: %v\n%s", err, out)
	}
	row("single process", cpuOf(cmd), time.Since(start), ld)
	for inst := 1; inst <= 3; inst++ {
		s := jobSpec{Broker: broker, Job: unique(t, "q5"), In: in, Checkpoints: t.TempDir(), SessionMS: 6000, Q5: n}
		ld := load()
		start := time.Now()
		var cmds []*exec.Cmd
		for i := 0; i < inst; i++ {
			c := memberCmd(s)
			c.Stderr = os.Stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		consumed(t, broker, s.Job, n, parts)
		var cpu time.Duration
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGKILL)
			_ = c.Wait()
			cpu += cpuOf(c)
		}
		row(fmt.Sprintf("cluster of %d", inst), cpu, time.Since(start), ld)
	}
}

func memberCmd(s jobSpec) *exec.Cmd {
	spec, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEIR_CLUSTER_MEMBER=1", "WEIR_CLUSTER_SPEC="+string(spec))
	return cmd
}

func cpuOf(c *exec.Cmd) time.Duration {
	if c.ProcessState == nil {
		return 0
	}
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

// consumed waits until every task of job has committed a checkpoint past
// all its input: the source tasks all n events, the others to the end of
// their repartition partitions (but for transaction markers).
func consumed(t *testing.T, broker, job string, n int64, parts int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for {
		st, err := cluster.Status(ctx, []string{broker}, job)
		done := err == nil && len(st) == 2*parts
		var read int64
		for _, ts := range st {
			source := strings.HasPrefix(ts.Task, "s1-")
			if ts.Lag < 0 || ts.Lag > int64(parts) || (source && ts.Lag != 0) {
				done = false
			}
			for _, in := range ts.Inputs {
				if source {
					read += in.Committed
				}
			}
		}
		if done && read == n {
			t.Logf("job %s consumed: %+v", job, st)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s: not every event consumed: %+v (%v)", job, st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// produceNexmark writes n Nexmark events to topic, generator i's into
// partition i, as nexmark.AppendLine lines.
func produceNexmark(t *testing.T, broker, topic string, n int64, parts int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var perr error
	for i, g := range nexmark.NewGenerators(nexmark.DefaultConfig(n), parts) {
		var e nexmark.Event
		for g.HasNext() {
			g.Next(&e)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i), Value: nexmark.AppendLine(nil, &e), Timestamp: time.UnixMilli(e.Timestamp())},
				func(_ *kgo.Record, err error) {
					if err != nil && perr == nil {
						perr = err
					}
				})
		}
	}
	if err := cl.Flush(ctx); err != nil || perr != nil {
		t.Fatal(err, perr)
	}
}

// q5Job is q5's repartitioned part on the events of s.In.
func q5Job(s jobSpec) *weir.Environment {
	cfg := nexmark.DefaultConfig(s.Q5)
	opts := []weir.Option{weir.WithLogger(jobLogger())}
	if s.Single {
		opts = append(opts, weir.WithParallelism(s.Parallelism))
	} else {
		opts = append(opts, weir.WithKafkaCluster(s.Broker, weir.ClusterSessionTimeout(time.Duration(s.SessionMS)*time.Millisecond)))
	}
	env := weir.NewEnvironment(opts...)
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(s.Checkpoints))
	deser := kafka.DeserializerFunc[nexmark.Event](func(rec *kafka.ConsumerRecord) (nexmark.Event, error) {
		var e nexmark.Event
		err := nexmark.ParseLine(rec.Value, &e)
		return e, err
	})
	kopts := []kafka.Option{kafka.WithBrokers(s.Broker), kafka.WithTopics(s.In), kafka.WithStartingOffsets(kafka.Earliest())}
	if s.Single {
		kopts = append(kopts, kafka.WithBounded(kafka.Latest()))
	}
	events := weir.FromSource(env, kafka.NewSource(deser, kopts...), nexmark.Watermarks(cfg), "Nexmark").UID("nexmark")
	byAuction := weir.KeyBy(queries.Bids(events), func(b nexmark.Bid) int64 { return b.Auction })
	counts := weir.Aggregate(weir.Window(byAuction, window.SlidingEventTime(10*time.Second, 2*time.Second)), bidCount{}).Name("Q5 count").UID("count")
	weir.Discard(counts).UID("discard")
	return env
}

// bidCount counts an auction's bids in a window.
type bidCount struct{}

func (bidCount) CreateAccumulator() int64           { return 0 }
func (bidCount) Add(_ nexmark.Bid, acc int64) int64 { return acc + 1 }
func (bidCount) GetResult(acc int64) int64          { return acc }
func (bidCount) Merge(a, b int64) int64             { return a + b }
