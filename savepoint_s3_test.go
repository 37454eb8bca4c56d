package weir_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3test"
	s3storage "github.com/weirstream/weir/storage/s3"
)

// s3Server returns the test command's S3 server, the storage that reaches
// it and an s3:// location of its own for the test.
func s3Server(t *testing.T) (*s3test.Server, weir.Storage, string) {
	t.Helper()
	srv := s3test.Require(t)
	o := s3StorageAt(t, srv, srv.Endpoint)
	return srv, o, "s3://" + srv.Bucket + "/" + srv.Prefix()
}

// s3StorageAt returns the storage that reaches srv at endpoint (the
// server's or its fault proxy's).
func s3StorageAt(t *testing.T, srv *s3test.Server, endpoint string) weir.Storage {
	return s3storage.New(s3storage.Options{
		Endpoint: endpoint, Region: srv.Region, Transport: s3test.Transport(t),
		Credentials: s3storage.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
	})
}

// TestSavepointsInS3 takes savepoints of a running job into the S3 server:
// one to an explicit s3:// target while the job runs, then
// stop-with-savepoint to the DefaultSavepointDir; reads them back with
// ReadSavepoint, by their own path and by their root; and restores the job
// from the second at parallelism 3 (it was taken at 1): the output equals
// an uninterrupted run.
func TestSavepointsInS3(t *testing.T) {
	const n = 3000
	ref := t.TempDir()
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithBufferSize(16))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, filepath.Join(ref, "s"), filepath.Join(ref, "j"), "sums")
	if err := env.Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committed(t, filepath.Join(ref, "s"), filepath.Join(ref, "j"))

	srv, s3, root := s3Server(t)
	dir := t.TempDir()
	sums, joins := filepath.Join(dir, "s"), filepath.Join(dir, "j")
	env = weir.NewEnvironment(weir.WithParallelism(1), weir.WithBufferSize(16), weir.WithStorage(s3))
	env.EnableCheckpointing(time.Hour, weir.DefaultSavepointDir(root+"/savepoints"))
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
		{"gs://ckpt/sp", `no storage for scheme gs://: add weir.WithStorage`},
		{"s3:///sp", "names no bucket"},
		{"s3://no-such-bucket-weir/sp", "NoSuchBucket"},
	} {
		if _, err := h.TriggerSavepoint(t.Context(), c.target); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("savepoint to %s: err %v, want one saying %q", c.target, err, c.want)
		}
	}
	adhoc, err := h.TriggerSavepoint(t.Context(), root+"/adhoc/")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(adhoc, root+"/adhoc/savepoint-") {
		t.Fatalf("savepoint path %q", adhoc)
	}
	path, err := h.StopWithSavepoint(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(); !errors.Is(err, weir.ErrStopped) {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, root+"/savepoints/savepoint-") {
		t.Fatalf("stop-with-savepoint path %q, want one in the DefaultSavepointDir", path)
	}
	key := strings.TrimPrefix(path, "s3://"+srv.Bucket+"/") + "/_manifest.json"
	if _, ok := srv.Get(key); !ok {
		t.Fatalf("no object %s in the bucket", key)
	}

	sp, err := weir.ReadSavepoint(t.Context(), path, weir.ReadWithStorage(s3))
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Operators["sums"]) != 1 || len(sp.Operators["sums"][0].KeyGroups) == 0 {
		t.Fatalf("savepoint %d: operator sums has %d subtasks, want 1 with keyed state", sp.ID, len(sp.Operators["sums"]))
	}
	if r, err := weir.ReadSavepoint(t.Context(), root+"/savepoints", weir.ReadWithStorage(s3)); err != nil || r.ID != sp.ID {
		t.Fatalf("the root stands for savepoint %v (err %v), want %d", r, err, sp.ID)
	}
	if first, err := weir.ReadSavepoint(t.Context(), adhoc, weir.ReadWithStorage(s3)); err != nil || first.ID >= sp.ID {
		t.Fatalf("the savepoint at %s: %v (err %v)", adhoc, first, err)
	}
	if _, err := weir.ReadSavepoint(t.Context(), root+"/nothing", weir.ReadWithStorage(s3)); err == nil || !strings.Contains(err.Error(), "no savepoint or checkpoint") {
		t.Fatalf("reading an empty prefix: err %v", err)
	}

	env = weir.NewEnvironment(weir.WithParallelism(3), weir.WithBufferSize(16), weir.WithStorage(s3), weir.RestoreFromSavepoint(path))
	rescaleJob(env, &gatedSource{n: n, limit: n, reached: make(chan struct{})}, sums, joins, "sums")
	if err := env.Execute(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, sums, joins); !slices.Equal(got, want) {
		missing, extra := diffLines(want, got)
		t.Fatalf("restored from %s at parallelism 3: %d lines, want %d; missing %v, extra %v", path, len(got), len(want), head(missing), head(extra))
	}
}
