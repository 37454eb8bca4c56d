package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/s3test"
)

// backing is the storage under a store, with the hooks the conformance
// suite needs to damage it behind the store's back.
type backing struct {
	// open returns a new store instance over the storage (as after a
	// process restart).
	open func(log *slog.Logger) Store
	// mutate replaces file name of checkpoint directory dir with fn(old)
	// (fn returning nil deletes it) and reports whether the file existed.
	mutate func(dir, name string, fn func([]byte) []byte) bool
	// residue lists the files stored under dir.
	residue func(dir string) []string
	// failReads makes every read of a file under dir fail with an I/O
	// error (a transient fault, not damage).
	failReads func(dir string)
}

// backings are the stores the conformance suite runs against.
var backings = map[string]func(t *testing.T) backing{
	"local": func(t *testing.T) backing {
		root := t.TempDir()
		ffs := newFaultFS(OSFS{})
		return backing{
			open: func(log *slog.Logger) Store {
				s, err := NewLocal(root, WithLogger(log), WithFS(ffs))
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			mutate: func(dir, name string, fn func([]byte) []byte) bool {
				p := filepath.Join(root, dir, name)
				old, err := os.ReadFile(p)
				if errors.Is(err, fs.ErrNotExist) {
					return false
				}
				if err != nil {
					t.Fatal(err)
				}
				if nw := fn(old); nw == nil {
					err = os.Remove(p)
				} else {
					err = os.WriteFile(p, nw, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				return true
			},
			residue: func(dir string) []string {
				entries, err := os.ReadDir(filepath.Join(root, dir))
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				return names
			},
			failReads: func(dir string) {
				ffs.mu.Lock()
				ffs.fail = func(op, name string) error {
					if op == "open" && strings.Contains(name, string(filepath.Separator)+dir+string(filepath.Separator)) {
						return syscall.EIO
					}
					return nil
				}
				ffs.mu.Unlock()
			},
		}
	},
	"memfs": func(t *testing.T) backing {
		mfs := newMemFS()
		if err := mfs.MkdirAll("/data/ckpt"); err != nil {
			t.Fatal(err)
		}
		ffs := newFaultFS(mfs)
		return backing{
			open: func(log *slog.Logger) Store {
				s, err := NewLocal("/data/ckpt", WithLogger(log), WithFS(ffs))
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			mutate: func(dir, name string, fn func([]byte) []byte) bool {
				mfs.mu.Lock()
				defer mfs.mu.Unlock()
				parent, node, base := mfs.lookup("/data/ckpt/" + dir + "/" + name)
				if node == nil {
					return false
				}
				if nw := fn(slices.Clone(node.data)); nw == nil {
					delete(parent.entries, base)
				} else {
					node.data = nw
				}
				return true
			},
			residue: func(dir string) []string {
				entries, err := mfs.ReadDir("/data/ckpt/" + dir)
				if err != nil {
					return nil
				}
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				return names
			},
			failReads: func(dir string) {
				ffs.mu.Lock()
				ffs.fail = func(op, name string) error {
					if op == "open" && strings.Contains(name, "/"+dir+"/") {
						return syscall.EIO
					}
					return nil
				}
				ffs.mu.Unlock()
			},
		}
	},
	"s3": func(t *testing.T) backing {
		srv := s3test.Require(t)
		proxy := srv.Proxy()
		prefix := srv.Prefix() + "/checkpoints"
		return backing{
			open: func(log *slog.Logger) Store { return s3Store(t, proxy.URL, srv, prefix, WithLogger(log)) },
			mutate: func(dir, name string, fn func([]byte) []byte) bool {
				return srv.Mutate(prefix+"/"+dir+"/"+name, fn)
			},
			residue: func(dir string) []string {
				var names []string
				for _, k := range srv.Keys(prefix + "/" + dir + "/") {
					names = append(names, strings.TrimPrefix(k, prefix+"/"+dir+"/"))
				}
				return names
			},
			failReads: func(dir string) {
				proxy.SetRule(func(r *http.Request, key string) s3test.Fault {
					if r.Method == http.MethodGet && strings.Contains(key, "/"+dir+"/") {
						return s3test.Fault{Status: http.StatusServiceUnavailable}
					}
					return s3test.Fault{}
				})
			},
		}
	},
}

// conformance is the behaviour every Store must show.
var conformance = []struct {
	name string
	fn   func(t *testing.T, b backing)
}{
	{"RoundTrip", testRoundTrip},
	{"Empty", testEmpty},
	{"ChecksumMismatch", testChecksumMismatch},
	{"TruncatedDataFile", testTruncatedDataFile},
	{"GrownDataFile", testGrownDataFile},
	{"MissingDataFile", testMissingDataFile},
	{"DamagedManifest", testDamagedManifest},
	{"ManifestOfAnotherCheckpoint", testManifestOfAnotherCheckpoint},
	{"IncompleteSkipped", testIncompleteSkipped},
	{"Abort", testAbort},
	{"WriterLifecycle", testWriterLifecycle},
	{"InvalidManifestKeepsWriterOpen", testInvalidManifest},
	{"Retention", testRetention},
	{"RetentionKeepsLastIntact", testRetentionKeepsLastIntact},
	{"Savepoints", testSavepoints},
	{"BeginConflicts", testBeginConflicts},
	{"Delete", testDelete},
	{"IOErrorIsNotDamage", testIOErrorIsNotDamage},
	{"Canceled", testCanceled},
	{"ConcurrentWriteFile", testConcurrentWriteFile},
	{"ConcurrentListDuringWrite", testConcurrentListDuringWrite},
}

func TestConformance(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(backings)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.fn(t, backings[name](t)) })
			}
		})
	}
}

