package kafka_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// boundedCounts are the records per partition of the input of the bounded
// tests: uneven, so that the source subtasks (and splits) end at very
// different times, one partition empty.
var boundedCounts = []int{2500, 400, 30, 0}

// boundedInput creates an input topic with boundedCounts records and an
// output topic, and returns them with the results a job must commit.
func boundedInput(t *testing.T, addr string) (in, out string, want []string) {
	t.Helper()
	in, out = newTopic(t, addr, len(boundedCounts)), newTopic(t, addr, 3)
	cl := manual(t, addr)
	var recs []*kgo.Record
	for p, n := range boundedCounts {
		for i := range n {
			v := fmt.Sprintf("p%d-%d", p, i)
			recs = append(recs, rec(in, int32(p), v, int64(i)))
			want = append(want, strings.ToUpper(v))
		}
	}
	produce(t, cl, recs...)
	slices.Sort(want)
	return in, out, want
}

// boundedJob reads in to its end, maps each record, and writes to out
// exactly once, checkpointing every 50 ms into store.
func boundedJob(addr, in, out string, store weir.CheckpointStore, restore bool) *weir.Environment {
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(8))
	opts := []weir.CheckpointOption{weir.CheckpointStoreIn(store), weir.CheckpointTimeout(30 * time.Second)}
	if restore {
		opts = append(opts, weir.RestoreFromLatest())
	}
	env.EnableCheckpointing(50*time.Millisecond, opts...)
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(in),
		kafka.WithStartingOffsets(kafka.Earliest()), kafka.WithBounded(kafka.Latest())), weir.NoWatermarks[string](), "in").UID("in")
	// The tasks after the exchange are a little slow, and the batches
	// small, so that the job spans several checkpoints (barriers wait
	// behind little data) and the source subtasks finish far apart (the
	// one with the big partition is held back by back-pressure).
	var n atomic.Int64
	up := weir.Map(weir.Rebalance(src), func(v string) string {
		if n.Add(1)%4 == 0 {
			time.Sleep(time.Millisecond)
		}
		return strings.ToUpper(v)
	}).UID("upper")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic(out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(out),
		kafka.WithTransactionTimeout(time.Minute)).To(up).UID("out")
	return env
}

// checkOnce fails unless got (read_committed) is want exactly.
func checkOnce(t *testing.T, got, want []string) {
	t.Helper()
	slices.Sort(got)
	if slices.Equal(got, want) {
		return
	}
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	var dup, missing []string
	for v, n := range seen {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s x%d", v, n))
		}
	}
	for _, w := range want {
		if seen[w] == 0 {
			missing = append(missing, w)
		}
	}
	slices.Sort(dup)
	t.Fatalf("read_committed: %d results, want %d; %d repeated %q, %d missing %q", len(got), len(want),
		len(dup), dup[:min(len(dup), 5)], len(missing), missing[:min(len(missing), 5)])
}

func faultTrials(t *testing.T) int {
	t.Helper()
	s := os.Getenv("WEIR_FAULT_TRIALS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("WEIR_FAULT_TRIALS=%q", s)
	}
	return n
}

// TestKafkaBoundedExactlyOnce runs a bounded Kafka-to-Kafka exactly-once
// job over partitions of very different sizes with a 50 ms checkpoint
// interval, WEIR_FAULT_TRIALS times (default 1): checkpoints go on while
// source subtasks finish one after the other, the job ends with a final
// checkpoint that commits the last transactions, and a read_committed
// consumer sees every result exactly once.
func TestKafkaBoundedExactlyOnce(t *testing.T) {
	addr := broker(t)
	for trial := range faultTrials(t) {
		t.Run("trial-"+strconv.Itoa(trial), func(t *testing.T) {
			in, out, want := boundedInput(t, addr)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := boundedJob(addr, in, out, weir.NewMemoryCheckpointStore(), false).Execute(ctx, "bounded-eo"); err != nil {
				t.Fatal(err)
			}
			checkOnce(t, values(readAll(t, addr, out, true)), want)
		})
	}
}

// TestKafkaBoundedRestartAfterFinish runs the bounded job to its end, then
// starts it again from its latest checkpoint (RestoreFromLatest, as a
// restarted process would): the second run reads and commits nothing, so
// every result stays there exactly once.
func TestKafkaBoundedRestartAfterFinish(t *testing.T) {
	addr := broker(t)
	in, out, want := boundedInput(t, addr)
	store, err := weir.NewDirCheckpointStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := boundedJob(addr, in, out, store, true).Execute(ctx, "bounded-restart"); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, values(readAll(t, addr, out, true)), want)
	for run := range 2 {
		if err := boundedJob(addr, in, out, store, true).Execute(ctx, "bounded-restart"); err != nil {
			t.Fatalf("restart %d: %v", run+1, err)
		}
		checkOnce(t, values(readAll(t, addr, out, true)), want)
	}
}
