package broadcaststate

import (
	"bytes"
	"encoding/gob"
	"errors"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/state"
)

type (
	ruleV1          struct{ Limit, Weight int64 }
	ruleV1Reordered struct {
		Weight int64
		Note   string
		Limit  int64
	}
	ruleV1Retyped struct{ Limit, Weight uint64 }
)

// TestBroadcastStateSchemas: a broadcast state's snapshot records its
// map's gob schema; a restore reads reordered and added fields by name,
// refuses a changed field type when the operator is built (before the
// job runs), and accepts snapshots without schemas as before.
func TestBroadcastStateSchemas(t *testing.T) {
	d1 := state.Map[string, ruleV1]("rules")
	st, err := New(map[string]reflect.Type{"rules": MapType(d1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Of(st, d1)
	if err != nil {
		t.Fatal(err)
	}
	m.Put("a", ruleV1{10, 2})
	m.Put("b", ruleV1{20, 3})
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	restore := func(d state.Named, data []byte) (*Store, error) {
		return New(map[string]reflect.Type{"rules": MapType(d)}, &engine.Restored{State: data})
	}

	d2 := state.Map[string, ruleV1Reordered]("rules")
	st2, err := restore(d2, snap.State)
	if err != nil {
		t.Fatalf("fields reordered and added: %v", err)
	}
	m2, err := Of(st2, d2)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.Get("b"); got != (ruleV1Reordered{Weight: 3, Limit: 20}) {
		t.Fatalf("restored %+v", got)
	}

	_, err = restore(state.Map[string, ruleV1Retyped]("rules"), snap.State)
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || ie.State != "rules" || ie.What != "broadcast state" || ie.Field == "" {
		t.Fatalf("field retyped: got %v, want an IncompatibleError naming the state and field", err)
	}
	if _, err = restore(state.Map[int64, ruleV1]("rules"), snap.State); !errors.Is(err, state.ErrIncompatible) {
		t.Fatalf("key type changed: got %v, want ErrIncompatible", err)
	}

	// A snapshot written before schemas were recorded restores as before.
	old, err := (&Store{maps: map[string]any{"rules": m}}).snapshotWithoutSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restore(d2, old); err != nil {
		t.Fatalf("a snapshot without schemas: %v", err)
	}
}

// snapshotWithoutSchemas writes s as broadcast snapshots were written
// before schemas were recorded.
func (s *Store) snapshotWithoutSchemas() ([]byte, error) {
	snap, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	all := map[string][]byte{}
	if err := gob.NewDecoder(bytes.NewReader(snap.State)).Decode(&all); err != nil {
		return nil, err
	}
	delete(all, schemasEntry)
	var buf bytes.Buffer
	err = gob.NewEncoder(&buf).Encode(all)
	return buf.Bytes(), err
}
