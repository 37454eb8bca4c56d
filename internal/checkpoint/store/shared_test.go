package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sharedConformance is the behaviour of shared files (incremental
// checkpoints) every Store must show; TestSharedConformance runs it on
// every backing of the conformance suite (local disk, the in-memory file
// system, the S3 server of the test command).
var sharedConformance = []struct {
	name string
	fn   func(t *testing.T, b backing)
}{
	{"RoundTrip", testSharedRoundTrip},
	{"RetentionCollects", testSharedRetention},
	{"CorruptSharedFileFallsBack", testSharedCorrupt},
	{"OpenWriterPinsFiles", testSharedPinned},
	{"SavepointsAreSelfContained", testSharedSavepoint},
	{"CopySharedPlacesVerifiedFiles", testSharedCopy},
	{"WriteSharedFileStoresAFile", testSharedFromFile},
}

func TestSharedConformance(t *testing.T) {
	for name, mk := range backings {
		t.Run(name, func(t *testing.T) {
			for _, c := range sharedConformance {
				t.Run(c.name, func(t *testing.T) { c.fn(t, mk(t)) })
			}
		})
	}
}

// writeIncremental writes checkpoint id of one subtask whose database
// consists of a private MANIFEST file and the shared files named in sst:
// each is reused when a stored checkpoint references it, else written.
// It returns the committed manifest and the names it wrote.
func writeIncremental(t *testing.T, s Store, id int64, sst ...string) (*Manifest, []string) {
	t.Helper()
	w, err := s.Begin(ctx, id, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	priv := fmt.Sprintf("op.0.db.MANIFEST-%d", id)
	if err := w.WriteFile(ctx, priv, fileData(id, "manifest", 50)); err != nil {
		t.Fatal(err)
	}
	db := &DBFiles{FirstKeyGroup: 0, LastKeyGroup: 3, KeyType: "int64",
		Files: []DBFile{{Name: "MANIFEST-000001", File: priv}}}
	var wrote []string
	for _, name := range sst {
		ok, err := w.ReuseShared(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if err := w.WriteShared(ctx, name, sharedData(name)); err != nil {
				t.Fatal(err)
			}
			wrote = append(wrote, name)
		}
		db.Files = append(db.Files, DBFile{Name: name + ".sst", Shared: name})
	}
	m, err := w.Commit(ctx, Manifest{Operators: []OperatorState{{UID: "op", Parallelism: 1, MaxParallelism: 4,
		Subtasks: []SubtaskState{{Index: 0, DB: db}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return m, wrote
}

func sharedData(name string) []byte { return fileData(0, name, 100+len(name)*37) }

func sharedResidue(b backing) []string {
	r := b.residue(sharedDir)
	slices.Sort(r)
	return r
}

func testSharedRoundTrip(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	m1, wrote := writeIncremental(t, s, 1, "a", "b")
	if !slices.Equal(wrote, []string{"a", "b"}) {
		t.Fatalf("checkpoint 1 wrote %q", wrote)
	}
	m2, wrote := writeIncremental(t, s, 2, "a", "c")
	if !slices.Equal(wrote, []string{"c"}) {
		t.Fatalf("checkpoint 2 wrote %q, want only c (a is shared with 1)", wrote)
	}
	if m2.Shared["a"].Checkpoint != 1 || m2.Shared["c"].Checkpoint != 2 || len(m2.Shared) != 2 {
		t.Fatalf("checkpoint 2 shared = %+v", m2.Shared)
	}
	if got, want := m2.UploadedBytes(), int64(50+len(sharedData("c"))); got != want {
		t.Fatalf("checkpoint 2 uploaded %d bytes, want %d", got, want)
	}
	if m1.UploadedBytes() != int64(50+len(sharedData("a"))+len(sharedData("b"))) {
		t.Fatalf("checkpoint 1 uploaded %d bytes", m1.UploadedBytes())
	}
	// A new store instance (a restarted process) reads it all back.
	s = b.open(slog.New(slog.DiscardHandler))
	m := wantLatest(t, s, 2)
	if m.Operators[0].Subtasks[0].DB == nil || len(m.Operators[0].Subtasks[0].DB.Files) != 3 {
		t.Fatalf("database files not read back: %+v", m.Operators[0].Subtasks[0])
	}
	for _, name := range []string{"a", "c"} {
		data, err := s.ReadShared(ctx, m, name)
		if err != nil || string(data) != string(sharedData(name)) {
			t.Fatalf("ReadShared %s = %d bytes, %v", name, len(data), err)
		}
	}
	_, err := s.ReadShared(ctx, m, "b")
	wantErr(t, err, ErrNotFound, `"b"`)
	// And reuses what the stored checkpoints reference.
	_, wrote = writeIncremental(t, s, 3, "a", "b", "c", "d")
	if !slices.Equal(wrote, []string{"d"}) {
		t.Fatalf("after a restart, checkpoint 3 wrote %q, want only d", wrote)
	}
}

func testSharedRetention(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeIncremental(t, s, 1, "a", "b")
	writeIncremental(t, s, 2, "a", "c")
	// A crashed attempt at 3 left a shared file and no manifest.
	w, err := b.open(slog.New(slog.DiscardHandler)).Begin(ctx, 3, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteShared(ctx, "orphan", []byte("x")); err != nil {
		t.Fatal(err)
	}
	writeIncremental(t, s, 4, "c", "d")
	if err := s.Retain(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// 2 and 4 are kept: a, c, d are referenced; b (only 1) and the
	// orphan are not.
	wantList(t, s, cp(2), cp(4))
	if got := sharedResidue(b); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("shared files after Retain(2) = %q, want a c d", got)
	}
	wantLatest(t, s, 4)
	// After a restart, the references come from the manifests again.
	s = b.open(slog.New(slog.DiscardHandler))
	_, wrote := writeIncremental(t, s, 5, "d", "e")
	if !slices.Equal(wrote, []string{"e"}) {
		t.Fatalf("checkpoint 5 wrote %q, want only e", wrote)
	}
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := sharedResidue(b); !slices.Equal(got, []string{"d", "e"}) {
		t.Fatalf("shared files after Retain(1) = %q, want d e", got)
	}
	m := wantLatest(t, s, 5)
	for _, name := range []string{"d", "e"} {
		if _, err := s.ReadShared(ctx, m, name); err != nil {
			t.Fatal(err)
		}
	}
}

func testSharedCorrupt(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	writeIncremental(t, s, 1, "a")
	writeIncremental(t, s, 2, "a", "b")
	if !b.mutate(sharedDir, "b", func(d []byte) []byte { d[3] ^= 1; return d }) {
		t.Fatal("shared file b not found")
	}
	wantLatest(t, s, 1)
	wantWarning(t, logs, 2, "shared file", `\"b\"`, "checksum")
	// A missing shared file is damage too.
	writeIncremental(t, s, 3, "a", "c")
	b.mutate(sharedDir, "c", func([]byte) []byte { return nil })
	wantLatest(t, s, 1)
	wantWarning(t, logs, 3, "shared file", `\"c\"`, "missing")
}

func testSharedPinned(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeIncremental(t, s, 1, "a", "b")
	w, err := s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteShared(ctx, "new", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.ReuseShared(ctx, "b"); !ok || err != nil {
		t.Fatalf("ReuseShared(b) = %v, %v", ok, err)
	}
	// Checkpoint 3 drops b; with one retained, 1 goes. The open writer of
	// 2 still holds new and b.
	writeIncremental(t, s, 3, "a")
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := sharedResidue(b); !slices.Equal(got, []string{"a", "b", "new"}) {
		t.Fatalf("shared files with an open writer = %q, want a b new", got)
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := sharedResidue(b); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("shared files after the abort = %q, want a", got)
	}
}

func testSharedSavepoint(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeIncremental(t, s, 1, "a")
	w, err := s.Begin(ctx, 2, Savepoint)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	if err := w.WriteShared(ctx, "x", []byte("x")); err == nil {
		t.Fatal("a savepoint wrote a shared file")
	}
	if _, err := w.ReuseShared(ctx, "a"); err == nil {
		t.Fatal("a savepoint reused a shared file")
	}
	m := Manifest{ID: 2, Kind: Savepoint, Shared: map[string]SharedFileInfo{"a": {Size: 1}}}
	if err := m.Validate(); err == nil {
		t.Fatal("Validate accepted a savepoint with shared files")
	}
}

func testSharedCopy(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeIncremental(t, s, 1, "a")
	m, _ := writeIncremental(t, s, 2, "a", "b")
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		dst := filepath.Join(dir, name+".sst")
		if err := s.CopyShared(ctx, m, name, dst); err != nil {
			t.Fatalf("CopyShared %s: %v", name, err)
		}
		if got, err := os.ReadFile(dst); err != nil || string(got) != string(sharedData(name)) {
			t.Fatalf("CopyShared %s placed %d bytes (%v), want the stored file", name, len(got), err)
		}
	}
	// An existing destination is an error and stays as it was.
	keep := filepath.Join(dir, "keep")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyShared(ctx, m, "a", keep); err == nil {
		t.Fatal("CopyShared replaced an existing file")
	}
	if got, _ := os.ReadFile(keep); string(got) != "mine" {
		t.Fatalf("CopyShared onto an existing file changed it to %q", got)
	}
	// A file m does not reference is not placed.
	none := filepath.Join(dir, "none")
	wantErr(t, s.CopyShared(ctx, m, "zz", none), ErrNotFound, `"zz"`)
	if _, err := os.Stat(none); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyShared of an unreferenced file left %s (%v)", none, err)
	}
	// A damaged one is refused and leaves nothing behind.
	b.mutate(sharedDir, "b", func(d []byte) []byte { d[5] ^= 1; return d })
	bad := filepath.Join(dir, "bad")
	wantErr(t, s.CopyShared(ctx, m, "b", bad), ErrCorrupt, `"b"`, "checksum")
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyShared of a damaged file left %s (%v)", bad, err)
	}
}

// TestWriteSharedFileCopiesLocalFiles: a directory store keeps its own
// copy of a local file it stores (never a hard link), so damage to the
// file, which belongs to a live database, never reaches the store.
func TestWriteSharedFileCopiesLocalFiles(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	src, m := commitFromFile(t, s)
	a, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := os.Stat(filepath.Join(root, sharedDir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(a, stored) {
		t.Fatal("WriteSharedFile linked the database's file into the store")
	}
	damageFile(t, src)
	if data, err := s.ReadShared(ctx, m, "f"); err != nil || string(data) != string(sharedData("f")) {
		t.Fatalf("after the source was damaged, ReadShared f = %q, %v", data, err)
	}
}

// TestCopySharedCopiesLocalFiles: a restore gets its own copy of every
// shared file (never a hard link), so damage to the store's file never
// reaches a database laid out from it, nor does the store writing a file
// of the same name again or deleting it.
func TestCopySharedCopiesLocalFiles(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := writeIncremental(t, s, 1, "a", "b")
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := s.CopyShared(ctx, m, name, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := os.Stat(filepath.Join(root, sharedDir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	placed, err := os.Stat(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(stored, placed) {
		t.Fatal("CopyShared linked the store's file into the database")
	}
	damageFile(t, filepath.Join(root, sharedDir, "a"))
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != string(sharedData("a")) {
		t.Fatalf("damaging the stored file changed the placed one to %q", got)
	}
	if err := s.c.b.putShared(ctx, "a", strings.NewReader("other contents"), int64(len("other contents"))); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != string(sharedData("a")) {
		t.Fatalf("rewriting the stored file changed the placed one to %q", got)
	}
	writeIncremental(t, s, 2, "c")
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, sharedDir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("retention kept b (%v)", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b")); string(got) != string(sharedData("b")) {
		t.Fatalf("after retention the placed b holds %q", got)
	}
}

// damageFile flips a byte of the file at p in place (the same inode, as
// a failing disk or a stray write would).
func damageFile(t *testing.T, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x55
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
}

func testSharedFromFile(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	_, m := commitFromFile(t, s)
	if got, want := m.Shared["f"], (SharedFileInfo{Size: int64(len(sharedData("f"))), CRC32C: checksum(sharedData("f")), Checkpoint: 1}); got != want {
		t.Fatalf("manifest records %+v for f, want %+v", got, want)
	}
	if _, ok := m.Shared["g"]; ok {
		t.Fatal("the failed WriteSharedFile is in the manifest")
	}
	m = wantLatest(t, b.open(slog.New(slog.DiscardHandler)), 1)
	if data, err := s.ReadShared(ctx, m, "f"); err != nil || string(data) != string(sharedData("f")) {
		t.Fatalf("ReadShared f = %d bytes, %v", len(data), err)
	}
}

// commitFromFile commits checkpoint 1 with shared file f written from a
// local file by WriteSharedFile (and a failed WriteSharedFile of g, from
// a missing file), and returns the local file's path and the manifest.
func commitFromFile(t *testing.T, s Store) (string, *Manifest) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "000007.sst")
	if err := os.WriteFile(src, sharedData("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	if err := w.WriteSharedFile(ctx, "f", src); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSharedFile(ctx, "g", filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("WriteSharedFile of a missing file succeeded")
	}
	m, err := w.Commit(ctx, Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	return src, m
}
