package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/window"
)

// copartSpec is a job that joins two topics partitioned by user (the
// records' Kafka key) and sums one of them per user in event-time
// windows, with Prepartitioned keyBys: in a cluster, no repartition topic.
type copartSpec struct {
	Broker, Job, Left, Right, Out, Checkpoints string
}

// buildCopartJob builds the job as a cluster member, or, with clusterOpts
// nil, as one process reading the topics to their current end and
// collecting its output into got.
func buildCopartJob(s copartSpec, clusterOpts []kafkacluster.Option, got func(string)) *weir.Environment {
	opts := []weir.Option{weir.WithParallelism(2), weir.WithLogger(testLogger())}
	if clusterOpts != nil {
		opts = append(opts, weir.WithCluster(kafkacluster.New(s.Broker, clusterOpts...)))
	}
	env := weir.NewEnvironment(opts...)
	if clusterOpts != nil {
		env.EnableCheckpointing(200*time.Millisecond, weir.CheckpointStorage(s.Checkpoints))
	}
	strategy := weir.ForBoundedOutOfOrderness[ev](0).WithTimestampAssigner(func(e ev, _ int64) int64 { return e.TS })
	source := func(topic string) weir.DataStream[ev] {
		ko := []kafka.Option{kafka.WithBrokers(s.Broker), kafka.WithTopics(topic)}
		if clusterOpts == nil {
			ko = append(ko, kafka.WithBounded(kafka.Latest()))
		}
		return weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[ev](), ko...), strategy, topic).UID(topic)
	}
	byUser := func(e ev) string { return e.User }
	left := weir.KeyBy(source(s.Left), byUser).Prepartitioned()
	right := weir.KeyBy(source(s.Right), byUser).Prepartitioned()
	pairs := weir.IntervalJoinFunc(left, right, weir.Between(-3*time.Millisecond, 3*time.Millisecond),
		func(a, b ev, _ weir.JoinContext, out weir.Collector[string]) error {
			if a.User != endUser {
				out.Collect(fmt.Sprintf("j %s %d %d %d %d", a.User, a.TS, b.TS, a.Amount, b.Amount))
			}
			return nil
		}).UID("join")
	sums := weir.Reduce(weir.Window(left, window.TumblingEventTime(winSize*time.Millisecond)),
		func(a, b ev) ev { a.Amount += b.Amount; return a })
	lines := weir.Union(pairs, weir.FlatMap(sums, func(e ev, out weir.Collector[string]) error {
		if e.User != endUser {
			out.Collect(fmt.Sprintf("w %s %d %d", e.User, e.TS-e.TS%winSize, e.Amount))
		}
		return nil
	}))
	if clusterOpts == nil {
		weir.SinkFunc(lines, func(l string) error { got(l); return nil })
		return env
	}
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(s.Broker), kafka.WithDefaultTopic(s.Out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(s.Out)).To(lines).UID("out")
	return env
}

// produceKeyed writes events with the user as the record key, through
// Kafka's default (murmur2) partitioner: the topic is partitioned by user.
// An end event goes to every partition (of parts) after them.
func produceKeyed(t *testing.T, broker, topic string, evs []ev, parts int, end bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, e := range evs {
		b, _ := json.Marshal(e)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(e.User), Value: b})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if end {
		var ends [][]ev
		for range parts {
			ends = append(ends, []ev{{User: endUser, Amount: 1, TS: 1 << 40}})
		}
		mcl, _ := clients(t, broker)
		produceEvents(t, mcl, topic, ends)
	}
}

func copartEvents(r *rand.Rand, n, users int) []ev {
	var evs []ev
	ts := int64(0)
	for range n {
		ts += int64(r.IntN(3))
		evs = append(evs, ev{User: "u" + strconv.Itoa(r.IntN(users)), Amount: int64(1 + r.IntN(100)), TS: ts})
	}
	return evs
}

