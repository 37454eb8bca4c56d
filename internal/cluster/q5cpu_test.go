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
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/queries"
)

// The CPU cost of going through Kafka between stages: Nexmark q5 (hot
// items: bids keyed by auction into a sliding 10 s / 2 s count per
// auction, then the auctions with the most bids of each window over all
// auctions, a windowAll), as nexmark/queries defines it, over the same
// events in a topic, run as a cluster of 1, 2 and 3 OS processes and as
// one process of the single-process engine (bounded source, parallelism
// = partitions), each until every event is consumed and every result
// committed; the CPU seconds are the children's getrusage (user +
// system), the broker's excluded. Each cluster's committed results must
// equal the single-process run's, record for record. A recorded run, not
// part of the suite:
//
//	WEIR_CLUSTER_Q5=1000000 go test -count=1 -v -run TestClusterQ5CPU ./internal/cluster
func TestClusterQ5CPU(t *testing.T) {
	n, _ := strconv.ParseInt(os.Getenv("WEIR_CLUSTER_Q5"), 10, 64)
	if n <= 0 {
		t.Skip("a recorded run: set WEIR_CLUSTER_Q5 to the number of events")
	}
	broker := kafkatest.Broker(t)
	cl, adm := clients(t, broker)
	const parts = 3
	in := unique(t, "nexmark")
	createTopic(t, adm, in, parts)
	records := produceNexmark(t, broker, in, n, parts)
	load := func() string { b, _ := os.ReadFile("/proc/loadavg"); return string(b[:min(len(b), 14)]) }
	row := func(what string, cpu time.Duration, wall time.Duration, ld string) {
		t.Logf("q5 %-22s CPU %7.2f s  %6.2f CPU s per M events  wall %6.1f s  load %s", what, cpu.Seconds(), cpu.Seconds()/(float64(n)/1e6), wall.Seconds(), ld)
	}
	// The single-process engine: its committed results are the expected
	// ones.
	s := jobSpec{Broker: broker, Job: unique(t, "single"), In: in, Out: unique(t, "out"), Checkpoints: t.TempDir(), Q5: n, Single: true, Parallelism: parts}
	createTopic(t, adm, s.Out, 1)
	out := readOutput(t, broker, s.Out)
	ld := load()
	start := time.Now()
	cmd := memberCmd(s)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("single-process q5: %v\n%s", err, b)
	}
	row("single process", cpuOf(cmd), time.Since(start), ld)
	want := out.drain(t, cl, s.Out)
	if count(want) == 0 {
		t.Fatalf("the single-process q5 committed no results")
	}
	t.Logf("q5: %d results of the single-process run", count(want))
	for inst := 1; inst <= 3; inst++ {
		s := jobSpec{Broker: broker, Job: unique(t, "q5"), In: in, Out: unique(t, "out"), Checkpoints: t.TempDir(), SessionMS: 6000, Q5: n}
		createTopic(t, adm, s.Out, 1)
		out := readOutput(t, broker, s.Out)
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
		// 7 tasks: 3 read the topic, 3 count, 1 keeps the hottest.
		consumed(t, broker, s.Job, records, 2*parts+1)
		// Every task has committed a checkpoint past all its input, so its
		// results are committed; the reader may not have them yet.
		results := time.Now().Add(time.Minute)
		for got, _ := out.snapshot(); count(got) < count(want) && time.Now().Before(results); got, _ = out.snapshot() {
			time.Sleep(50 * time.Millisecond)
		}
		var cpu time.Duration
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGKILL)
			_ = c.Wait()
			cpu += cpuOf(c)
		}
		row(fmt.Sprintf("cluster of %d", inst), cpu, time.Since(start), ld)
		if got := out.drain(t, cl, s.Out); diff(got, want) != "" {
			t.Errorf("cluster of %d: the committed q5 results (%d) differ from the single-process run's (%d):\n%s", inst, count(got), count(want), diff(got, want))
		}
	}
}

