package weir_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// TestSavepointRenamedOrCopiedRestores: a savepoint directory copied to
// another name elsewhere, or renamed where it is, restores the job
// exactly (the records the first run did not emit, each once); a
// directory that holds no savepoint fails the start, saying so.
func TestSavepointRenamedOrCopiedRestores(t *testing.T) {
	const count = 600
	path, first := stopGen(t, count, 2, 50, t.TempDir())
	want := seqInts(0, count)

	copied := filepath.Join(t.TempDir(), "release 1.4 backup")
	copyDir(t, path, copied)
	checkExactlyOnce(t, "restored from a copy", first, resumeGen(t, copied, count, 3), want)

	renamed := filepath.Join(filepath.Dir(path), "before-upgrade")
	if err := os.Rename(path, renamed); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, "restored from the renamed directory", first, resumeGen(t, renamed, count, 1), want)
	cp, err := weir.ReadSavepoint(t.Context(), renamed)
	if err != nil {
		t.Fatalf("ReadSavepoint of the renamed directory: %v", err)
	}
	if len(cp.Operators["gen"]) != 2 {
		t.Fatalf("ReadSavepoint of the renamed directory: %d snapshots of operator gen, want 2", len(cp.Operators["gen"]))
	}

	for name, setup := range map[string]func(dir string){
		"empty": func(string) {},
		"other files": func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "op-gen.0.op"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := filepath.Join(t.TempDir(), "nothing")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		setup(dir)
		env := weir.NewEnvironment(weir.WithParallelism(2), weir.RestoreFromSavepoint(dir))
		env.EnableCheckpointing(time.Hour)
		genJob(env, count, 0, 2, newGenSink())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := env.Execute(ctx, "no-savepoint")
		cancel()
		if err == nil || !strings.Contains(err.Error(), "holds no savepoint or checkpoint") || !strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: restoring from a directory without a savepoint: %v", name, err)
		}
	}
}
