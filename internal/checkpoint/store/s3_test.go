package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/weirstream/weir/internal/s3test"
)

// The tests of the S3 store run against the S3-compatible server of the
// test command (internal/s3test), directly or through its fault-injecting
// proxy.

// s3Store returns an S3 store at endpoint (the server or a proxy in front
// of it) with the server's keys: a fresh instance, as after a restart.
// The library sends each request at most twice, and the store retries a
// transient failure for 300 ms at most, so that tests of failures end
// quickly.
func s3Store(t testing.TB, endpoint string, srv *s3test.Server, prefix string, opts ...Option) *S3 {
	t.Helper()
	return s3StoreWith(t, S3Config{Endpoint: endpoint}, srv, prefix, opts...)
}

func s3StoreWith(t testing.TB, cfg S3Config, srv *s3test.Server, prefix string, opts ...Option) *S3 {
	t.Helper()
	if cfg.Credentials == (Credentials{}) {
		cfg.Credentials = Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	}
	if cfg.Region == "" {
		cfg.Region = srv.Region
	}
	if cfg.Transport == nil {
		cfg.Transport = s3test.Transport(t)
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	if cfg.RetryFor == 0 {
		cfg.RetryFor = 300 * time.Millisecond
	}
	s, err := NewS3(cfg, srv.Bucket, prefix, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewS3Validation(t *testing.T) {
	for _, c := range []struct {
		cfg    S3Config
		bucket string
		opts   []Option
	}{
		{S3Config{Endpoint: "ftp://x"}, "b", nil},
		{S3Config{Endpoint: "http://"}, "b", nil},
		{S3Config{Endpoint: "http://x/path"}, "b", nil},
		{S3Config{Endpoint: "http://user@x"}, "b", nil},
		{S3Config{Endpoint: "http://x"}, "", nil},
		{S3Config{Endpoint: "http://x"}, "a/b", nil},
		{S3Config{Endpoint: "http://x", PartSize: 1 << 20}, "b", nil},
		{S3Config{Endpoint: "http://x"}, "b", []Option{WithFS(OSFS{})}},
		{S3Config{Endpoint: "http://x"}, "b", []Option{WithCreateDir()}},
	} {
		if _, err := NewS3(c.cfg, c.bucket, "p", c.opts...); err == nil {
			t.Errorf("NewS3(%+v, %q) succeeded", c.cfg, c.bucket)
		}
	}
	if _, err := NewS3(S3Config{Endpoint: "https://s3.example.com:9000/"}, "b", ""); err != nil {
		t.Fatal(err)
	}
	// The endpoint defaults to the environment's, as in the AWS SDKs.
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "ftp://bad")
	if _, err := NewS3(S3Config{}, "b", ""); err == nil || !strings.Contains(err.Error(), "ftp://bad") {
		t.Fatalf("NewS3 with AWS_ENDPOINT_URL=ftp://bad: %v", err)
	}
}

func TestS3WrongSecret(t *testing.T) {
	srv := s3test.Require(t)
	s := s3StoreWith(t, S3Config{Endpoint: srv.Endpoint, Credentials: Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "wrong"}}, srv, srv.Prefix())
	if _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") && !strings.Contains(err.Error(), "signature") {
		t.Fatalf("List with a wrong secret: %v", err)
	}
	if _, err := s.Begin(ctx, 1, Checkpoint); err == nil {
		t.Fatal("Begin with a wrong secret succeeded")
	}
}

