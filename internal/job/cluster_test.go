package job

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/engine"
)

// TestClusterStoreKeepsTheCommittedCheckpoint: a cluster task's stored
// checkpoints that are never committed (the owner died between storing
// and committing, was fenced by the task's next owner, or its commit
// failed) do not push the committed one out of the store, however many
// there are: the next owner restores the committed one. Once a later one
// is committed, the older ones go. (The store once kept the newest 3
// stored checkpoints at every Save, so after 3 uncommitted ones the task
// could never be restored again: it restarted forever without committing.)
func TestClusterStoreKeepsTheCommittedCheckpoint(t *testing.T) {
	ctx := context.Background()
	r := NewRunner()
	r.Cfg = Config{MaxParallelism: 128, Logger: slog.Default(),
		Remotes:    func() (store.Remotes, error) { return store.Remotes{}, nil },
		Checkpoint: &Checkpointing{Interval: time.Second, Retain: 1, Storage: t.TempDir()}}
	cs := r.ClusterStore("job")
	ack := func(id int64) []engine.TaskAck {
		return []engine.TaskAck{{ID: id, Ops: []engine.OperatorSnapshot{{UID: "op", State: []byte{byte(id)}}}}}
	}
	if err := cs.Save(ctx, "s1-0", 1, ack(1)); err != nil {
		t.Fatal(err)
	}
	if err := cs.Committed(ctx, "s1-0", 1); err != nil {
		t.Fatal(err)
	}
	for id := int64(2); id <= 7; id++ {
		if err := cs.Save(ctx, "s1-0", id, ack(id)); err != nil {
			t.Fatal(err)
		}
	}
	if last, err := cs.LastID(ctx, "s1-0"); err != nil || last != 7 {
		t.Fatalf("LastID = %d, %v; want 7", last, err)
	}
	got, err := cs.Load(ctx, "s1-0", 1)
	if err != nil {
		t.Fatalf("the committed checkpoint 1 after 6 uncommitted ones: %v", err)
	}
	if s := got["op"]; len(s) != 1 || len(s[0].State) != 1 || s[0].State[0] != 1 {
		t.Fatalf("checkpoint 1 holds %+v", got)
	}
	if err := cs.Committed(ctx, "s1-0", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Load(ctx, "s1-0", 7); err != nil {
		t.Fatalf("the committed checkpoint 7: %v", err)
	}
	for _, id := range []int64{1, 6} {
		if _, err := cs.Load(ctx, "s1-0", id); err == nil {
			t.Errorf("checkpoint %d is still there after 7 was committed (retain 1)", id)
		}
	}
}