var ctx = context.Background()

func ids(t *testing.T, s Store) []Entry {
	t.Helper()
	es, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return es
}

func wantList(t *testing.T, s Store, want ...Entry) {
	t.Helper()
	if got := ids(t, s); !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

func cp(id int64) Entry { return Entry{ID: id, Kind: Checkpoint} }
func sp(id int64) Entry { return Entry{ID: id, Kind: Savepoint} }

func wantLatest(t *testing.T, s Store, id int64) *Manifest {
	t.Helper()
	m, err := s.Latest(ctx)
	if err != nil {
		t.Fatalf("Latest: %v (want checkpoint %d)", err, id)
	}
	if m.ID != id {
		t.Fatalf("Latest = checkpoint %d, want %d", m.ID, id)
	}
	return m
}

func wantErr(t *testing.T, err, target error, contains ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not mention %q", err, c)
		}
	}
}

// wantWarning checks that a log line names the checkpoint and contains
// every part of the reason.
func wantWarning(t *testing.T, logs *logBuf, id int64, reason ...string) {
	t.Helper()
	parts := append([]string{"level=WARN", fmt.Sprintf("checkpoint=%d ", id)}, reason...)
	if len(logs.lines(parts...)) == 0 {
		t.Fatalf("no warning with %q in log:\n%s", parts, logs)
	}
}

func testRoundTrip(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	m, files := writeCheckpoint(t, s, 1, Checkpoint)
	if m.ID != 1 || m.Kind != Checkpoint || m.JobID != "job-1" || m.Properties["mode"] != "exactly-once" {
		t.Fatalf("committed manifest header = %+v", m)
	}
	if len(m.Files) != len(files) {
		t.Fatalf("manifest lists %d files, wrote %d", len(m.Files), len(files))
	}
	for name, data := range files {
		if fi := m.Files[name]; fi.Size != int64(len(data)) || fi.CRC32C != checksum(data) {
			t.Fatalf("Files[%q] = %+v, want size %d crc %08x", name, fi, len(data), checksum(data))
		}
	}
	opened, err := s.Open(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(opened, m) {
		t.Fatalf("Open = %+v\nCommit returned %+v", opened, m)
	}
	for name, data := range files {
		got, err := s.ReadFile(ctx, opened, name)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadFile(%q) = %q, %v; want %q", name, got, err, data)
		}
	}
	// Whole key groups, from both layouts.
	op := opened.Operator("window")
	if op == nil || opened.Operator("missing") != nil {
		t.Fatal("Operator lookup")
	}
	for kg := range 8 {
		sl, ok := op.KeyGroup(kg)
		if !ok {
			t.Fatalf("key group %d not found", kg)
		}
		data, err := s.ReadFile(ctx, opened, sl.File)
		if err != nil {
			t.Fatal(err)
		}
		part, err := sl.Of(data)
		if err != nil || !bytes.Equal(part, keyGroupData(1, kg)) {
			t.Fatalf("key group %d = %q, %v; want %q", kg, part, err, keyGroupData(1, kg))
		}
	}
	if _, ok := op.KeyGroup(8); ok {
		t.Fatal("key group 8 found")
	}
	_, err = s.ReadFile(ctx, opened, "nope")
	wantErr(t, err, ErrNotFound, "nope")

	wantList(t, s, cp(1))
	if got := wantLatest(t, s, 1); !reflect.DeepEqual(got, m) {
		t.Fatalf("Latest = %+v, want %+v", got, m)
	}
	// A new instance (a restart) sees the same.
	if got := wantLatest(t, b.open(log), 1); !reflect.DeepEqual(got, m) {
		t.Fatalf("Latest after restart = %+v, want %+v", got, m)
	}
	if logs.String() != "" {
		t.Fatalf("unexpected log output:\n%s", logs)
	}
}

