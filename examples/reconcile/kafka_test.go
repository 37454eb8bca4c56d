package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
)

// TestKafkaMode writes sample data with -mode produce and reconciles it
// with -mode kafka -bounded against the real broker (WEIR_KAFKA_BOOTSTRAP,
// which the test command sets); a read_committed consumer of the results
// topic must see exactly the batch computation's matches and unmatched
// orders.
func TestKafkaMode(t *testing.T) {
	addr := kafkatest.Broker(t)
	const n = 3000
	suffix := fmt.Sprint(time.Now().UnixNano())
	topics := "orders-" + suffix + ",payments-" + suffix + ",results-" + suffix
	ctx := t.Context() // no deadline: a hang ends at go test's -timeout
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	defer adm.DeleteTopics(context.Background(), "orders-"+suffix, "payments-"+suffix, "results-"+suffix)
	var out bytes.Buffer
	for _, args := range [][]string{
		{"-mode", "produce", "-brokers", addr, "-topics", topics, "-orders", fmt.Sprint(n)},
		{"-mode", "kafka", "-brokers", addr, "-topics", topics, "-bounded", "-parallelism", "2", "-checkpoint", "50ms"},
	} {
		if err := run(ctx, args, &out); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
	}
	// The sample event times are older than a broker's default retention
	// (7 days): topics that kept it would lose their records at the
	// broker's next retention check, which once came between the produce
	// and the job's start (the job then read nothing).
	// A finite retention.ms of any length is an error here (-1 is none).
	if err := checkRetention(ctx, adm, []string{"orders-" + suffix, "payments-" + suffix, "results-" + suffix}, math.MaxInt64); err != nil {
		t.Errorf("the topics -mode produce created: %v", err)
	}
	// The job has ended: every transaction is committed once the last
	// stable offsets reach the ends.
	results := "results-" + suffix
	ends, err := kafkatest.Decided(ctx, adm, results)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { parts[o.Partition] = kgo.NewOffset().AtStart() })
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{results: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	wantM, wantU := bruteForce(n)
	var gotM []Match
	var gotU []Order
	// Every transaction is decided, so every result is readable now: a
	// read that still misses some after two minutes has lost them, and
	// fails with the counts instead of waiting for go test's -timeout.
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for len(gotM)+len(gotU) < len(wantM)+len(wantU) {
		fs := rd.PollFetches(readCtx)
		if readCtx.Err() != nil {
			t.Fatalf("read %d matches of %d and %d unmatched orders of %d (ends %v)\n%s", len(gotM), len(wantM), len(gotU), len(wantU), ends, out.String())
		}
		fs.EachRecord(func(r *kgo.Record) {
			var res Result
			if err := json.Unmarshal(r.Value, &res); err != nil {
				t.Fatalf("result %q: %v", r.Value, err)
			}
			if res.Kind == "matched" {
				gotM = append(gotM, Match{OrderID: res.OrderID, OrderTS: res.OrderTS, PaymentTS: res.PaymentTS, Amount: res.Amount})
			} else {
				gotU = append(gotU, Order{ID: res.OrderID, TS: res.OrderTS, Amount: res.Amount})
			}
		})
	}
	var wu []Order
	for _, u := range wantU {
		wu = append(wu, u.Value)
	}
	slices.SortFunc(gotM, byID(func(m Match) int64 { return m.OrderID }))
	slices.SortFunc(gotU, byID(func(o Order) int64 { return o.ID }))
	if !slices.Equal(gotM, wantM) || !slices.Equal(gotU, wu) {
		t.Fatalf("matches: %s; unmatched: %s", firstDiff(gotM, wantM), firstDiff(gotU, wu))
	}
	// Nothing more than the expected results (the ends are exact).
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	t.Logf("%d matched, %d unmatched; %d offsets in the results topic (records plus transaction markers)", len(gotM), len(gotU), total)
}

// TestKafkaProduceRetention: -mode produce refuses a topic that exists
// with a retention that would delete the sample records (their event
// times are older than the broker's default 7 days), naming it.
func TestKafkaProduceRetention(t *testing.T) {
	addr := kafkatest.Broker(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	orders := "orders-" + suffix
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := t.Context()
	defer adm.DeleteTopics(context.Background(), orders, "payments-"+suffix, "results-"+suffix)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, orders); err != nil { // the broker's default retention
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(ctx, []string{"-mode", "produce", "-brokers", addr, "-topics", orders + ",payments-" + suffix + ",results-" + suffix, "-orders", "10"}, &out)
	if err == nil || !strings.Contains(err.Error(), "topic "+orders+" exists with retention.ms=") {
		t.Fatalf("produce into %s with the default retention: %v, want an error naming it and its retention.ms", orders, err)
	}
}