// TestS3Layout checks the object keys, with a prefix that needs escaping.
func TestS3Layout(t *testing.T) {
	srv := s3test.Require(t)
	prefix := srv.Prefix() + "/jobs/my job/ü"
	s := s3Store(t, srv.Endpoint, srv, "/"+prefix+"/")
	_, files := writeCheckpoint(t, s, 7, Checkpoint)
	writeCheckpoint(t, s, 8, Savepoint)
	var want []string
	for name := range files {
		want = append(want, prefix+"/chk-7/"+name, prefix+"/savepoint-8/"+name)
	}
	want = append(want, prefix+"/chk-7/_manifest.json", prefix+"/savepoint-8/_manifest.json")
	slices.Sort(want)
	if got := srv.Keys(prefix + "/"); !slices.Equal(got, want) {
		t.Fatalf("keys:\n%q\nwant\n%q", got, want)
	}
	wantList(t, s, cp(7), sp(8))
	// The manifest object decodes like a local one.
	raw, _ := srv.Get(prefix + "/chk-7/_manifest.json")
	m, err := decodeManifest(raw, "test")
	if err != nil || m.ID != 7 {
		t.Fatalf("decoding the manifest object: %+v, %v", m, err)
	}
}

func TestS3PrefixIsolation(t *testing.T) {
	srv := s3test.Require(t)
	p := srv.Prefix()
	a, ab, root := s3Store(t, srv.Endpoint, srv, p+"/team/a"), s3Store(t, srv.Endpoint, srv, p+"/team/ab"), s3Store(t, srv.Endpoint, srv, p)
	writeCheckpoint(t, a, 1, Checkpoint)
	writeCheckpoint(t, ab, 2, Checkpoint)
	wantLatest(t, a, 1)
	wantLatest(t, ab, 2)
	wantList(t, root)
	writeCheckpoint(t, root, 3, Checkpoint)
	wantList(t, root, cp(3))
	wantList(t, a, cp(1))
	if err := a.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := root.Delete(ctx, 3); err != nil {
		t.Fatal(err)
	}
	wantList(t, ab, cp(2))
}

// manifestPut matches the upload of a checkpoint's manifest.
func manifestPut(id string) func(*http.Request, string) bool {
	return func(r *http.Request, key string) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(key, "/"+id+"/"+manifestName)
	}
}

// TestS3CommitFails: a failed manifest upload leaves an incomplete
// checkpoint that readers skip; Abort removes it.
func TestS3CommitFails(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	log, logs := newLogger()
	s := s3Store(t, proxy.URL, srv, prefix, WithLogger(log))
	writeCheckpoint(t, s, 1, Checkpoint)
	proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
		if manifestPut("chk-2")(r, key) {
			return s3test.Fault{Status: http.StatusInternalServerError}
		}
		return s3test.Fault{}
	})
	w, err := s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	_, err = w.Commit(ctx, Manifest{})
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("Commit = %v, want the 500 after retries", err)
	}
	wantLatest(t, s3Store(t, srv.Endpoint, srv, prefix, WithLogger(log)), 1)
	wantWarning(t, logs, 2, "incomplete")
	wantAborted(t, w, srv, prefix+"/chk-2/")
}

// wantAborted aborts w and checks that nothing is left under the key
// prefix dir.
func wantAborted(t *testing.T, w Writer, srv *s3test.Server, dir string) {
	t.Helper()
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(dir); len(keys) != 0 {
		t.Fatalf("Abort left %q", keys)
	}
}