func testEmpty(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	_, err := s.Latest(ctx)
	wantErr(t, err, ErrNoCheckpoint)
	wantList(t, s)
	_, err = s.Open(ctx, 5)
	wantErr(t, err, ErrNotFound, "chk-5", "savepoint-5")
	wantErr(t, s.Delete(ctx, 5), ErrNotFound, "chk-5")
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReadFile(ctx, nil, "x")
	if err == nil {
		t.Fatal("ReadFile with a nil manifest succeeded")
	}
}

// damage writes checkpoints 1 and 2, applies fn to file name of
// checkpoint 2 and checks that Latest (on a fresh instance) falls back to 1
// with a warning containing reason, and that reading the file fails with
// ErrCorrupt.
func damage(t *testing.T, b backing, name string, fn func([]byte) []byte, reason ...string) {
	t.Helper()
	log, logs := newLogger()
	s := b.open(log)
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 2, Checkpoint)
	if !b.mutate("chk-2", name, fn) {
		t.Fatalf("no file %q to damage", name)
	}
	s = b.open(log)
	wantLatest(t, s, 1)
	wantWarning(t, logs, 2, reason...)
	if m, err := s.Open(ctx, 2); err == nil {
		_, err = s.ReadFile(ctx, m, name)
		wantErr(t, err, ErrCorrupt, append([]string{name}, reason...)...)
	}
	// The damaged checkpoint is still listed (List does not verify).
	wantList(t, s, cp(1), cp(2))
}

func testChecksumMismatch(t *testing.T, b backing) {
	damage(t, b, "window-0.kg", func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d }, "window-0.kg", "checksum")
}

func testTruncatedDataFile(t *testing.T, b backing) {
	damage(t, b, "source-1.op", func(d []byte) []byte { return d[:len(d)/2] }, "source-1.op", "truncated")
}

func testGrownDataFile(t *testing.T, b backing) {
	damage(t, b, "window-kg-6", func(d []byte) []byte { return append(d, 'x') }, "window-kg-6", "longer than recorded")
}

func testMissingDataFile(t *testing.T, b backing) {
	damage(t, b, "window-kg-5", func([]byte) []byte { return nil }, "window-kg-5", "missing")
}

