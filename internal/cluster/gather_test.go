package cluster_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/kafkacluster"
	"github.com/weirstream/weir/window"
)

// numberer numbers the records its instance sees: one instance over the
// whole stream gives 1..N once each.
type numberer struct {
	tag string
	n   int
}

func (f *numberer) ProcessElement(e ev, _ weir.Context, out weir.Collector[string]) error {
	if e.User != endUser {
		f.n++
		out.Collect(fmt.Sprintf("%s %d", f.tag, f.n))
	}
	return nil
}

// where reports the subtask and parallelism of the instance that sees a
// user's records.
type where struct{ sub, par int }

func (f *where) Open(ctx weir.RuntimeContext) error {
	f.sub, f.par = ctx.Subtask(), ctx.Parallelism()
	return nil
}

func (f *where) ProcessElement(e ev, _ weir.Context, out weir.Collector[string]) error {
	if e.User != endUser {
		out.Collect(fmt.Sprintf("c %s %d %d", e.User, f.sub, f.par))
	}
	return nil
}

func userPartition(user string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(user))
	return int(h.Sum32() % uint32(n))
}

// buildGatherJob is a job of the shapes that gather a stream into one
// instance (windowAll, Global, SetParallelism(1)) and a custom
// partitioning; clusterOpts nil: one process reading the topic to its end.
func buildGatherJob(broker, in, out, checkpoints string, clusterOpts []kafkacluster.Option, got func(string)) *weir.Environment {
	opts := []weir.Option{weir.WithParallelism(2), weir.WithLogger(testLogger())}
	if clusterOpts != nil {
		opts = append(opts, weir.WithCluster(kafkacluster.New(broker, clusterOpts...)))
	}
	env := weir.NewEnvironment(opts...)
	ko := []kafka.Option{kafka.WithBrokers(broker), kafka.WithTopics(in)}
	if clusterOpts != nil {
		env.EnableCheckpointing(200*time.Millisecond, weir.CheckpointStorage(checkpoints))
	} else {
		ko = append(ko, kafka.WithBounded(kafka.Latest()))
	}
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.JSON[ev](), ko...),
		weir.ForBoundedOutOfOrderness[ev](0).WithTimestampAssigner(func(e ev, _ int64) int64 { return e.TS }), "events").UID("events")
	all := weir.Reduce(weir.WindowAll(src, window.TumblingEventTime(winSize*time.Millisecond)),
		func(a, b ev) ev { a.Amount += b.Amount; return a })
	lines := weir.Union(
		weir.FlatMap(all, func(e ev, out weir.Collector[string]) error {
			if e.User != endUser {
				out.Collect(fmt.Sprintf("a %d %d", e.TS-e.TS%winSize, e.Amount))
			}
			return nil
		}),
		weir.ProcessStream(weir.Global(src), &numberer{tag: "g"}).UID("global"),
		weir.ProcessStream(src, &numberer{tag: "s"}).SetParallelism(1).UID("single"),
		weir.ProcessStream(weir.PartitionCustom(src, userPartition, func(e ev) string { return e.User }), &where{}).UID("custom"),
	)
	if clusterOpts == nil {
		weir.SinkFunc(lines, func(l string) error { got(l); return nil })
		return env
	}
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(broker), kafka.WithDefaultTopic(out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(out)).To(lines).UID("out")
	return env
}

// TestClusterGather runs, in a cluster, the operators that see a whole
// stream in one instance (windowAll, an operator after Global, one with
// SetParallelism(1)): each runs in a stage of one task, fed through a
// repartition topic, and the committed output equals the one-process
// run's; a custom partitioning routes records to the task its partitioner
// picks among the stage's tasks.
func TestClusterGather(t *testing.T) {
	broker := kafkatest.Broker(t)
	cl, adm := clients(t, broker)
	job, in, out := unique(t, "job"), unique(t, "in"), unique(t, "out")
	createTopic(t, adm, in, 3)
	createTopic(t, adm, out, 1)
	evs, _ := inputs(rand.New(rand.NewPCG(9, 10)), 3, 400, 12)
	for p := range evs {
		evs[p] = append(evs[p], ev{User: endUser, Amount: 1, TS: 1 << 40})
	}
	produceEvents(t, cl, in, evs)

	var mu sync.Mutex
	want := map[string]int{}
	if err := buildGatherJob(broker, in, out, "", nil, func(l string) {
		if !strings.HasPrefix(l, "c ") {
			mu.Lock()
			want[l]++
			mu.Unlock()
		}
	}).Execute(context.Background(), "gather-one-process"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := readOutput(t, broker, out)
	h, err := buildGatherJob(broker, in, out, t.TempDir(), []kafkacluster.Option{kafkacluster.SessionTimeout(6 * time.Second)}, nil).ExecuteAsync(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	const custom = 3 * 400 // a line per event
	r.wait(t, count(want)+custom, 2*time.Minute)
	waitCheckpoints(t, adm, job, 3)
	all, _ := r.snapshot()
	cancel()
	if err := h.Wait(); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	customs := 0
	for l, n := range all {
		if !strings.HasPrefix(l, "c ") {
			got[l] = n
			continue
		}
		customs += n
		var user string
		var sub, par int
		if _, err := fmt.Sscanf(l, "c %s %d %d", &user, &sub, &par); err != nil {
			t.Fatal(err)
		}
		if par != 3 || sub != userPartition(user, par) {
			t.Errorf("%q: user %s's records reached task %d of %d, its partitioner picks %d of 3", l, user, sub, par, userPartition(user, 3))
		}
	}
	if customs != custom {
		t.Errorf("the custom-partitioned operator emitted %d records, want %d", customs, custom)
	}
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output (%d records) differs from the one-process run's (%d):\n%s", count(got), count(want), d)
	}
}

// TestClusterBroadcastRefused: broadcast state needs every broadcast
// record in every task, which a cluster does not do yet: the job is
// refused at start, naming the operator.
func TestClusterBroadcastRefused(t *testing.T) {
	broker := kafkatest.Broker(t)
	_, adm := clients(t, broker)
	in := unique(t, "in")
	createTopic(t, adm, in, 2)
	env := weir.NewEnvironment(weir.WithCluster(kafkacluster.New(broker)), weir.WithLogger(testLogger()))
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()))
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(broker), kafka.WithTopics(in)), weir.ForMonotonousTimestamps[string](), "in")
	weir.Collect(weir.Map(weir.BroadcastPartition(src), func(s string) string { return s }).Name("everywhere"))
	err := startErr(t, env, unique(t, "job"))
	if err == nil || !strings.Contains(err.Error(), `operator "everywhere": a broadcast input`) {
		t.Errorf("a broadcast edge: got %v", err)
	}
}