// drain returns what the reader has read of topic (1 partition) once it
// has read everything committed so far: it writes a marker record (not
// in a transaction) and waits until the reader has it. Every writer of
// the topic must have stopped: an open transaction of theirs would hold
// the marker back (read_committed).
func (r *reader) drain(t *testing.T, cl *kgo.Client, topic string) map[string]int {
	t.Helper()
	const marker = "~drained"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(marker)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got, _ := r.snapshot()
	for got[marker] == 0 {
		if ctx.Err() != nil {
			t.Fatalf("topic %s: the marker written after the job stopped is not readable after a minute: an open transaction holds it back (%d records read)", topic, count(got))
		}
		time.Sleep(50 * time.Millisecond)
		got, _ = r.snapshot()
	}
	delete(got, marker)
	return got
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

// consumed waits until every one of the tasks of job has committed a
// checkpoint past all its input: the source tasks (stage s1) at lag 0
// and together at the records of the input topic, the others at the end
// of their repartition partitions but for transaction markers (one per
// upstream task at most). A status that lists fewer tasks is not done.
func consumed(t *testing.T, broker, job string, records int64, tasks int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	short := false
	for {
		st, err := cluster.Status(ctx, []string{broker}, job)
		if err == nil && len(st) < tasks && !short {
			short = true
			t.Logf("job %s: the status lists %d of %d tasks: %+v", job, len(st), tasks, st)
		}
		ok := err == nil && len(st) == tasks
		var read int64
		for _, ts := range st {
			source := strings.HasPrefix(ts.Task, "s1-")
			if ts.Lag < 0 || ts.Lag > int64(tasks) || (source && ts.Lag != 0) {
				ok = false
			}
			for _, in := range ts.Inputs {
				if source {
					read += in.Committed
				}
			}
		}
		if ok && read == records {
			t.Logf("job %s consumed: %+v", job, st)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s: not every event consumed or result committed: %+v (%v)", job, st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// produceNexmark writes n Nexmark events to topic, generator i's into
// partition i, as nexmark.AppendLine lines, then to every partition a
// person far ahead in event time: it moves every window to fire in a
// cluster, whose sources never end (q5 reads bids only). It returns the
// number of records written.
func produceNexmark(t *testing.T, broker, topic string, n int64, parts int) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var perr error
	produce := func(p int, e *nexmark.Event) {
		// The record's timestamp is now: event time is in the line. With
		// the events' own times (2015) the broker's retention (7 days by
		// record timestamp) deleted the topic's records minutes after they
		// were written, and the job read nothing.
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: nexmark.AppendLine(nil, e)},
			func(_ *kgo.Record, err error) {
				if err != nil && perr == nil {
					perr = err
				}
			})
	}
	for i, g := range nexmark.NewGenerators(nexmark.DefaultConfig(n), parts) {
		var e nexmark.Event
		for g.HasNext() {
			g.Next(&e)
			produce(i, &e)
		}
	}
	for p := 0; p < parts; p++ {
		produce(p, &nexmark.Event{Type: nexmark.PersonEvent, Person: &nexmark.Person{ID: -1, Name: "end", DateTime: 1 << 50}})
	}
	if err := cl.Flush(ctx); err != nil || perr != nil {
		t.Fatal(err, perr)
	}
	return n + int64(parts)
}

// q5Job is Nexmark q5 on the events of s.In, its results written exactly
// once to s.Out as lines "auction num start end".
func q5Job(s jobSpec) *weir.Environment {
	cfg := nexmark.DefaultConfig(s.Q5)
	opts := []weir.Option{weir.WithLogger(jobLogger())}
	if s.Single {
		opts = append(opts, weir.WithParallelism(s.Parallelism))
	} else {
		opts = append(opts, weir.WithCluster(kafkacluster.New(s.Broker, kafkacluster.SessionTimeout(time.Duration(s.SessionMS)*time.Millisecond))))
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
	// Event time from the events themselves, not the records' timestamps.
	strategy := nexmark.Watermarks(cfg).WithTimestampAssigner(func(e nexmark.Event, _ int64) int64 { return e.Timestamp() })
	events := weir.FromDynamicSource(env, kafka.NewSource(deser, kopts...), strategy, "Nexmark").UID("nexmark")
	lines := weir.Map(queries.Q5(events), func(r queries.Q5Result) string {
		return fmt.Sprintf("%d %d %d %d", r.Auction, r.Num, r.Start, r.End)
	})
	sopts := []kafka.Option{kafka.WithBrokers(s.Broker), kafka.WithDefaultTopic(s.Out), kafka.WithDeliveryGuarantee(kafka.ExactlyOnce)}
	if s.Single {
		sopts = append(sopts, kafka.WithTransactionalIDPrefix(s.Out)) // a cluster derives its own
	}
	kafka.NewSink(kafka.StringValues(), sopts...).To(lines).UID("out")
	return env
}