// TestS3TransientErrorsRetried: more 503s in a row than the library sends
// a request, then success: the store's own retries carry the upload
// through, and the checkpoint completes.
func TestS3TransientErrorsRetried(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	s := s3StoreWith(t, S3Config{Endpoint: proxy.URL, RetryFor: time.Minute}, srv, prefix)
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	isPut := func(r *http.Request, key string) bool { return r.Method == http.MethodPut }
	proxy.SetRule(s3test.Times(5, isPut, s3test.Fault{Status: http.StatusServiceUnavailable}))
	if err := w.WriteFile(ctx, "a", []byte("data")); err != nil {
		t.Fatalf("WriteFile through five 503s: %v", err)
	}
	// A slow answer is waited for, and a connection cut during the upload
	// is retried.
	proxy.SetRule(s3test.Times(1, isPut, s3test.Fault{Delay: 200 * time.Millisecond}))
	if err := w.WriteFile(ctx, "b", []byte("slow")); err != nil {
		t.Fatalf("WriteFile with a slow answer: %v", err)
	}
	proxy.SetRule(s3test.Times(2, isPut, s3test.Fault{CutRequest: 3}))
	if err := w.WriteFile(ctx, "c", bytes.Repeat([]byte("cut"), 1000)); err != nil {
		t.Fatalf("WriteFile through cut connections: %v", err)
	}
	m, err := w.Commit(ctx, Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	faults := 0
	for _, e := range proxy.Events() {
		if e.Fault {
			faults++
		}
	}
	if faults != 5+1+2 {
		t.Fatalf("the proxy injected %d faults, want 8", faults)
	}
	if data, err := s.ReadFile(ctx, m, "c"); err != nil || !bytes.Equal(data, bytes.Repeat([]byte("cut"), 1000)) {
		t.Fatalf("ReadFile = %d bytes, %v", len(data), err)
	}
}

// TestS3UploadFailsWithinDeadline: a service that keeps failing, or never
// answers, fails the write when the context's deadline (the checkpoint
// timeout) comes, and the checkpoint is not complete.
func TestS3UploadFailsWithinDeadline(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	s := s3StoreWith(t, S3Config{Endpoint: proxy.URL, RetryFor: time.Hour}, srv, prefix)
	writeCheckpoint(t, s, 1, Checkpoint)
	for _, f := range []s3test.Fault{{Status: http.StatusServiceUnavailable}, {Delay: time.Hour}, {CutRequest: 1}} {
		proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
			if r.Method == http.MethodPut || r.Method == http.MethodPost {
				return f
			}
			return s3test.Fault{}
		})
		dctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		_, _, err := tryCheckpoint(dctx, s, 2, Checkpoint)
		cancel()
		if err == nil {
			t.Fatalf("checkpoint 2 with fault %+v completed", f)
		}
		proxy.SetRule(nil)
		s = s3StoreWith(t, S3Config{Endpoint: proxy.URL, RetryFor: time.Hour}, srv, prefix) // the writer is left open
		wantLatest(t, s3Store(t, srv.Endpoint, srv, prefix), 1)
		wantList(t, s3Store(t, srv.Endpoint, srv, prefix), cp(1))
	}
	// The service is back: the id can be written.
	writeCheckpoint(t, s, 2, Checkpoint)
}

// TestS3DataUploadFails: a failed upload is reported and can be retried.
func TestS3DataUploadFails(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	s := s3Store(t, proxy.URL, srv, srv.Prefix())
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
		if r.Method == http.MethodPut {
			return s3test.Fault{Status: http.StatusServiceUnavailable}
		}
		return s3test.Fault{}
	})
	err = w.WriteFile(ctx, "a", []byte("data"))
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("WriteFile = %v", err)
	}
	proxy.SetRule(nil)
	if err := w.WriteFile(ctx, "a", []byte("data")); err != nil {
		t.Fatalf("retry: %v", err)
	}
	m, err := w.Commit(ctx, Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := s.ReadFile(ctx, m, "a"); err != nil || string(data) != "data" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
}

// TestS3ManifestLast: the manifest is uploaded after every data and
// shared file of its checkpoint has been stored.
func TestS3ManifestLast(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	s := s3Store(t, proxy.URL, srv, srv.Prefix())
	writeIncremental(t, s, 1, "a", "b")
	writeCheckpoint(t, s, 2, Checkpoint)
	var uploads []string
	for _, e := range proxy.Events() {
		if e.Method == http.MethodPut || e.Method == http.MethodPost {
			uploads = append(uploads, e.Key)
		}
	}
	for _, id := range []string{"chk-1", "chk-2"} {
		last := -1
		for i, k := range uploads {
			if strings.Contains(k, "/"+id+"/") || id == "chk-1" && strings.Contains(k, "/shared/") {
				last = i
			}
		}
		if last < 0 || !strings.HasSuffix(uploads[last], id+"/"+manifestName) {
			t.Fatalf("the last upload of %s is %q, not its manifest; uploads: %q", id, uploads[max(last, 0)], uploads)
		}
	}
}