func testDamagedManifest(t *testing.T, b backing) {
	cases := []struct {
		name   string
		fn     func([]byte) []byte
		reason string
	}{
		{"truncated", func(d []byte) []byte { return d[:len(d)/2] }, "not valid JSON"},
		{"empty", func([]byte) []byte { return []byte{} }, "not valid JSON"},
		{"bit flip in body", func(d []byte) []byte {
			i := bytes.Index(d, []byte(`"job-1"`))
			d[i+1] = 'J'
			return d
		}, "checksum mismatch"},
		{"future version", func(d []byte) []byte {
			return bytes.Replace(d, []byte(`"version": 1`), []byte(`"version": 9`), 1)
		}, "version 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, logs := newLogger()
			s := b.open(log)
			writeCheckpoint(t, s, 1, Checkpoint)
			writeCheckpoint(t, s, 2, Checkpoint)
			if !b.mutate("chk-2", manifestName, c.fn) {
				t.Fatal("no manifest")
			}
			s = b.open(log)
			wantLatest(t, s, 1)
			wantWarning(t, logs, 2, c.reason)
			_, err := s.Open(ctx, 2)
			wantErr(t, err, ErrCorrupt, "chk-2", c.reason)
			// Cleanup for the next case.
			for _, id := range []int64{1, 2} {
				if err := s.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func testManifestOfAnotherCheckpoint(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 2, Checkpoint)
	var m1 []byte
	b.mutate("chk-1", manifestName, func(d []byte) []byte { m1 = d; return d })
	b.mutate("chk-2", manifestName, func([]byte) []byte { return m1 })
	wantLatest(t, s, 1)
	wantWarning(t, logs, 2, "describes checkpoint 1")
}

func testIncompleteSkipped(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	writeCheckpoint(t, s, 1, Checkpoint)
	w, err := s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := w.WriteFile(ctx, name, fileData(2, name, 100)); err != nil {
			t.Fatal(err)
		}
	}
	// While the writer is open, its own store reports it in progress and
	// skips it silently.
	_, err = s.Open(ctx, 2)
	wantErr(t, err, ErrInProgress)
	wantLatest(t, s, 1)
	if logs.String() != "" {
		t.Fatalf("unexpected warning for a checkpoint in progress:\n%s", logs)
	}

	// The process dies without Commit or Abort: a new instance finds an
	// incomplete checkpoint 2 and falls back to 1.
	s = b.open(log)
	wantLatest(t, s, 1)
	wantWarning(t, logs, 2, "incomplete")
	wantList(t, s, cp(1))
	_, err = s.Open(ctx, 2)
	wantErr(t, err, ErrIncomplete, "chk-2")

	// Retrying checkpoint 2 clears the leftovers.
	w, err = s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "c", []byte("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, Manifest{}); err != nil {
		t.Fatal(err)
	}
	if got := b.residue("chk-2"); !slices.Equal(got, []string{manifestName, "c"}) {
		t.Fatalf("chk-2 holds %q, want only c and the manifest", got)
	}
	wantLatest(t, s, 2)
}

func testAbort(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := w.WriteFile(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.residue("chk-1"); len(got) != 0 {
		t.Fatalf("abort left %q", got)
	}
	_, err = s.Open(ctx, 1)
	wantErr(t, err, ErrNotFound)
	wantErr(t, w.WriteFile(ctx, "c", nil), ErrClosed)
	_, err = w.Commit(ctx, Manifest{})
	wantErr(t, err, ErrClosed)
	if err := w.Abort(ctx); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	writeCheckpoint(t, s, 1, Checkpoint) // the id is free again
}

func testWriterLifecycle(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "../x", "a/b", `a\b`, "_manifest.json", ".manifest.json.tmp", "_x", ".x", "é", strings.Repeat("a", MaxNameLen+1)} {
		if err := w.WriteFile(ctx, bad, nil); err == nil {
			t.Fatalf("WriteFile(%q) succeeded", bad)
		}
	}
	if err := w.WriteFile(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "a", []byte("2")); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate WriteFile: %v", err)
	}
	m, err := w.Commit(ctx, Manifest{ID: 99, Kind: Savepoint, Files: map[string]FileInfo{"zzz": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 1 || m.Kind != Checkpoint || len(m.Files) != 1 || m.CreatedAt.IsZero() {
		t.Fatalf("Commit did not set ID, Kind, Files, CreatedAt: %+v", m)
	}
	wantErr(t, w.WriteFile(ctx, "b", nil), ErrClosed)
	_, err = w.Commit(ctx, Manifest{})
	wantErr(t, err, ErrClosed)
	if err := w.Abort(ctx); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	got := wantLatest(t, s, 1)
	if data, err := s.ReadFile(ctx, got, "a"); err != nil || string(data) != "1" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
}

func testInvalidManifest(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "a", []byte("aaaa")); err != nil {
		t.Fatal(err)
	}
	m := Manifest{Operators: []OperatorState{{UID: "op", Parallelism: 1, MaxParallelism: 4, Subtasks: []SubtaskState{
		{Index: 0, OperatorState: "a", KeyedState: []KeyGroupSlice{{KeyGroup: 1, File: "b", Length: 2}}},
	}}}}
	_, err = w.Commit(ctx, m)
	if err == nil || !strings.Contains(err.Error(), `"b" was not written`) {
		t.Fatalf("Commit with an unwritten file: %v", err)
	}
	wantList(t, s)
	if err := w.WriteFile(ctx, "b", []byte("bb")); err != nil {
		t.Fatalf("writer closed after an invalid manifest: %v", err)
	}
	if _, err := w.Commit(ctx, m); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, cp(1))
}

func testRetention(t *testing.T, b backing) {
	log, _ := newLogger()
	// Leftovers of crashed attempts at 2 (old) and 8 (newer than anything).
	for _, id := range []int64{2, 8} {
		w, err := b.open(log).Begin(ctx, id, Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(ctx, "x", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	s := b.open(log)
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 3, Savepoint)
	for id := int64(4); id <= 7; id++ {
		writeCheckpoint(t, s, id, Checkpoint)
	}
	if err := s.Retain(ctx, 0); err == nil {
		t.Fatal("Retain(0) succeeded")
	}
	if err := s.Retain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, cp(1), sp(3), cp(4), cp(5), cp(6), cp(7))
	if err := s.Retain(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, sp(3), cp(6), cp(7))
	for _, dir := range []string{"chk-1", "chk-2", "chk-4", "chk-5"} {
		if got := b.residue(dir); len(got) != 0 {
			t.Fatalf("Retain left %s: %q", dir, got)
		}
	}
	if got := b.residue("chk-8"); len(got) == 0 {
		t.Fatal("Retain deleted the newer incomplete checkpoint 8")
	}
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, sp(3), cp(7))
	wantLatest(t, s, 7)
	if _, err := s.Open(ctx, 3); err != nil {
		t.Fatalf("savepoint gone: %v", err)
	}
}

func testRetentionKeepsLastIntact(t *testing.T, b backing) {
	log, _ := newLogger()
	s := b.open(log)
	for id := int64(1); id <= 3; id++ {
		writeCheckpoint(t, s, id, Checkpoint)
	}
	b.mutate("chk-3", manifestName, func(d []byte) []byte { return d[:10] })
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// 3 is unusable, so 2 is the one kept; 3 is not older than it.
	wantList(t, s, cp(2), cp(3))
	wantLatest(t, s, 2)
}

func testSavepoints(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeCheckpoint(t, s, 1, Checkpoint)
	m2, files := writeCheckpoint(t, s, 2, Savepoint)
	wantLatest(t, s, 1) // never a savepoint
	wantList(t, s, cp(1), sp(2))
	got, err := s.Open(ctx, 2)
	if err != nil || !reflect.DeepEqual(got, m2) {
		t.Fatalf("Open(2) = %+v, %v", got, err)
	}
	if got.Kind != Savepoint {
		t.Fatalf("kind %v", got.Kind)
	}
	if data, err := s.ReadFile(ctx, got, "source-1.op"); err != nil || !bytes.Equal(data, files["source-1.op"]) {
		t.Fatalf("ReadFile from savepoint: %v", err)
	}
	if len(b.residue("savepoint-2")) == 0 {
		t.Fatal("savepoint not stored under savepoint-2")
	}
	_, err = s.Begin(ctx, 1, Savepoint)
	wantErr(t, err, ErrExists, "checkpoint 1")
	_, err = s.Begin(ctx, 2, Checkpoint)
	wantErr(t, err, ErrExists, "savepoint 2")
	if err := s.Delete(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, cp(1))
}

func testBeginConflicts(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 5, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Begin(ctx, 5, Savepoint)
	wantErr(t, err, ErrInProgress)
	wantErr(t, s.Delete(ctx, 5), ErrInProgress)
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	w, err = s.Begin(ctx, 5, Savepoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, -1, Checkpoint); err == nil {
		t.Fatal("Begin(-1) succeeded")
	}
	if _, err := s.Begin(ctx, 1, Kind(0)); err == nil {
		t.Fatal("Begin with kind 0 succeeded")
	}
}

func testDelete(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 2, Checkpoint)
	if err := s.Delete(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, cp(1))
	if got := b.residue("chk-2"); len(got) != 0 {
		t.Fatalf("Delete left %q", got)
	}
	_, err := s.Open(ctx, 2)
	wantErr(t, err, ErrNotFound)
	wantErr(t, s.Delete(ctx, 2), ErrNotFound)
	wantLatest(t, s, 1)
}

// testIOErrorIsNotDamage: a transient read failure must not make Latest
// silently restore an older checkpoint.
func testIOErrorIsNotDamage(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 2, Checkpoint)
	b.failReads("chk-2")
	m, err := s.Latest(ctx)
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Latest with failing reads = %v, %v; want the I/O error", m, err)
	}
	if logs.String() != "" {
		t.Fatalf("unexpected warning:\n%s", logs)
	}
}