// TestClusterCopartitioned joins two topics partitioned by the join key
// (Prepartitioned keyBys, same partition count) in a cluster of two
// instances, the second started mid-stream (tasks move to it with their
// join buffers and windows): the job creates no repartition topic, runs
// one stage (a task per partition), and its committed output equals the
// same job's in one process.
func TestClusterCopartitioned(t *testing.T) {
	broker := kafkatest.Broker(t)
	_, adm := clients(t, broker)
	const parts = 3
	s := copartSpec{Broker: broker, Job: unique(t, "job"), Left: unique(t, "left"), Right: unique(t, "right"),
		Out: unique(t, "out"), Checkpoints: t.TempDir()}
	createTopic(t, adm, s.Left, parts)
	createTopic(t, adm, s.Right, parts)
	createTopic(t, adm, s.Out, 1)
	r := rand.New(rand.NewPCG(7, 8))
	lefts, rights := copartEvents(r, 3000, 40), copartEvents(r, 3000, 40)
	half := len(lefts) / 2
	produceKeyed(t, broker, s.Left, lefts[:half], parts, false)
	produceKeyed(t, broker, s.Right, rights[:half], parts, false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	moved := make(chan struct{}, 16)
	tasksOf := map[int][]string{}
	member := func(i int) *weir.JobHandle {
		h, err := buildCopartJob(s, []kafkacluster.Option{kafkacluster.SessionTimeout(6 * time.Second),
			kafkacluster.OnTasks(func(ts []string) {
				mu.Lock()
				tasksOf[i] = ts
				mu.Unlock()
				select {
				case moved <- struct{}{}:
				default:
				}
			})}, nil).ExecuteAsync(ctx, s.Job)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	out := readOutput(t, broker, s.Out)
	a := member(0)
	out.wait(t, 1, time.Minute)
	b := member(1)
	// The second instance takes a share of the tasks: they stop on the
	// first and restore on the second from their committed checkpoints.
	waitFor(t, moved, time.Minute, "the second instance to take tasks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(tasksOf[1]) > 0 && len(tasksOf[0])+len(tasksOf[1]) == parts
	})
	produceKeyed(t, broker, s.Left, lefts[half:], parts, true)
	produceKeyed(t, broker, s.Right, rights[half:], parts, true)

	// The same job in one process.
	want := map[string]int{}
	if err := buildCopartJob(s, nil, func(l string) { mu.Lock(); want[l]++; mu.Unlock() }).Execute(context.Background(), "copart-one-process"); err != nil {
		t.Fatal(err)
	}
	if count(want) < 1000 {
		t.Fatalf("the one-process run gave only %d records", count(want))
	}
	out.wait(t, count(want), 2*time.Minute)
	waitCheckpoints(t, adm, s.Job, 3)
	got, _ := out.snapshot()
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output (%d records) differs from the one-process run's (%d):\n%s", count(got), count(want), d)
	}
	// One stage, no repartition topic.
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var jobTopics []string
	for name, td := range tds {
		if strings.HasPrefix(name, s.Job) {
			jobTopics = append(jobTopics, name)
			if strings.Contains(name, "repartition") {
				t.Errorf("the job created the repartition topic %s", name)
			}
			if name == cluster.TasksTopic(s.Job) && len(td.Partitions) != parts {
				t.Errorf("the tasks topic has %d partitions, want %d (one stage of %d tasks)", len(td.Partitions), parts, parts)
			}
		}
	}
	t.Logf("job topics %v; instance tasks %v", jobTopics, tasksOf)
	cancel()
	for _, h := range []*weir.JobHandle{a, b} {
		if err := h.Wait(); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	}
}

// waitFor waits until cond holds, checking it at every value of ch.
func waitFor(t *testing.T, ch <-chan struct{}, within time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(within)
	for !cond() {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("waited %v for %s", within, what)
		}
	}
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
}

