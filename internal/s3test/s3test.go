// Package s3test gives tests the S3-compatible server that the test
// command starts (scripts/s3.sh, a versitygw gateway on loopback): its
// endpoint and keys from the environment, a key prefix per test, direct
// access to the objects (to damage them behind a store's back), and a
// fault-injecting reverse proxy in front of the server (errors, slow
// responses, connections cut mid-request).
//
// The settings are WEIR_S3_ENDPOINT, WEIR_S3_ACCESS_KEY,
// WEIR_S3_SECRET_KEY, WEIR_S3_BUCKET (default weir-test) and
// WEIR_S3_REGION (default us-east-1). Without WEIR_S3_ENDPOINT a test
// that needs the server skips, unless WEIR_REQUIRE_SERVICES=1 (the test
// command sets it): then it fails.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is the S3-compatible server of the test command.
type Server struct {
	// Endpoint is its URL, http://127.0.0.1:port.
	Endpoint string
	// AccessKey and SecretKey are the keys it accepts.
	AccessKey, SecretKey string
	// Region is the region requests are signed for.
	Region string
	// Bucket is the bucket the tests use; Require creates it if needed.
	Bucket string

	t  testing.TB
	cl *minio.Client
}

var buckets sync.Map // bucket name -> error making sure it exists

// Require returns the server, or skips the test (fails it when
// WEIR_REQUIRE_SERVICES=1) when WEIR_S3_ENDPOINT is not set.
func Require(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		Endpoint:  os.Getenv("WEIR_S3_ENDPOINT"),
		AccessKey: os.Getenv("WEIR_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("WEIR_S3_SECRET_KEY"),
		Region:    cmpOr(os.Getenv("WEIR_S3_REGION"), "us-east-1"),
		Bucket:    cmpOr(os.Getenv("WEIR_S3_BUCKET"), "weir-test"),
		t:         t,
	}
	if s.Endpoint == "" {
		msg := "no S3 server: WEIR_S3_ENDPOINT is not set (./scripts/test.sh starts one; by hand: eval \"$(./scripts/s3.sh start | tail -1)\")"
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg + ", and WEIR_REQUIRE_SERVICES=1 requires every service test to run")
		}
		t.Skip(msg)
	}
	host, secure := strings.TrimPrefix(s.Endpoint, "http://"), false
	if h, ok := strings.CutPrefix(s.Endpoint, "https://"); ok {
		host, secure = h, true
	}
	cl, err := minio.New(host, &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Secure: secure,
		Region: s.Region, Transport: Transport(t), MaxRetries: 1,
	})
	if err != nil {
		t.Fatalf("s3test: client for %s: %v", s.Endpoint, err)
	}
	s.cl = cl
	v, _ := buckets.LoadOrStore(s.Bucket, sync.OnceValue(func() error {
		ctx := context.Background()
		ok, err := cl.BucketExists(ctx, s.Bucket)
		if err == nil && !ok {
			err = cl.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s.Region})
		}
		return err
	}))
	if err := v.(func() error)(); err != nil {
		t.Fatalf("s3test: bucket %s at %s: %v", s.Bucket, s.Endpoint, err)
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Transport returns an HTTP transport for one test (the library's
// defaults, no transparent decompression), whose idle connections are
// closed when the test ends.
func Transport(t testing.TB) *http.Transport {
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// Prefix returns a key prefix no other test (or run) uses, from the
// test's name.
func (s *Server) Prefix() string {
	var r [4]byte
	rand.Read(r[:])
	name := strings.Map(func(c rune) rune {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' {
			return c
		}
		return '_'
	}, s.t.Name())
	return "t/" + name + "-" + hex.EncodeToString(r[:])
}

// Keys returns every object key under prefix p, sorted.
func (s *Server) Keys(p string) []string {
	s.t.Helper()
	var keys []string
	for o := range s.cl.ListObjects(context.Background(), s.Bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
		if o.Err != nil {
			s.t.Fatalf("s3test: listing %s: %v", p, o.Err)
		}
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

// Get returns the object at key, and false if there is none.
func (s *Server) Get(key string) ([]byte, bool) {
	s.t.Helper()
	body, _, _, err := minio.Core{Client: s.cl}.GetObject(context.Background(), s.Bucket, key, minio.GetObjectOptions{})
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return nil, false
	}
	if err != nil {
		s.t.Fatalf("s3test: get %s: %v", key, err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		s.t.Fatalf("s3test: get %s: %v", key, err)
	}
	return data, true
}

// Put stores data at key.
func (s *Server) Put(key string, data []byte) {
	s.t.Helper()
	if _, err := s.cl.PutObject(context.Background(), s.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		s.t.Fatalf("s3test: put %s: %v", key, err)
	}
}

// Delete removes the object at key.
func (s *Server) Delete(key string) {
	s.t.Helper()
	if err := s.cl.RemoveObject(context.Background(), s.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		s.t.Fatalf("s3test: delete %s: %v", key, err)
	}
}

// Mutate replaces the object at key with fn of its contents, or deletes
// it if fn returns nil, and reports whether the object existed.
func (s *Server) Mutate(key string, fn func([]byte) []byte) bool {
	s.t.Helper()
	data, ok := s.Get(key)
	if !ok {
		return false
	}
	if nw := fn(data); nw == nil {
		s.Delete(key)
	} else {
		s.Put(key, nw)
	}
	return true
}

// String describes the server.
func (s *Server) String() string { return fmt.Sprintf("%s bucket %s", s.Endpoint, s.Bucket) }
