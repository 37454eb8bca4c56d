package cluster_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/kafkatest"
)

// TestClusterTLSSCRAM runs the cluster test job as one instance whose
// every client (group membership, reads, repartition topics, the tasks'
// transactions, the source and the sink) reaches the broker through its
// TLS listener with SCRAM-SHA-512 (kafkacluster.Security,
// kafka.WithSecurity): the committed output, read on the plain listener,
// is the expected window sums, once each.
func TestClusterTLSSCRAM(t *testing.T) {
	plain := kafkatest.Broker(t)
	addr, caFile := kafkatest.SecureBroker(t)
	cl, adm := clients(t, plain)
	s := jobSpec{Broker: addr, CAFile: caFile, Job: unique(t, "job"), In: unique(t, "in"), Out: unique(t, "out"),
		Checkpoints: t.TempDir(), SessionMS: 6000}
	createTopic(t, adm, s.In, 2)
	createTopic(t, adm, s.Out, 1)
	evs, want := inputs(rand.New(rand.NewPCG(5, 6)), 2, 300, 8)
	for p := range evs {
		evs[p] = append(evs[p], ev{User: endUser, Amount: 1, TS: 1 << 40})
	}
	produceEvents(t, cl, s.In, evs)
	out := readOutput(t, plain, s.Out)
	ctx, cancel := context.WithCancel(context.Background())
	h, err := buildJob(s).ExecuteAsync(ctx, s.Job)
	if err != nil {
		t.Fatal(err)
	}
	got := out.wait(t, count(want), time.Minute)
	cancel()
	if err := h.Wait(); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if d := diff(got, want); d != "" {
		t.Fatalf("committed output (%d records) differs from the expected window sums (%d):\n%s", count(got), count(want), d)
	}
}