// TestS3DownloadResumes: a download cut off midway goes on where it
// stopped, with the same object.
func TestS3DownloadResumes(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	s := s3Store(t, proxy.URL, srv, prefix)
	m, files := writeCheckpoint(t, s, 1, Checkpoint)
	isGet := func(r *http.Request, key string) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(key, "/source-1.op")
	}
	proxy.SetRule(s3test.Times(2, isGet, s3test.Fault{CutResponse: 300}))
	data, err := s.ReadFile(ctx, m, "source-1.op")
	if err != nil || !bytes.Equal(data, files["source-1.op"]) {
		t.Fatalf("ReadFile through cut downloads = %d bytes, %v", len(data), err)
	}
	var ranges []string
	for _, e := range proxy.Events() {
		if e.Method == http.MethodGet && strings.HasSuffix(e.Key, "/source-1.op") {
			ranges = append(ranges, e.Range)
		}
	}
	if want := []string{"", "bytes=300-", "bytes=600-"}; !slices.Equal(ranges, want) {
		t.Fatalf("GETs of the file asked for ranges %q, want %q", ranges, want)
	}
	// An object that changed between two parts is not spliced together.
	proxy.SetRule(s3test.Times(1, isGet, s3test.Fault{CutResponse: 300}))
	rc, err := s.c.b.open(ctx, "chk-1", "source-1.op")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 1000)
	n, _ := rc.Read(buf)
	for n < 300 {
		k, err := rc.Read(buf[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	srv.Put(prefix+"/chk-1/source-1.op", []byte("other"))
	for err == nil {
		_, err = rc.Read(buf)
	}
	var r minio.ErrorResponse
	if !errors.As(err, &r) || r.Code != "PreconditionFailed" {
		t.Fatalf("reading on after the object changed: %v, want PreconditionFailed", err)
	}
}

// TestS3MultipartStreamed: a shared file larger than a part is uploaded
// in parts, read from the file as they are sent (the upload allocates far
// less than the file's size), through a connection cut during a part;
// it reads back and copies out intact.
func TestS3MultipartStreamed(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	s := s3StoreWith(t, S3Config{Endpoint: proxy.URL, PartSize: 5 << 20, RetryFor: time.Minute}, srv, prefix)
	const size = 24<<20 + 12345
	src := filepath.Join(t.TempDir(), "000009.sst")
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{7})
	rng.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	data = nil
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	isPart2 := func(r *http.Request, key string) bool { return r.URL.Query().Get("partNumber") == "2" }
	proxy.SetRule(s3test.Times(1, isPart2, s3test.Fault{CutRequest: 1 << 20}))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := w.WriteSharedFile(ctx, "big", src); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("uploading %d bytes in 5 MiB parts allocated %d bytes", size, alloc)
	if alloc > size/2 {
		t.Errorf("uploading a %d-byte file allocated %d bytes: it was not streamed", size, alloc)
	}
	m, err := w.Commit(ctx, Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, e := range proxy.Events() {
		if strings.HasSuffix(e.Key, "/shared/big") {
			switch {
			case e.Query.Has("uploads"):
				parts["start"]++
			case e.Query.Has("partNumber") && !e.Fault:
				parts["part"]++
			case e.Query.Has("uploadId") && e.Method == http.MethodPost:
				parts["complete"]++
			case e.Fault:
				parts["cut"]++
			}
		}
	}
	if want := map[string]int{"start": 1, "part": 5, "complete": 1, "cut": 1}; !maps.Equal(parts, want) {
		t.Fatalf("requests for the shared file: %v, want %v", parts, want)
	}
	dst := filepath.Join(t.TempDir(), "copy.sst")
	if err := s.CopyShared(ctx, m, "big", dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	want, _ := os.ReadFile(src)
	if !bytes.Equal(got, want) {
		t.Fatal("the copied shared file differs from the uploaded one")
	}
	if err := s.VerifyShared(ctx, m, "big"); err != nil {
		t.Fatal(err)
	}
}

// TestS3FailedMultipartLeavesNothing: a multipart upload that fails for
// good (every part's connection cut until the deadline) fails the write;
// the shared file never appears, and neither does the checkpoint.
func TestS3FailedMultipartLeavesNothing(t *testing.T) {
	srv := s3test.Require(t)
	proxy := srv.Proxy()
	prefix := srv.Prefix()
	s := s3StoreWith(t, S3Config{Endpoint: proxy.URL, PartSize: 5 << 20, RetryFor: time.Hour}, srv, prefix)
	writeIncremental(t, s, 1, "a")
	src := filepath.Join(t.TempDir(), "000010.sst")
	if err := os.WriteFile(src, bytes.Repeat([]byte("sst "), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
		if r.URL.Query().Get("partNumber") == "3" {
			return s3test.Fault{CutRequest: 1 << 16}
		}
		return s3test.Fault{}
	})
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	w, err := s.Begin(dctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSharedFile(dctx, "big", src); err == nil {
		t.Fatal("WriteSharedFile through a cut part succeeded")
	}
	proxy.SetRule(nil)
	// The runtime never commits after a failed write (a process may also
	// die here): the checkpoint has no manifest until it does.
	if _, ok := srv.Get(prefix + "/shared/big"); ok {
		t.Fatal("the failed multipart upload left an object")
	}
	fresh := s3Store(t, srv.Endpoint, srv, prefix)
	wantLatest(t, fresh, 1)
	wantList(t, fresh, cp(1))
	wantAborted(t, w, srv, prefix+"/chk-2/")
}

// TestS3CredentialChain: without static keys the store finds credentials
// the standard ways: the environment, a shared credentials file, a
// container credentials endpoint (an IAM role on ECS/EKS); with none it
// says so when the service refuses the unsigned requests.
func TestS3CredentialChain(t *testing.T) {
	srv := s3test.Require(t)
	prefix := srv.Prefix()
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN",
		"AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"} {
		t.Setenv(v, "")
	}
	// Never the EC2 metadata service from a test.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	chain := func() *S3 {
		s, err := NewS3(S3Config{Endpoint: srv.Endpoint, Region: srv.Region, Transport: s3test.Transport(t), MaxRetries: 1, RetryFor: time.Millisecond}, srv.Bucket, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	works := func(how string, id int64) {
		t.Helper()
		s := chain()
		if _, _, err := tryCheckpoint(ctx, s, id, Checkpoint); err != nil {
			t.Fatalf("credentials from %s: %v", how, err)
		}
		wantLatest(t, s, id)
	}

	_, err := chain().List(ctx)
	if err == nil || !strings.Contains(err.Error(), "no S3 credentials were found") {
		t.Fatalf("List without credentials: %v", err)
	}

	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	works("the environment", 1)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")

	file := filepath.Join(t.TempDir(), "credentials")
	ini := fmt.Sprintf("[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[weir]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey)
	if err := os.WriteFile(file, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "weir")
	works("a shared credentials file", 2)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "")

	asked := 0
	role := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		json.NewEncoder(w).Encode(map[string]any{"AccessKeyId": srv.AccessKey, "SecretAccessKey": srv.SecretKey,
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	}))
	defer role.Close()
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", role.URL+"/role")
	works("a container credentials endpoint", 3)
	if asked == 0 {
		t.Fatal("the container credentials endpoint was never asked")
	}
}

func TestS3ErrorIsNotExist(t *testing.T) {
	srv := s3test.Require(t)
	s := s3Store(t, srv.Endpoint, srv, srv.Prefix())
	_, err := s.c.b.open(ctx, "chk-1", "nothing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening a missing object: %v, want fs.ErrNotExist", err)
	}
	other, err := NewS3(S3Config{Endpoint: srv.Endpoint, Region: srv.Region, Transport: s3test.Transport(t),
		Credentials: Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
		MaxRetries:  2, RetryFor: 300 * time.Millisecond}, "no-such-bucket-here", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.c.b.open(ctx, "chk-1", "nothing"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening in a missing bucket: %v, want an error that is not fs.ErrNotExist", err)
	}
}
