package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/jobtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sorted(v []string) []string {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

func TestReadTextFileLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	long := strings.Repeat("x", 100_000) // longer than bufio's default 64 KiB token
	if err := os.WriteFile(path, []byte("first\nsecond\n\n"+long+"\nlast without newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(file.ReadTextFile(env, path))
	jobtest.MustRun(t, env)
	got := res.Records()
	want := []string{"first", "second", "", long, "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Value != want[i] || r.TS != weir.NoTimestamp {
			t.Fatalf("line %d: %.20q@%d, want %.20q without timestamp", i, r.Value, r.TS, want[i])
		}
	}
}

func TestReadTextFileGlob(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		content := fmt.Sprintf("f%d-1\nf%d-2\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "other.log"), []byte("not me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnvironment(weir.WithParallelism(2))
	res := weir.Collect(file.ReadTextFile(env, filepath.Join(dir, "part-*.txt")))
	jobtest.MustRun(t, env)
	want := []string{"f0-1", "f0-2", "f1-1", "f1-2", "f2-1", "f2-2"}
	if got := sorted(res.Values()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestReadTextFileMissingFailsJob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-file.txt")
	env := weir.NewEnvironment(weir.WithParallelism(1), jobtest.Quiet())
	weir.Collect(file.ReadTextFile(env, path))
	err := jobtest.Run(t, env)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want an error naming %s", err, path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v does not wrap os.ErrNotExist", err)
	}
}

// writeFiles writes name -> content under dir, making directories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadTextFileDirectory: a directory is every file in it, hidden
// names ("." and "_" first, as a file sink's in-progress files) skipped;
// subdirectories only with Recursive; a glob may match directories.
func TestReadTextFileDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.txt": "a1\na2\n", "b.log": "b1\n", ".inprogress-x": "hidden\n", "_SUCCESS": "hidden\n",
		"sub/c.txt": "c1\n", "sub/deeper/d.txt": "d1\n", ".hidden/e.txt": "hidden\n",
	})
	for _, c := range []struct {
		name string
		path string
		opts []file.Option
		want []string
	}{
		{"directory", dir, nil, []string{"a1", "a2", "b1"}},
		{"recursive", dir, []file.Option{file.Recursive()}, []string{"a1", "a2", "b1", "c1", "d1"}},
		{"glob of directories", filepath.Join(dir, "su*"), nil, []string{"c1"}},
		{"glob of directories, recursive", filepath.Join(dir, "su*"), []file.Option{file.Recursive()}, []string{"c1", "d1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := weir.NewEnvironment(weir.WithParallelism(2))
			res := weir.Collect(file.ReadTextFile(env, c.path, c.opts...))
			jobtest.MustRun(t, env)
			if got := sorted(res.Values()); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestReadTextFileEmptyGlob: a pattern that matches nothing fails the job
// when it is built, saying so.
func TestReadTextFileEmptyGlob(t *testing.T) {
	pattern := filepath.Join(t.TempDir(), "*.csv")
	env := weir.NewEnvironment(weir.WithParallelism(1))
	weir.Collect(file.ReadTextFile(env, pattern))
	err := jobtest.Run(t, env)
	if err == nil || !strings.Contains(err.Error(), "no file matches the pattern") || !strings.Contains(err.Error(), pattern) || !strings.Contains(err.Error(), "invalid job") {
		t.Fatalf("got %v, want a build error saying the pattern %s matches no file", err, pattern)
	}
}

// TestFileSinkExactlyOnce: the part files of connector/file's sink hold
// every record once after a bounded job, and a directory read of them
// skips nothing but the hidden files.
func TestFileSinkExactlyOnce(t *testing.T) {
	out := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(5 * time.Millisecond)
	in := weir.Generate(env, 500, 0, func(i int64) string { return fmt.Sprint(i) }, weir.NoWatermarks[string]())
	file.Sink(in, out, func(s string) []byte { return []byte(s) }).UID("files")
	jobtest.MustRun(t, env)
	got, err := file.ReadCommittedLines(out)
	if err != nil {
		t.Fatal(err)
	}
	env = weir.NewEnvironment(weir.WithParallelism(2))
	back := weir.Collect(file.ReadTextFile(env, out))
	jobtest.MustRun(t, env)
	var want []string
	for i := range 500 {
		want = append(want, fmt.Sprint(i))
	}
	if !slices.Equal(sorted(got), sorted(want)) || !slices.Equal(sorted(back.Values()), sorted(want)) {
		t.Fatalf("committed %d lines, read back %d, want %d", len(got), back.Len(), len(want))
	}
}

func TestFileSinkNilFormat(t *testing.T) {
	env := weir.NewEnvironment(weir.WithParallelism(1))
	file.Sink[string](weir.FromSlice(env, []string{"a"}), t.TempDir(), nil)
	if err := env.Execute(context.Background(), "nil"); err == nil || !strings.Contains(err.Error(), "format function is nil") {
		t.Fatalf("got %v", err)
	}
}

// TestFileSinkBuckets writes records into bucket directories through a
// failure and a restart: every record is committed exactly once, in its
// bucket; a bucket outside the directory fails the job, naming it.
func TestFileSinkBuckets(t *testing.T) {
	dir := t.TempDir()
	const n = 20000
	store := weir.NewMemoryCheckpointStore()
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(64), jobtest.Quiet(),
		weir.WithRestartStrategy(weir.FixedDelayRestart(2, time.Millisecond)))
	env.EnableCheckpointing(2*time.Millisecond, weir.CheckpointStoreIn(store))
	var seen, failed atomic.Int64
	fail := func(v int64) int64 {
		// Once, after half the records and a completed checkpoint: the
		// restart restores it and the sink's pending transactions.
		if seen.Add(1) > n/2 && failed.Load() == 0 {
			if latest, _ := store.Latest(t.Context()); latest != nil {
				failed.Store(1)
				panic("fail after a checkpoint")
			}
		}
		return v
	}
	m := weir.Map(weir.Generate(env, n, 0, func(i int64) int64 { return i }, weir.NoWatermarks[int64]()), fail)
	bucket := func(v int64, _ int64) string { return fmt.Sprintf("mod=%d/half=%d", v%3, v*2/n) }
	file.Sink(weir.Rebalance(m), dir, func(v int64) []byte { return []byte(strconv.FormatInt(v, 10)) },
		file.Buckets(bucket)).UID("buckets")
	jobtest.MustRun(t, env)
	if failed.Load() == 0 {
		t.Fatal("no checkpoint completed before the end of the input; the restart was not tested")
	}
	count := make([]int, n)
	all, err := file.ReadCommittedLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		v, _ := strconv.Atoi(l)
		count[v]++
	}
	for v, c := range count {
		if c != 1 {
			t.Fatalf("record %d committed %d times", v, c)
		}
	}
	inBuckets := 0
	for b := range 3 {
		for h := range 2 {
			lines, err := file.ReadCommittedLines(filepath.Join(dir, fmt.Sprintf("mod=%d/half=%d", b, h)))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				if v, _ := strconv.Atoi(l); v%3 != b || v*2/n != h {
					t.Fatalf("record %d in bucket mod=%d/half=%d", v, b, h)
				}
			}
			inBuckets += len(lines)
		}
	}
	if inBuckets != n {
		t.Fatalf("%d records in the six buckets, want %d", inBuckets, n)
	}

	env = weir.NewEnvironment(weir.WithParallelism(1), jobtest.Quiet())
	file.Sink(weir.FromSlice(env, []int{1}), t.TempDir(), func(int) []byte { return nil },
		file.Buckets(func(int, int64) string { return "../escape" }))
	if err := jobtest.Run(t, env); err == nil || !strings.Contains(err.Error(), `bucket "../escape"`) {
		t.Fatalf("a bucket outside the directory: %v", err)
	}
}
