package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/s3test"
)

// copyTree copies directory src to a new directory dst (files only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openAt opens location loc and checks that it is checkpoint id of kind,
// every file intact.
func openAt(t *testing.T, loc string, s3 Remotes, id int64, kind Kind) {
	t.Helper()
	l, err := ParseLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	s, m, err := OpenLocation(ctx, l, s3)
	if err != nil {
		t.Fatalf("opening %s: %v", loc, err)
	}
	if m.ID != id || m.Kind != kind {
		t.Fatalf("%s opens as %s %d, want %s %d", loc, m.Kind, m.ID, kind, id)
	}
	if err := checkFiles(ctx, s, m); err != nil {
		t.Fatalf("%s: %v", loc, err)
	}
}

// TestOpenLocationRenamed: a savepoint directory copied or renamed to any
// name, elsewhere or in its own root, opens as the savepoint its manifest
// describes; a directory with no savepoint says so.
func TestOpenLocationRenamed(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	writeCheckpoint(t, s, 7, Savepoint)
	writeCheckpoint(t, s, 8, Checkpoint)
	orig := filepath.Join(root, "savepoint-7")
	openAt(t, orig, nil, 7, Savepoint)

	// Copied elsewhere, under another name, spaces and all.
	other := t.TempDir()
	copied := filepath.Join(other, "before upgrade")
	copyTree(t, orig, copied)
	openAt(t, copied, nil, 7, Savepoint)
	openAt(t, "file://"+copied, nil, 7, Savepoint)
	// Under the name of another savepoint: its manifest decides.
	copyTree(t, orig, filepath.Join(other, "savepoint-9"))
	openAt(t, filepath.Join(other, "savepoint-9"), nil, 7, Savepoint)
	// A retained checkpoint copied likewise.
	copyTree(t, filepath.Join(root, "chk-8"), filepath.Join(other, "keep"))
	openAt(t, filepath.Join(other, "keep"), nil, 8, Checkpoint)

	// Renamed within its root: the root no longer lists savepoint-7, but
	// the directory opens, and the root stands for its newest savepoint
	// only if it has one under a savepoint name.
	renamed := filepath.Join(root, "release-1.4")
	if err := os.Rename(orig, renamed); err != nil {
		t.Fatal(err)
	}
	openAt(t, renamed, nil, 7, Savepoint)

	// Damage in a renamed directory is found.
	if err := os.WriteFile(filepath.Join(copied, "source-1.op"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := ParseLocation(copied)
	s2, m, err := OpenLocation(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFiles(ctx, s2, m); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged file of a renamed savepoint: %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(filepath.Join(copied, manifestName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLocation(ctx, l, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged manifest of a renamed savepoint: %v, want ErrCorrupt", err)
	}

	// Directories without a savepoint: empty, or holding other files.
	empty := filepath.Join(other, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(other, "notes")
	if err := os.Mkdir(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "README"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{empty, notes} {
		l, _ := ParseLocation(dir)
		_, _, err := OpenLocation(ctx, l, nil)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "holds no savepoint or checkpoint") || !strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: %v, want ErrNotFound saying it holds no savepoint", dir, err)
		}
	}
}

// TestOpenLocationRenamedShared: a checkpoint with shared files renamed
// within its root reads them from the root's shared directory.
func TestOpenLocationRenamedShared(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	_, names := writeIncremental(t, s, 3, "a.sst", "b.sst")
	renamed := filepath.Join(root, "kept")
	if err := os.Rename(filepath.Join(root, "chk-3"), renamed); err != nil {
		t.Fatal(err)
	}
	l, _ := ParseLocation(renamed)
	s2, m, err := OpenLocation(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 3 || len(m.Shared) != len(names) {
		t.Fatalf("opened %s %d with %d shared files, want checkpoint 3 with %d", m.Kind, m.ID, len(m.Shared), len(names))
	}
	for _, n := range names {
		if _, err := s2.ReadShared(ctx, m, n); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenLocationRenamedS3: the objects of a savepoint copied under
// another key prefix open as that savepoint; a prefix with no savepoint
// says so.
func TestOpenLocationRenamedS3(t *testing.T) {
	srv := s3test.Require(t)
	p := srv.Prefix()
	s := s3Store(t, srv.Endpoint, srv, p+"/jobs")
	writeCheckpoint(t, s, 5, Savepoint)
	for _, k := range srv.Keys(p + "/jobs/savepoint-5/") {
		data, _ := srv.Get(k)
		srv.Put(p+"/backups/job one/"+strings.TrimPrefix(k, p+"/jobs/savepoint-5/"), data)
	}
	cfg := S3Config{Endpoint: srv.Endpoint, Region: srv.Region, Transport: s3test.Transport(t),
		Credentials: Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}}
	openAt(t, "s3://"+srv.Bucket+"/"+p+"/jobs/savepoint-5", s3Remotes(cfg), 5, Savepoint)
	openAt(t, "s3://"+srv.Bucket+"/"+p+"/backups/job one", s3Remotes(cfg), 5, Savepoint)
	l, _ := ParseLocation("s3://" + srv.Bucket + "/" + p + "/backups")
	if _, _, err := OpenLocation(ctx, l, s3Remotes(cfg)); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "holds no savepoint or checkpoint") {
		t.Fatalf("a prefix without a savepoint: %v, want ErrNotFound saying it holds none", err)
	}
}