func testCanceled(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	writeCheckpoint(t, s, 1, Checkpoint)
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Latest(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Latest with a canceled context: %v", err)
	}
	if _, err := s.Begin(c, 2, Checkpoint); !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin with a canceled context: %v", err)
	}
	// The failed Begin did not leave id 2 in progress.
	w, err := s.Begin(ctx, 2, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(c, "a", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteFile with a canceled context: %v", err)
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentWriteFile(t *testing.T, b backing) {
	s := b.open(slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("f-%d", i)
			if err := w.WriteFile(ctx, name, fileData(1, name, 50*i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	m, err := w.Commit(ctx, Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != n {
		t.Fatalf("%d files in manifest, want %d", len(m.Files), n)
	}
	for name := range m.Files {
		var i int
		fmt.Sscanf(name, "f-%d", &i)
		if data, err := s.ReadFile(ctx, m, name); err != nil || !bytes.Equal(data, fileData(1, name, 50*i)) {
			t.Fatalf("ReadFile(%q): %v", name, err)
		}
	}
}

// testConcurrentListDuringWrite: readers polling List, Open and Latest
// while checkpoints are written never see a checkpoint that is not
// complete and intact, and never lose one that was.
func testConcurrentListDuringWrite(t *testing.T, b backing) {
	log, logs := newLogger()
	s := b.open(log)
	const checkpoints, filesPer = 6, 6
	var committed atomic.Int64 // newest id whose Commit returned
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for id := int64(1); id <= checkpoints; id++ {
			w, err := s.Begin(ctx, id, Checkpoint)
			if err != nil {
				t.Error(err)
				return
			}
			var fw sync.WaitGroup
			for i := range filesPer {
				fw.Go(func() {
					name := fmt.Sprintf("f%d", i)
					if err := w.WriteFile(ctx, name, fileData(id, name, 200*i+1)); err != nil {
						t.Error(err)
					}
				})
			}
			fw.Wait()
			if _, err := w.Commit(ctx, Manifest{JobID: "j"}); err != nil {
				t.Error(err)
				return
			}
			committed.Store(id)
		}
	})
	reader := func() {
		var prev []Entry
		for {
			select {
			case <-done:
				return
			default:
			}
			lo := committed.Load()
			es, err := s.List(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			// List is no snapshot: a checkpoint committed while it runs
			// may be missing, but everything committed before it started
			// must be there.
			for id := int64(1); id <= lo; id++ {
				if !slices.Contains(es, cp(id)) {
					t.Errorf("List = %v after %d commits", es, lo)
					return
				}
			}
			for _, e := range prev {
				if !slices.Contains(es, e) {
					t.Errorf("List = %v lost %v (before: %v)", es, e, prev)
					return
				}
			}
			for _, e := range es {
				if e.Kind != Checkpoint || e.ID < 1 || e.ID > checkpoints {
					t.Errorf("List = %v", es)
					return
				}
				if _, err := s.Open(ctx, e.ID); err != nil {
					t.Errorf("listed checkpoint %d does not open: %v", e.ID, err)
					return
				}
			}
			prev = es
			m, err := s.Latest(ctx)
			if errors.Is(err, ErrNoCheckpoint) && lo == 0 {
				continue
			}
			if err != nil || m.ID < lo || len(m.Files) != filesPer {
				t.Errorf("Latest = %+v, %v after %d commits", m, err, lo)
				return
			}
			for name := range m.Files {
				var i int
				fmt.Sscanf(name, "f%d", &i)
				if data, err := s.ReadFile(ctx, m, name); err != nil || !bytes.Equal(data, fileData(m.ID, name, 200*i+1)) {
					t.Errorf("checkpoint %d file %s: %v", m.ID, name, err)
					return
				}
			}
		}
	}
	for range 3 {
		wg.Go(reader)
	}
	wg.Wait()
	if logs.String() != "" {
		t.Fatalf("readers logged warnings about checkpoints in progress:\n%s", logs)
	}
	wantList(t, s, cp(1), cp(2), cp(3), cp(4), cp(5), cp(6))
}
