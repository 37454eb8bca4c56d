package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/store/s3fake"
)

// TestSigV4Vectors checks the signer against the examples published in
// the S3 documentation ("Signature Calculations for the Authorization
// Header: Transferring Payload in a Single Chunk").
func TestSigV4Vectors(t *testing.T) {
	creds := Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	when := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	cases := []struct {
		name, method, url string
		header            map[string]string
		body              string
		signed, signature string
	}{
		{"GET object", "GET", "https://examplebucket.s3.amazonaws.com/test.txt",
			map[string]string{"Range": "bytes=0-9"}, "",
			"host;range;x-amz-content-sha256;x-amz-date", "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
		{"PUT object", "PUT", "https://examplebucket.s3.amazonaws.com/test$file.text",
			map[string]string{"Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"}, "Welcome to Amazon S3.",
			"date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
		{"GET bucket lifecycle", "GET", "https://examplebucket.s3.amazonaws.com/?lifecycle", nil, "",
			"host;x-amz-content-sha256;x-amz-date", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
		{"list objects", "GET", "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J", nil, "",
			"host;x-amz-content-sha256;x-amz-date", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			signRequest(req, creds, "us-east-1", hash(c.body), when)
			want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=" +
				c.signed + ", Signature=" + c.signature
			if got := req.Header.Get("Authorization"); got != want {
				t.Fatalf("Authorization:\n got %s\nwant %s", got, want)
			}
			if req.Header.Get("X-Amz-Date") != "20130524T000000Z" {
				t.Fatalf("X-Amz-Date = %q", req.Header.Get("X-Amz-Date"))
			}
		})
	}
}

func TestURIEncode(t *testing.T) {
	for _, c := range []struct{ in, path, query string }{
		{"a-b_c.d~e", "a-b_c.d~e", "a-b_c.d~e"},
		{"jobs/a b/ü+$", "jobs/a%20b/%C3%BC%2B%24", "jobs%2Fa%20b%2F%C3%BC%2B%24"},
	} {
		if got := uriEncode(c.in, false); got != c.path {
			t.Errorf("uriEncode(%q, false) = %q, want %q", c.in, got, c.path)
		}
		if got := uriEncode(c.in, true); got != c.query {
			t.Errorf("uriEncode(%q, true) = %q, want %q", c.in, got, c.query)
		}
	}
}

func TestNewS3Validation(t *testing.T) {
	creds := Credentials{AccessKeyID: "a", SecretAccessKey: "b"}
	for _, c := range []struct {
		endpoint, bucket string
		creds            Credentials
		opts             []Option
	}{
		{"ftp://x", "b", creds, nil},
		{"http://", "b", creds, nil},
		{"http://x/path", "b", creds, nil},
		{"http://x", "", creds, nil},
		{"http://x", "a/b", creds, nil},
		{"http://x", "b", Credentials{AccessKeyID: "a"}, nil},
		{"http://x", "b", creds, []Option{WithFS(OSFS{})}},
		{"http://x", "b", creds, []Option{WithCreateDir()}},
	} {
		if _, err := NewS3(c.endpoint, c.bucket, "p", c.creds, nil, c.opts...); err == nil {
			t.Errorf("NewS3(%q, %q, %+v) succeeded", c.endpoint, c.bucket, c.creds)
		}
	}
	if _, err := NewS3("https://s3.example.com:9000/", "b", "", creds, nil); err != nil {
		t.Fatal(err)
	}
}

func TestS3RejectedSignature(t *testing.T) {
	f := newFakeS3(t)
	s, err := NewS3(f.URL(), f.Bucket, "p", Credentials{AccessKeyID: f.creds.AccessKeyID, SecretAccessKey: "wrong"},
		f.Client(), WithRegion(f.Region))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), "HTTP 403 SignatureDoesNotMatch: signature does not match") {
		t.Fatalf("List with a wrong secret: %v", err)
	}
	if _, err = s.Begin(ctx, 1, Checkpoint); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("Begin with a wrong secret: %v", err)
	}
	// A wrong region is refused as well.
	s2, _ := NewS3(f.URL(), f.Bucket, "p", f.creds, f.Client(), WithRegion("us-west-2"))
	if _, err := s2.List(ctx); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("List with a wrong region: %v", err)
	}
}

