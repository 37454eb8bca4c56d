package weir_test

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/s3test"
	"github.com/weirstream/weir/state/pebble"
)

// s3StoragesFor returns the storage that reaches the test command's S3
// server if location is an s3:// one (none otherwise).
func s3StoragesFor(t *testing.T, location string) []weir.Storage {
	t.Helper()
	if !strings.HasPrefix(location, "s3://") {
		return nil
	}
	_, o, _ := s3Server(t)
	return []weir.Storage{o}
}

// storeRemotes is s3StoragesFor for the store package.
func storeRemotes(t *testing.T, loc store.Location) store.Remotes {
	t.Helper()
	if !loc.IsRemote() {
		return nil
	}
	_, o, _ := s3Server(t)
	r, err := hooks.Remotes([]weir.Storage{o}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkpointStoreAt opens the checkpoint store at location: a local
// directory, or an s3:// location on the test command's S3 server.
func checkpointStoreAt(t *testing.T, location string) weir.CheckpointStore {
	t.Helper()
	st, err := weir.NewCheckpointStore(location, s3StoragesFor(t, location)...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestIncrementalCheckpointsInS3 is TestIncrementalCheckpointsEndToEnd's
// scale-up case with the checkpoints in the S3 server: the Pebble SST
// files go to shared/ (streamed from the staged files), a failure
// restores from the bucket at another parallelism, and retention keeps
// exactly the shared objects the retained checkpoints reference.
func TestIncrementalCheckpointsInS3(t *testing.T) {
	const n, keys = 60000, 50
	ref := t.TempDir()
	if err := incrementalJob(t, 2, t.TempDir(), t.TempDir(), ref, n, keys, 1, nil, nil).Execute(t.Context(), "reference"); err != nil {
		t.Fatal(err)
	}
	want := committedSorted(t, ref)
	srv, _, cps := s3Server(t)
	prefix := strings.TrimPrefix(cps, "s3://"+srv.Bucket+"/")
	incrementalFailover(t, cps, 2, 3, n, keys, want, func() []string {
		var names []string
		for _, k := range srv.Keys(prefix + "/shared/") {
			names = append(names, strings.TrimPrefix(k, prefix+"/shared/"))
		}
		if len(names) == 0 {
			t.Fatal("no shared files in the bucket")
		}
		return names
	})
}

// TestCheckpointStorage: CheckpointStorage takes a location, as Flink's
// checkpoint storage: a job checkpoints into s3://..., a second process
// resumes from it with RestoreFromLatest, and a file:// location is a
// local directory. A location the job cannot use fails it before
// anything runs.
func TestCheckpointStorage(t *testing.T) {
	_, s3, root := s3Server(t)
	for _, loc := range []string{root + "/checkpoints", "file://" + filepath.ToSlash(t.TempDir())} {
		t.Run(strings.SplitN(loc, ":", 2)[0], func(t *testing.T) {
			run := func(limit int64) (*weir.Collected[string], error) {
				env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithStorage(s3))
				env.EnableCheckpointing(10*time.Millisecond, weir.CheckpointStorage(loc), weir.RestoreFromLatest())
				src := &numbers{n: fixtureN, limit: limit, reached: make(chan struct{})}
				out := fixtureJob(env, src)
				h, err := env.ExecuteAsync(t.Context(), "storage")
				if err != nil {
					return nil, err
				}
				if limit < fixtureN {
					// Held at the gate: stop once a checkpoint started
					// after it has completed.
					<-src.reached
					waitForCheckpoints(t, h, loc, 2)
					h.Cancel()
				}
				return out, h.Wait()
			}
			if _, err := run(fixtureN / 2); err != nil {
				t.Logf("first run: %v", err)
			}
			out, err := run(fixtureN)
			if err != nil {
				t.Fatal(err)
			}
			if got := collectedSorted(out); !slices.Equal(got, fixtureWant(fixtureN)) {
				t.Fatalf("resumed from %s: %v, want %v", loc, got, fixtureWant(fixtureN))
			}
		})
	}
	for _, c := range []struct{ loc, want string }{
		{"gs://bucket/x", `no storage for scheme gs://: add weir.WithStorage`},
		{"s3:///x", "names no bucket"},
		{"file://host/x", "not host"},
	} {
		env := weir.NewEnvironment()
		env.EnableCheckpointing(time.Second, weir.CheckpointStorage(c.loc))
		weir.Discard(weir.FromSlice(env, []int{1}))
		if err := env.Execute(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkpoint storage %q: %v, want an error saying %q", c.loc, err, c.want)
		}
	}
	env := weir.NewEnvironment()
	env.EnableCheckpointing(time.Second, weir.CheckpointStorage(t.TempDir()), weir.CheckpointStoreIn(weir.NewMemoryCheckpointStore()))
	weir.Discard(weir.FromSlice(env, []int{1}))
	if err := env.Execute(t.Context(), "both"); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("CheckpointStorage and CheckpointStoreIn: %v", err)
	}
}

// waitForCheckpoints waits until the store at loc holds a checkpoint n
// ids past the newest it held when called: with one checkpoint in flight
// at a time, that one was triggered after the call.
func waitForCheckpoints(t *testing.T, h *weir.JobHandle, loc string, n int64) {
	t.Helper()
	st := openStore(t, loc, nil)
	last := func() int64 {
		es, err := st.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return 0
		}
		return es[len(es)-1].ID
	}
	start := last()
	for last() < start+n {
		select {
		case <-h.Done():
			t.Fatalf("the job ended before %d more checkpoints: %v", n, h.Wait())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestOldFormatRestores restores the job of testdata/oldformat from the
// checkpoints and savepoints that the store code before minio-go wrote:
// from a copy of the directory store (a path and a file:// URL), and from
// the objects its S3 client stored, put byte for byte into the S3 server.
// Each restore at a fresh parallelism must emit the sums of the first
// half (the source stopped there) when the source ends at once, and of
// the whole range when it goes on: so both the state and the source's
// position came back.
func TestOldFormatRestores(t *testing.T) {
	// Each restore from the latest checkpoint gets a fresh copy of the
	// fixture: the restored job, bounded, ends with a final checkpoint
	// (FLIP-147) in the same store, which the next run would restore.
	freshDir := func() string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS("testdata/oldformat/dir")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := freshDir()
	srv, s3, root := s3Server(t)
	copies := 0
	freshS3 := func() string {
		copies++
		prefix := strings.TrimPrefix(root, "s3://"+srv.Bucket+"/") + fmt.Sprintf("/jobs/fixture-%d", copies)
		objects := os.DirFS("testdata/oldformat/s3/jobs/fixture")
		if err := fs.WalkDir(objects, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(objects, p)
			if err == nil {
				srv.Put(prefix+"/"+p, data)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return "s3://" + srv.Bucket + "/" + prefix
	}
	s3root := freshS3()

	for _, c := range []struct {
		name    string
		opts    func() []weir.Option // how the job restores
		storage func() string        // checkpoint storage, for RestoreFromLatest
	}{
		{"dir-checkpoint", nil, freshDir},
		{"file-url-savepoint", func() []weir.Option {
			return []weir.Option{weir.RestoreFromSavepoint("file://" + filepath.ToSlash(dir) + "/savepoint-6")}
		}, nil},
		{"dir-root-savepoint", func() []weir.Option { return []weir.Option{weir.RestoreFromSavepoint(dir)} }, nil},
		{"s3-checkpoint", nil, freshS3},
		{"s3-savepoint", func() []weir.Option { return []weir.Option{weir.RestoreFromSavepoint(s3root + "/savepoint-12")} }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, run := range []struct {
				n    int64
				want []string
			}{{fixtureN / 2, fixtureWant(fixtureN / 2)}, {fixtureN, fixtureWant(fixtureN)}} {
				for _, backend := range []string{"heap", "pebble"} {
					opts := []weir.Option{weir.WithParallelism(3), weir.WithStorage(s3)}
					if backend == "pebble" {
						opts = append(opts, weir.WithStateBackend(pebble.New(t.TempDir())))
					}
					if c.opts != nil {
						opts = append(opts, c.opts()...)
					}
					env := weir.NewEnvironment(opts...)
					if c.storage != nil {
						env.EnableCheckpointing(time.Hour, weir.CheckpointStorage(c.storage()), weir.RestoreFromLatest(), weir.RetainCheckpoints(100))
					} else {
						env.EnableCheckpointing(time.Hour)
					}
					out := fixtureJob(env, &numbers{n: run.n, limit: run.n, reached: make(chan struct{})})
					err := env.Execute(t.Context(), "restored")
					if c.storage != nil && backend == "heap" {
						// The fixture's checkpoints are Pebble's incremental
						// ones: since v0.2 only a disk backend reads them
						// (the heap backend would need Pebble to); its
						// savepoints restore on either backend.
						if err == nil || !strings.Contains(err.Error(), "which the heap state backend cannot read") {
							t.Fatalf("heap backend from an incremental Pebble checkpoint: got %v, want a refusal", err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					if got := collectedSorted(out); !slices.Equal(got, run.want) {
						t.Fatalf("%s backend, %d numbers: %v, want %v", backend, run.n, got, run.want)
					}
				}
			}
		})
	}
}

// TestCheckpointsThroughS3Faults runs a job checkpointing into the S3
// server through the fault-injecting proxy. While every upload fails, no
// checkpoint completes (each expires at the checkpoint timeout, which
// bounds the store's retries; the job tolerates it) and none looks
// complete; then 503s, a connection cut mid-upload and a slow answer are
// retried and a checkpoint completes; a new process restores from it
// and the output is exact.
func TestCheckpointsThroughS3Faults(t *testing.T) {
	srv, s3, _ := s3Server(t)
	proxy := srv.Proxy()
	s3 = s3StorageAt(t, srv, proxy.URL)
	prefix := srv.Prefix()
	loc := "s3://" + srv.Bucket + "/" + prefix
	isUpload := func(r *http.Request, key string) bool {
		return (r.Method == http.MethodPut || r.Method == http.MethodPost) && strings.Contains(key, "/chk-")
	}
	proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
		if isUpload(r, key) {
			return s3test.Fault{Status: http.StatusServiceUnavailable}
		}
		return s3test.Fault{}
	})
	env := weir.NewEnvironment(weir.WithParallelism(2), weir.WithStorage(s3), weir.WithLogger(slog.New(slog.DiscardHandler)))
	env.EnableCheckpointing(20*time.Millisecond, weir.CheckpointStorage(loc), weir.CheckpointTimeout(300*time.Millisecond),
		weir.TolerableCheckpointFailures(1000))
	src := &numbers{n: fixtureN, limit: fixtureN / 2, reached: make(chan struct{})}
	fixtureJob(env, src)
	h, err := env.ExecuteAsync(t.Context(), "faults")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cancel()
	<-src.reached
	// Wait until the uploads of two checkpoints have failed.
	for {
		failed := map[string]bool{}
		for _, e := range proxy.Events() {
			if e.Fault {
				failed[strings.SplitN(strings.TrimPrefix(e.Key, prefix+"/"), "/", 2)[0]] = true
			}
		}
		if len(failed) >= 2 {
			break
		}
		select {
		case <-h.Done():
			t.Fatalf("the job ended: %v", h.Wait())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if es, err := openStore(t, loc, nil).List(t.Context()); err != nil || len(es) != 0 {
		t.Fatalf("while every upload fails the store lists %v (err %v), want no checkpoint", es, err)
	}
	for _, k := range srv.Keys(prefix + "/") {
		if strings.HasSuffix(k, "/_manifest.json") {
			t.Fatalf("a manifest was stored while every upload failed: %s", k)
		}
	}
	seq := s3test.Sequence(isUpload,
		s3test.Fault{Status: http.StatusServiceUnavailable}, s3test.Fault{Status: http.StatusInternalServerError},
		s3test.Fault{CutRequest: 10}, s3test.Fault{Delay: 50 * time.Millisecond})
	var injected atomic.Int32
	proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
		f := seq(r, key)
		if f != (s3test.Fault{}) {
			injected.Add(1)
		}
		return f
	})
	waitForCheckpoints(t, h, loc, 1)
	h.Cancel()
	h.Wait()
	if n := injected.Load(); n != 4 {
		t.Fatalf("a checkpoint completed after %d of the 4 transient faults", n)
	}

	env = weir.NewEnvironment(weir.WithParallelism(3), weir.WithStorage(s3))
	env.EnableCheckpointing(time.Hour, weir.CheckpointStorage(loc), weir.RestoreFromLatest())
	out := fixtureJob(env, &numbers{n: fixtureN, limit: fixtureN, reached: make(chan struct{})})
	if err := env.Execute(t.Context(), "restored"); err != nil {
		t.Fatal(err)
	}
	if got := collectedSorted(out); !slices.Equal(got, fixtureWant(fixtureN)) {
		t.Fatalf("restored: %v, want %v", got, fixtureWant(fixtureN))
	}
}
