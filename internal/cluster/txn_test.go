package cluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/engine"
)

// TestHeldRecordsBounded: after a barrier, a writer holds its records
// until the checkpoint commits or is abandoned, up to maxHeld bytes; the
// next Produce waits (back-pressure) until the held records are released,
// and fails, instead of waiting, once the task stops.
func TestHeldRecordsBounded(t *testing.T) {
	// A client that never reaches a broker: released records stay in its
	// buffer; nothing here needs them sent.
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p := newTaskProducer(cl, "txn", "g", "tasks", "cps", 0, "s1-0")
	p.maxHeld = 10 * (100 + 64)
	w := p.NewWriter("op")
	rec := &engine.KafkaRecord{Topic: "out", Value: make([]byte, 100)}
	if err := w.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := w.Produce(rec); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- w.Produce(rec) }()
	waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.waiting == 1 })
	select {
	case err := <-done:
		t.Fatalf("the 11th record past the bound was taken (err %v)", err)
	default:
	}
	p.abandon(1) // the checkpoint was abandoned: the held records go out, room is made
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	held := len(w.(*txnWriter).held)
	p.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d records held after the release, want 0 (no barrier since)", held)
	}
	// Holding again, full: a stopping task wakes the waiting writer.
	if err := w.PreCommit(2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := w.Produce(rec); err != nil {
			t.Fatal(err)
		}
	}
	go func() { done <- w.Produce(rec) }()
	waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.waiting == 1 })
	p.shut()
	if err := <-done; err == nil {
		t.Fatal("a writer woken by the task's stop took the record")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
		time.Sleep(time.Millisecond)
	}
}
