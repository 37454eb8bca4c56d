package kafka_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestKafkaTransactionTimeout: the exactly-once sink's transaction (1 s
// timeout) stays open while the job's source stalls, until the broker aborts it
// (the test broker looks for timed-out transactions every 5 s). The sink's
// next writes are refused, the job fails and restarts (no checkpoint
// completed: from the start), and ends with its final checkpoint; a
// read_committed consumer sees every result exactly once, none of the
// aborted transaction's.
func TestKafkaTransactionTimeout(t *testing.T) {
	addr := broker(t)
	// One partition of 10,000 records: the source hands on at most 4,096
	// per fetch round, so the record at offset 6,000 is decoded in a later
	// round than the first records, which reach the sink meanwhile (the
	// source fetches on a goroutine of its own).
	const n, stallAt = 10000, 6000
	in, out := newTopic(t, addr, 1), newTopic(t, addr, 1)
	var recs []*kgo.Record
	var want []string
	for i := range n {
		recs = append(recs, rec(in, 0, "r"+itoa(i), int64(i)))
		want = append(want, "R"+itoa(i))
	}
	produce(t, manual(t, addr), recs...)
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var attempts atomic.Int64
	deser := kafka.DeserializerFunc[string](func(cr *kafka.ConsumerRecord) (string, error) {
		switch cr.Offset {
		case 0:
			attempts.Add(1)
		case stallAt:
			once.Do(func() {
				close(stalled)
				<-release
			})
		}
		return string(cr.Value), nil
	})
	// No periodic checkpoint in the run: the only transaction of the
	// first attempt can only end by the broker's abort. A bounded job
	// still takes its final checkpoint when its input has ended.
	env := weir.NewEnvironment(weir.WithParallelism(1), weir.WithRestartStrategy(weir.FixedDelayRestart(3, 50*time.Millisecond)))
	env.EnableCheckpointing(time.Hour, weir.CheckpointTimeout(time.Minute))
	src := weir.FromDynamicSource(env, kafka.NewSource(deser, kafka.WithBrokers(addr), kafka.WithTopics(in),
		kafka.WithStartingOffsets(kafka.Earliest()), kafka.WithBounded(kafka.Latest())), weir.NoWatermarks[string](), "in").UID("in")
	up := weir.Map(src, strings.ToUpper).UID("upper")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic(out),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(out),
		kafka.WithTransactionTimeout(time.Second)).To(up).UID("out")
	h, err := env.ExecuteAsync(ctx, "txn-timeout")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stalled:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	// The open transaction holds records (an end offset past the last
	// stable offset), then the broker aborts it (they meet again).
	adm := admin(t, addr)
	state := func() (open bool, written int64) {
		ends, err := adm.ListEndOffsets(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		stable, err := adm.ListCommittedOffsets(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		ends.Each(func(o kadm.ListedOffset) {
			written += o.Offset
			if s, _ := stable.Lookup(o.Topic, o.Partition); s.Offset < o.Offset {
				open = true
			}
		})
		return open, written
	}
	for phase, wantOpen := range []bool{true, false} {
		for {
			if open, _ := state(); open == wantOpen {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("phase %d: waiting for the transaction to be open=%t: %v", phase, wantOpen, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	close(release)
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := attempts.Load(); n < 2 {
		t.Fatalf("the job ran %d attempt(s): the timed-out transaction went unnoticed", n)
	}
	checkOnce(t, values(readAll(t, addr, out, true)), want)
	// The aborted records are in the log, not visible to read_committed.
	if _, written := state(); written <= int64(len(want)) {
		t.Fatalf("%d offsets written for %d results: no aborted records", written, len(want))
	}
}
