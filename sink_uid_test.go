package weir_test

import (
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// TestSinkUIDNamesItsCheckpointState: an exactly-once sink's pending
// transactions are stored under the UID it was given.
func TestSinkUIDNamesItsCheckpointState(t *testing.T) {
	st := weir.NewMemoryCheckpointStore()
	env := weir.NewEnvironment(weir.WithParallelism(1))
	env.EnableCheckpointing(time.Millisecond, weir.CheckpointStoreIn(st))
	// Held in the middle until a checkpoint has completed.
	src := heldGenerate(env, 20000, func(i int64) int64 { return i }, newCkGate(st, nil))
	file.Sink(src, t.TempDir(), func(v int64) []byte { return []byte{byte('0' + v%10)} }).UID("files")
	if err := env.Execute(t.Context(), "uid"); err != nil {
		t.Fatal(err)
	}
	cp, err := st.Latest(t.Context())
	if err != nil || cp == nil {
		t.Fatalf("no checkpoint (err %v)", err)
	}
	if _, ok := cp.Operators["files"]; !ok {
		ids := make([]string, 0, len(cp.Operators))
		for id := range cp.Operators {
			ids = append(ids, id)
		}
		t.Fatalf("checkpoint %d has no state under the sink's UID %q; operators: %v", cp.ID, "files", ids)
	}
}
