package weir_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store/s3fake"
)

func s3Options(f *s3fake.Server) weir.S3Options {
	return weir.S3Options{
		Endpoint: f.URL(), Region: f.Region, Client: f.Client(),
		Credentials: weir.S3Credentials{AccessKeyID: f.AccessKeyID, SecretAccessKey: f.SecretAccessKey},
	}
}

// TestSavepointsInS3 takes savepoints of a running job into an
// S3-compatible store (the fake): one to an explicit s3:// target while the
// job runs, then stop-with-savepoint to the DefaultSavepointDir; reads them
// back with ReadSavepoint, by their own path and by their root; and
// restores the job from the second at parallelism 3 (it was taken at 1):
// the output equals an uninterrupted run.
func TestSavepointsInS3(t *testing.T) {
	const n = 3000
	ref := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(16))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, filepath.Join(ref, "s"), filepath.Join(ref, "j"), "sums")
	if err := env.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committed(t, filepath.Join(ref, "s"), filepath.Join(ref, "j"))

	f := s3fake.New(t)
	s3 := s3Options(f)
	dir := t.TempDir()
	sums, joins := filepath.Join(dir, "s"), filepath.Join(dir, "j")
	env = weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(16), weir.WithS3(s3))
	env.EnableCheckpointing(time.Hour, weir.DefaultSavepointDir("s3://ckpt/savepoints"))
	src := &gatedSource{n: n, limit: n / 2, reached: make(chan struct{})}
	rescaleJob(env, src, sums, joins, "sums")
	h, err := env.ExecuteAsync(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-src.reached:
	case <-h.Done():
		t.Fatalf("the first run ended early: %v", h.Wait())
	}
	for _, c := range []struct{ target, want string }{
		{"gs://ckpt/sp", `scheme "gs" is not supported`},
		{"s3:///sp", "names no bucket"},
		{"s3://other/sp", "NoSuchBucket"},
	} {
		if _, err := h.TriggerSavepoint(t.Context(), c.target); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("savepoint to %s: err %v, want one saying %q", c.target, err, c.want)
		}
	}
	adhoc, err := h.TriggerSavepoint(t.Context(), "s3://ckpt/adhoc/")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(adhoc, "s3://ckpt/adhoc/savepoint-") {
		t.Fatalf("savepoint path %q", adhoc)
	}
	path, err := h.StopWithSavepoint(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, "s3://ckpt/savepoints/savepoint-") {
		t.Fatalf("stop-with-savepoint path %q, want one in the DefaultSavepointDir", path)
	}
	key := strings.TrimPrefix(path, "s3://ckpt/") + "/_manifest.json"
	if !slices.Contains(f.Keys(), key) {
		t.Fatalf("no object %s in the bucket: %v", key, f.Keys())
	}

	sp, err := weir.ReadSavepoint(t.Context(), path, weir.ReadWithS3(s3))
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Operators["sums"]) != 1 || len(sp.Operators["sums"][0].KeyGroups) == 0 {
		t.Fatalf("savepoint %d: operator sums has %d subtasks, want 1 with keyed state", sp.ID, len(sp.Operators["sums"]))
	}
	if root, err := weir.ReadSavepoint(t.Context(), "s3://ckpt/savepoints", weir.ReadWithS3(s3)); err != nil || root.ID != sp.ID {
		t.Fatalf("the root stands for savepoint %v (err %v), want %d", root, err, sp.ID)
	}
	if first, err := weir.ReadSavepoint(t.Context(), adhoc, weir.ReadWithS3(s3)); err != nil || first.ID >= sp.ID {
		t.Fatalf("the savepoint at %s: %v (err %v)", adhoc, first, err)
	}
	if _, err := weir.ReadSavepoint(t.Context(), path); err == nil || !strings.Contains(err.Error(), "WithS3") {
		t.Fatalf("reading an s3:// path without ReadWithS3: err %v", err)
	}
	if _, err := weir.ReadSavepoint(t.Context(), "s3://ckpt/nothing", weir.ReadWithS3(s3)); err == nil || !strings.Contains(err.Error(), "no savepoint or checkpoint") {
		t.Fatalf("reading an empty prefix: err %v", err)
	}

	env = weir.NewEnvironment(weir.WithParallelism(3), weir.WithBufferSize(16), weir.WithS3(s3), weir.RestoreFromSavepoint(path))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, sums, joins, "sums")
	if err := env.Execute(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, sums, joins); !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("restored from %s at parallelism 3: %d lines, want %d; missing %v, extra %v", path, len(got), len(want), head(missing), head(extra))
	}
}