func TestS3SessionToken(t *testing.T) {
	f := newFakeS3(t)
	f.creds.SessionToken = "token/with+odd=chars"
	s := f.store(t, "p")
	writeCheckpoint(t, s, 1, Checkpoint)
	wantLatest(t, s, 1)
}

// TestS3Layout checks the object keys and that pagination is exercised.
func TestS3Layout(t *testing.T) {
	f := newFakeS3(t)
	s := f.store(t, "/jobs/my job/ü/")
	_, files := writeCheckpoint(t, s, 7, Checkpoint)
	writeCheckpoint(t, s, 8, Savepoint)
	var want []string
	for name := range files {
		want = append(want, "jobs/my job/ü/chk-7/"+name)
	}
	want = append(want, "jobs/my job/ü/chk-7/_manifest.json", "jobs/my job/ü/savepoint-8/_manifest.json")
	for name := range files {
		want = append(want, "jobs/my job/ü/savepoint-8/"+name)
	}
	slices.Sort(want)
	if got := f.Keys(); !slices.Equal(got, want) {
		t.Fatalf("keys:\n%q\nwant\n%q", got, want)
	}
	if len(want) <= s3fake.PageSize {
		t.Fatal("too few objects to need several list pages")
	}
	wantList(t, s, cp(7), sp(8))
	// The manifest object decodes like a local one.
	var raw []byte
	f.Mutate("jobs/my job/ü/chk-7/_manifest.json", func(d []byte) []byte { raw = d; return d })
	m, err := decodeManifest(raw, "test")
	if err != nil || m.ID != 7 {
		t.Fatalf("decoding the manifest object: %+v, %v", m, err)
	}
}

func TestS3PrefixIsolation(t *testing.T) {
	f := newFakeS3(t)
	a, ab, root := f.store(t, "team/a"), f.store(t, "team/ab"), f.store(t, "")
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

// TestS3CommitFails: a failed manifest upload leaves an incomplete
// checkpoint that readers skip; Abort removes it.
func TestS3CommitFails(t *testing.T) {
	f := newFakeS3(t)
	log, logs := newLogger()
	s := f.store(t, "p", WithLogger(log))
	writeCheckpoint(t, s, 1, Checkpoint)
	f.SetFail(func(method, key string) int {
		if method == http.MethodPut && strings.HasSuffix(key, "chk-2/"+manifestName) {
			return http.StatusInternalServerError
		}
		return 0
	})
	w, err := s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	_, err = w.Commit(ctx, Manifest{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500 InjectedFault") {
		t.Fatalf("Commit = %v", err)
	}
	s2 := f.store(t, "p", WithLogger(log))
	wantLatest(t, s2, 1)
	wantWarning(t, logs, 2, "incomplete")
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range f.Keys() {
		if strings.Contains(k, "chk-2") {
			t.Fatalf("Abort left %s", k)
		}
	}
}

// TestS3DataUploadFails: a failed upload is reported and can be retried.
func TestS3DataUploadFails(t *testing.T) {
	f := newFakeS3(t)
	s := f.store(t, "p", WithLogger(slog.New(slog.DiscardHandler)))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	f.SetFail(func(method, key string) int {
		if method == http.MethodPut {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	err = w.WriteFile(ctx, "a", []byte("data"))
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("WriteFile = %v", err)
	}
	f.SetFail(nil)
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

func TestS3ErrorIsNotExist(t *testing.T) {
	e := &s3Error{status: 404}
	if !errors.Is(e, fs.ErrNotExist) {
		t.Fatal("404 does not match fs.ErrNotExist")
	}
	if errors.Is(&s3Error{status: 500}, fs.ErrNotExist) {
		t.Fatal("500 matches fs.ErrNotExist")
	}
}
