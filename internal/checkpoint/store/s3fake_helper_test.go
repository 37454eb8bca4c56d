package store

import (
	"testing"

	"github.com/weirstream/weir/internal/checkpoint/store/s3fake"
)

// fakeS3 is an s3fake server (an in-memory S3 that checks every request's
// SigV4 signature independently of the store's signer) with the
// credentials it accepts.
type fakeS3 struct {
	*s3fake.Server
	creds Credentials
}

func newFakeS3(t testing.TB) *fakeS3 {
	s := s3fake.New(t)
	return &fakeS3{Server: s, creds: Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}}
}

// store returns an S3 store on the fake (a fresh instance: a restart).
func (f *fakeS3) store(t testing.TB, prefix string, opts ...Option) *S3 {
	t.Helper()
	opts = append([]Option{WithRegion(f.Region)}, opts...)
	s, err := NewS3(f.URL(), f.Bucket, prefix, f.creds, f.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
