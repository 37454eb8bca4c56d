package weir_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// TestV01FileSourceStateRestores: Weir v0.1 ran the file source through
// an adapter, so its checkpoints and savepoints record the source's kind
// as "source runsrc.Source"; v0.2 names it after the connector's own type.
// State saved under the old kind is restored into the file source (its
// positions are the same), and a source of another kind still refuses it.
func TestV01FileSourceStateRestores(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		var b strings.Builder
		for j := range 50 {
			fmt.Fprintf(&b, "f%d-%d\n", i, j)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := weir.NewMemoryCheckpointStore()
	run := func(restore bool) ([]string, error) {
		env := weir.NewEnvironment(weir.WithParallelism(2), metaQuiet)
		opts := []weir.CheckpointOption{weir.CheckpointStoreIn(store)}
		if restore {
			opts = append(opts, weir.RestoreFromLatest())
		}
		env.EnableCheckpointing(5*time.Millisecond, opts...)
		col := weir.Collect(file.ReadTextFile(env, dir).UID("lines"))
		err := env.Execute(t.Context(), "v01-file")
		return col.Values(), err
	}
	got, err := run(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 {
		t.Fatalf("the first run read %d lines, want 150", len(got))
	}
	cp, err := store.Latest(t.Context())
	if err != nil || cp == nil {
		t.Fatalf("no checkpoint after the first run (%v)", err)
	}
	if subs := cp.Operators["lines"]; len(subs) == 0 || subs[0].Kind != "source file.textSource" {
		t.Fatalf("the file source's saved kind is not %q (the v0.1 mapping in internal/job/job.go must follow it): %+v", "source file.textSource", subs)
	}
	// setKind rewrites the kind in the latest checkpoint, which the next
	// run restores.
	setKind := func(kind string) {
		cp, err := store.Latest(t.Context())
		if err != nil || cp == nil {
			t.Fatalf("no checkpoint (%v)", err)
		}
		subs := cp.Operators["lines"]
		for i := range subs {
			subs[i].Kind = kind
		}
	}

	// As v0.1 recorded it: restored, so the finished source reads nothing.
	setKind("source runsrc.Source")
	got, err = run(true)
	if err != nil {
		t.Fatalf("state of a v0.1 file source refused: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("restored from its end, the file source read %d lines again", len(got))
	}

	// Another kind of source: refused before the job runs.
	setKind("source other.Source")
	if _, err = run(true); err == nil || !strings.Contains(err.Error(), "replaced by another kind of source") {
		t.Fatalf("state of another kind of source: err %v, want a refusal", err)
	}
}
