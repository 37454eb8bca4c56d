package s3fake_test

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint/store"
	"github.com/weirstream/weir/internal/checkpoint/store/s3fake"
)

// The store's signed requests pass the fake's independent SigV4 check, and
// a wrong secret does not.
func TestFakeChecksSignatures(t *testing.T) {
	f := s3fake.New(t)
	for _, c := range []struct {
		secret string
		ok     bool
	}{{f.SecretAccessKey, true}, {"wrong", false}} {
		s, err := store.NewS3(f.URL(), f.Bucket, "p", store.Credentials{AccessKeyID: f.AccessKeyID, SecretAccessKey: c.secret}, f.Client(), store.WithRegion(f.Region))
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Begin(t.Context(), 1, store.Savepoint)
		if err == nil {
			err = w.WriteFile(t.Context(), "a", []byte("x y"))
		}
		if err == nil {
			_, err = w.Commit(t.Context(), store.Manifest{})
		}
		switch {
		case c.ok && err != nil:
			t.Fatal(err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "403")):
			t.Fatalf("wrong secret: err %v", err)
		}
	}
	if keys := f.Keys(); len(keys) != 2 || keys[0] != "p/savepoint-1/_manifest.json" {
		t.Fatalf("keys %v", keys)
	}
}
