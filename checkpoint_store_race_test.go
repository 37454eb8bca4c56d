package weir

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint/durable"
	"github.com/weirstream/weir/internal/checkpoint/store"
)

// retiringStore is a store.Store whose Latest, the first time, lets a
// newer checkpoint be committed and the one it returns be retired before
// the caller reads its files: what a job's retention does beside a reader.
type retiringStore struct {
	store.Store
	retire func() // commits the newer checkpoint and retains one
	done   bool
}

func (s *retiringStore) Latest(ctx context.Context) (*store.Manifest, error) {
	m, err := s.Store.Latest(ctx)
	if err == nil && !s.done {
		s.done = true
		s.retire()
	}
	return m, err
}

func testSnapshot(id int64) *Checkpoint {
	return &Checkpoint{ID: id, Operators: map[string][]OperatorSnapshot{
		"op": {{UID: "op", Kind: "Map", Name: "m", State: []byte{byte(id)}}},
	}}
}

// TestLatestWhileRetentionDeletes: a checkpoint retired while Latest reads
// it makes Latest return the newer one, not a "missing file" error (the
// race TestAsyncRestoreInFlight once hit); one damaged after the store
// verified it falls back to the one before.
func TestLatestWhileRetentionDeletes(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	local, err := store.NewLocal(root, store.WithCreateDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := &durableStore{d: durable.FromStore(local, "")}
	if err := plain.Save(ctx, testSnapshot(1)); err != nil {
		t.Fatal(err)
	}
	rs := &retiringStore{Store: local}
	rs.retire = func() {
		if err := plain.Save(ctx, testSnapshot(2)); err != nil {
			t.Fatal(err)
		}
		if err := plain.Retain(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := (&durableStore{d: durable.FromStore(rs, "")}).Latest(ctx)
	if err != nil {
		t.Fatalf("Latest beside a retention: %v", err)
	}
	if cp.ID != 2 || string(cp.Operators["op"][0].State) != "\x02" {
		t.Fatalf("Latest = checkpoint %d with state %q, want 2", cp.ID, cp.Operators["op"][0].State)
	}

	// A file removed from the latest checkpoint after the store verified
	// it: the read falls back to the older one, as the store does for a
	// checkpoint damaged before the read.
	if err := plain.Save(ctx, testSnapshot(3)); err != nil {
		t.Fatal(err)
	}
	rs = &retiringStore{Store: local, retire: func() {
		m, err := local.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for name := range m.Files {
			if err := os.Remove(filepath.Join(root, "chk-3", name)); err != nil {
				t.Fatal(err)
			}
		}
	}}
	cp, err = (&durableStore{d: durable.FromStore(rs, "")}).Latest(ctx)
	if err != nil || cp.ID != 2 {
		t.Fatalf("Latest of a checkpoint damaged after verification: %v, %v, want checkpoint 2", cp, err)
	}
}