// startErr runs env as a cluster member and returns what it fails with at
// start (nil if it ran until the timeout).
func startErr(t *testing.T, env *weir.Environment, job string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := env.ExecuteAsync(ctx, job)
	if err != nil {
		return err
	}
	err = h.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// TestClusterCopartitionMisconfigured: co-partitioned inputs with
// different partition counts, a Prepartitioned input joined with a
// repartitioned one, and a repartition topic that exists with another
// partition count fail at start, naming the problem.
func TestClusterCopartitionMisconfigured(t *testing.T) {
	broker := kafkatest.Broker(t)
	_, adm := clients(t, broker)
	s := copartSpec{Broker: broker, Job: unique(t, "job"), Left: unique(t, "left"), Right: unique(t, "right"),
		Out: unique(t, "out"), Checkpoints: t.TempDir()}
	createTopic(t, adm, s.Left, 3)
	createTopic(t, adm, s.Right, 2)
	createTopic(t, adm, s.Out, 1)
	copts := []kafkacluster.Option{kafkacluster.SessionTimeout(6 * time.Second)}
	err := startErr(t, buildCopartJob(s, copts, nil), s.Job)
	if err == nil || !strings.Contains(err.Error(), "different partition counts") || !strings.Contains(err.Error(), "IntervalJoin") {
		t.Errorf("Prepartitioned inputs of a join on topics of 3 and 2 partitions: got %v, want a refusal naming the partition counts and the join", err)
	}

	// One input Prepartitioned, the other keyed through a repartition topic.
	env := weir.NewEnvironment(weir.WithCluster(kafkacluster.New(broker)), weir.WithLogger(testLogger()))
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()))
	src := func(topic string) weir.DataStream[ev] {
		return weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[ev](), kafka.WithBrokers(broker), kafka.WithTopics(topic)),
			weir.ForMonotonousTimestamps[ev]().WithTimestampAssigner(func(e ev, _ int64) int64 { return e.TS }), topic)
	}
	byUser := func(e ev) string { return e.User }
	weir.Collect(weir.IntervalJoinFunc(weir.KeyBy(src(s.Left), byUser).Prepartitioned(), weir.KeyBy(src(s.Right), byUser),
		weir.Between(0, 0), func(a, b ev, _ weir.JoinContext, out weir.Collector[string]) error { return nil }).Name("mixed-join"))
	err = startErr(t, env, s.Job+"-mixed")
	if err == nil || !strings.Contains(err.Error(), `operator "mixed-join": input 1 is a Prepartitioned keyBy`) {
		t.Errorf("a Prepartitioned input joined with a repartitioned one: got %v", err)
	}

	// The repartition topic of the failover job's join exists with 5
	// partitions; the job needs 2 (its input's).
	js := jobSpec{Broker: broker, Job: unique(t, "job"), In: unique(t, "in"), Out: s.Out, Checkpoints: t.TempDir(), SessionMS: 6000, Join: true}
	createTopic(t, adm, js.In, 2)
	rep := js.Job + "-join-0-repartition"
	createTopic(t, adm, rep, 5)
	err = startErr(t, buildJob(js), js.Job)
	if err == nil || !strings.Contains(err.Error(), "topic "+rep+" has 5 partitions, the job needs 2") {
		t.Errorf("a repartition topic with 5 partitions for 2 tasks: got %v", err)
	}
}

// TestClusterNoTransactions: brokers without Kafka transactions (an old
// version, a transaction log that cannot be created, transactional ids
// not authorized) fail the start with a message saying that a cluster
// needs them. The brokers are kfake's, refusing as a real one would; the
// missing coordinator is TestCheckTransactionsNoCoordinator's.
func TestClusterNoTransactions(t *testing.T) {
	cases := []struct {
		name    string
		opts    []kfake.Opt
		control func(c *kfake.Cluster)
	}{
		{name: "Kafka 0.10.2 (no transactions)", opts: []kfake.Opt{kfake.MaxVersions(kversion.V0_10_2())}},
		{name: "transactional ids not authorized", control: func(c *kfake.Cluster) {
			c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				resp := req.(*kmsg.InitProducerIDRequest).ResponseKind().(*kmsg.InitProducerIDResponse)
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return resp, nil, true
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(2, "in")}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			if c.control != nil {
				c.control(fake)
			}
			addr := strings.Join(fake.ListenAddrs(), ",")
			env := weir.NewEnvironment(weir.WithCluster(kafkacluster.New(addr)), weir.WithLogger(testLogger()))
			env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()))
			weir.Collect(weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics("in")),
				weir.ForMonotonousTimestamps[string](), "in"))
			start := time.Now()
			err = startErr(t, env, "notxn")
			if err == nil || !strings.Contains(err.Error(), "refuse a transactional producer") || !strings.Contains(err.Error(), "need Kafka 0.11") {
				t.Fatalf("got %v, want a refusal saying that a cluster needs transactions", err)
			}
			t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}
