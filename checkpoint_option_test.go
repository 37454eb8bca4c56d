package weir_test

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// TestWithCheckpointing: the option takes checkpoints as EnableCheckpointing
// does, and its invalid settings fail the job before it runs.
func TestWithCheckpointing(t *testing.T) {
	store := weir.NewMemoryCheckpointStore()
	env := weir.NewEnvironment(weir.WithParallelism(2), metaQuiet,
		weir.WithCheckpointing(5*time.Millisecond, weir.CheckpointStoreIn(store)))
	col := weir.Collect(weir.Map(weir.FromSlice(env, []int{1, 2, 3, 4}), func(v int) int { return v * 2 }))
	if err := env.Execute(t.Context(), "with-checkpointing"); err != nil {
		t.Fatal(err)
	}
	if got := len(col.Values()); got != 4 {
		t.Fatalf("%d records, want 4", got)
	}
	// A bounded job with checkpointing ends with a final checkpoint.
	if cp, err := store.Latest(t.Context()); err != nil || cp == nil {
		t.Fatalf("no checkpoint stored (%v)", err)
	}

	env = weir.NewEnvironment(metaQuiet, weir.WithCheckpointing(0))
	weir.Discard(weir.FromSlice(env, []int{1}))
	if err := env.Execute(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), "checkpoint interval must be positive") {
		t.Fatalf("WithCheckpointing(0): err %v, want the interval named", err)
	}
}
