package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestNewLocalDirectory(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "no", "such", "dir")
	_, err := NewLocal(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("NewLocal(missing) = %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("NewLocal(file) = %v", err)
	}
	if _, err := NewLocal(""); err == nil {
		t.Fatal("NewLocal(\"\") succeeded")
	}
	s, err := NewLocal(missing, WithCreateDir())
	if err != nil {
		t.Fatal(err)
	}
	writeCheckpoint(t, s, 1, Checkpoint)
	// Unrelated entries in the directory are ignored.
	for _, name := range []string{"chk-007", "chk-x", "notes.txt"} {
		if err := os.Mkdir(filepath.Join(missing, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(missing, "chk-9"), []byte("a file, not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, cp(1))
	wantLatest(t, s, 1)
}

// TestLocalFormat reads a checkpoint the way FORMAT.md tells a reader
// without this package to, so the document and the code cannot drift apart.
func TestLocalFormat(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	_, files := writeCheckpoint(t, s, 12, Checkpoint)
	writeCheckpoint(t, s, 13, Savepoint)

	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, e.Name())
	}
	if !slices.Equal(dirs, []string{"chk-12", "savepoint-13"}) {
		t.Fatalf("root holds %q", dirs)
	}
	entries, err = os.ReadDir(filepath.Join(root, "chk-12"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"_manifest.json"}
	for name := range files {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("chk-12 holds %q, want %q", names, want)
	}

	raw, err := os.ReadFile(filepath.Join(root, "chk-12", "_manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Format   string          `json:"format"`
		Version  int             `json:"version"`
		CRC32C   uint32          `json:"crc32c"`
		Manifest json.RawMessage `json:"manifest"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	if env.Format != "weir-checkpoint" || env.Version != 1 || crc32.Checksum(env.Manifest, castagnoli) != env.CRC32C {
		t.Fatalf("envelope: format %q version %d crc %d (computed %d)", env.Format, env.Version, env.CRC32C, crc32.Checksum(env.Manifest, castagnoli))
	}
	var m struct {
		ID        int64  `json:"id"`
		Kind      string `json:"kind"`
		JobID     string `json:"job_id"`
		CreatedAt string `json:"created_at"`
		Operators []struct {
			UID            string `json:"uid"`
			Parallelism    int    `json:"parallelism"`
			MaxParallelism int    `json:"max_parallelism"`
			Subtasks       []struct {
				Index         int    `json:"index"`
				OperatorState string `json:"operator_state"`
				ChannelState  string `json:"channel_state"`
				KeyedState    []struct {
					KeyGroup int    `json:"key_group"`
					File     string `json:"file"`
					Offset   int64  `json:"offset"`
					Length   int64  `json:"length"`
				} `json:"keyed_state"`
			} `json:"subtasks"`
		} `json:"operators"`
		Properties map[string]string `json:"properties"`
		Files      map[string]struct {
			Size   int64  `json:"size"`
			CRC32C uint32 `json:"crc32c"`
		} `json:"files"`
	}
	dec := json.NewDecoder(strings.NewReader(string(env.Manifest)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.ID != 12 || m.Kind != "checkpoint" || m.JobID != "job-1" || m.CreatedAt != "2026-01-02T03:04:05.000000006Z" {
		t.Fatalf("manifest header: %+v", m)
	}
	for name, fi := range m.Files {
		data, err := os.ReadFile(filepath.Join(root, "chk-12", name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size != int64(len(data)) || fi.CRC32C != crc32.Checksum(data, castagnoli) {
			t.Fatalf("file %s: recorded %+v", name, fi)
		}
	}
	w := m.Operators[1]
	if w.UID != "window" || w.MaxParallelism != 8 || len(w.Subtasks) != 2 {
		t.Fatalf("operator: %+v", w)
	}
	kg2 := w.Subtasks[0].KeyedState[2]
	data, _ := os.ReadFile(filepath.Join(root, "chk-12", kg2.File))
	if got := data[kg2.Offset : kg2.Offset+kg2.Length]; string(got) != string(keyGroupData(12, 2)) {
		t.Fatalf("key group 2 = %q", got)
	}
	sraw, err := os.ReadFile(filepath.Join(root, "savepoint-13", "_manifest.json"))
	if err != nil || !strings.Contains(string(sraw), `"kind": "savepoint"`) {
		t.Fatalf("savepoint manifest: %v\n%s", err, sraw)
	}
}

func newMemStore(t *testing.T, fsys FS, log *slog.Logger) *Local {
	t.Helper()
	s, err := NewLocal("/ckpt", WithFS(fsys), WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newMem(t *testing.T) *memFS {
	mfs := newMemFS()
	if err := mfs.MkdirAll("/ckpt"); err != nil {
		t.Fatal(err)
	}
	if err := mfs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestLocalWriteFaults injects failures into the writes of checkpoint 2:
// the failure is reported, and neither that store nor one reopened after it
// ever sees checkpoint 2 as complete.
func TestLocalWriteFaults(t *testing.T) {
	eio := syscall.EIO
	cases := []struct {
		name     string
		fail     func(op, name string) error
		short    func(name string) bool
		inCommit bool // the failure hits Commit rather than WriteFile
		want     string
	}{
		{name: "write error", fail: func(op, name string) error {
			if op == "write" && strings.HasSuffix(name, "source-1.op") {
				return eio
			}
			return nil
		}, want: "input/output error"},
		{name: "short write", short: func(name string) bool { return strings.HasSuffix(name, "window-0.kg") }, want: "short write"},
		{name: "fsync error", fail: func(op, name string) error {
			if op == "sync" && strings.HasSuffix(name, "window-kg-7") {
				return eio
			}
			return nil
		}, want: "input/output error"},
		{name: "create error", fail: func(op, name string) error {
			if op == "create" && strings.HasSuffix(name, "window-0.chan") {
				return syscall.ENOSPC
			}
			return nil
		}, want: "no space left"},
		{name: "manifest write error", inCommit: true, fail: func(op, name string) error {
			if op == "write" && strings.HasSuffix(name, tmpManifest) {
				return syscall.ENOSPC
			}
			return nil
		}, want: "no space left"},
		{name: "crash before rename", inCommit: true, fail: func(op, name string) error {
			if op == "rename" {
				return errCrashed
			}
			return nil
		}, want: "injected crash"},
		{name: "dir fsync error after rename", inCommit: true, fail: func(op, name string) error {
			if op == "syncdir" && strings.HasSuffix(name, "chk-2") {
				return eio
			}
			return nil
		}, want: "input/output error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mfs := newMem(t)
			log, logs := newLogger()
			writeCheckpoint(t, newMemStore(t, mfs, log), 1, Checkpoint)
			ffs := newFaultFS(mfs)
			ffs.fail, ffs.short = c.fail, c.short
			s := newMemStore(t, ffs, log)
			_, _, err := tryCheckpoint(ctx, s, 2, Checkpoint)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want %q", err, c.want)
			}
			if got := strings.Contains(err.Error(), "committing"); got != c.inCommit {
				t.Fatalf("error %q: failure in commit = %v, want %v", err, got, c.inCommit)
			}
			wantLatest(t, s, 1)
			// After a restart, 2 is incomplete (or, if only the final
			// directory fsync failed, complete and intact) and never
			// damaged.
			s2 := newMemStore(t, mfs, log)
			m := wantLatestOneOf(t, s2, 1, 2)
			if err := checkFiles(ctx, s2, m); err != nil {
				t.Fatal(err)
			}
			if m.ID == 1 {
				wantWarning(t, logs, 2, "incomplete")
			}
			if strings.Contains(logs.String(), "damaged") {
				t.Fatalf("a failed write left a damaged checkpoint:\n%s", logs)
			}
			// A retry of checkpoint 2 succeeds once the fault is gone.
			ffs.mu.Lock()
			ffs.fail, ffs.short = nil, nil
			ffs.mu.Unlock()
			_, err = s2.Open(ctx, 2)
			if m.ID == 1 && !errors.Is(err, ErrIncomplete) {
				t.Fatalf("Open(2) = %v, want ErrIncomplete", err)
			}
			if m.ID == 1 {
				writeCheckpoint(t, s2, 2, Checkpoint)
			}
			m = wantLatest(t, s2, 2)
			if err := checkFiles(ctx, s2, m); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func wantLatestOneOf(t *testing.T, s Store, ids ...int64) *Manifest {
	t.Helper()
	m, err := s.Latest(ctx)
	if err != nil {
		t.Fatalf("Latest: %v", err)
	}
	if !slices.Contains(ids, m.ID) {
		t.Fatalf("Latest = %d, want one of %v", m.ID, ids)
	}
	return m
}

// TestLocalAbortAfterFailedCommit: after a failed Commit the caller aborts,
// which removes the checkpoint even if its manifest was published.
func TestLocalAbortAfterFailedCommit(t *testing.T) {
	mfs := newMem(t)
	ffs := newFaultFS(mfs)
	ffs.fail = func(op, name string) error {
		if op == "syncdir" && name == "/ckpt" {
			return syscall.EIO // after the manifest's rename
		}
		return nil
	}
	s := newMemStore(t, ffs, slog.New(slog.DiscardHandler))
	w, err := s.Begin(ctx, 1, Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(ctx, "a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, Manifest{}); err == nil {
		t.Fatal("Commit succeeded")
	}
	wantErr(t, w.WriteFile(ctx, "b", nil), ErrClosed)
	if _, err := w.Commit(ctx, Manifest{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Commit: %v", err)
	}
	ffs.mu.Lock()
	ffs.fail = nil
	ffs.mu.Unlock()
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	wantList(t, s)
	if _, err := s.Latest(ctx); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Latest = %v", err)
	}
}

// TestLocalDeleteFault: a Delete that fails before the manifest is gone
// leaves the checkpoint complete; one that fails after leaves it
// incomplete. Never damaged.
func TestLocalDeleteFault(t *testing.T) {
	for _, op := range []string{"remove", "syncdir", "removeall"} {
		t.Run(op, func(t *testing.T) {
			mfs := newMem(t)
			log, logs := newLogger()
			s := newMemStore(t, mfs, log)
			writeCheckpoint(t, s, 1, Checkpoint)
			writeCheckpoint(t, s, 2, Checkpoint)
			ffs := newFaultFS(mfs)
			ffs.fail = func(o, name string) error {
				if o == op {
					return syscall.EIO
				}
				return nil
			}
			if err := newMemStore(t, ffs, log).Delete(ctx, 2); err == nil {
				t.Fatal("Delete succeeded")
			}
			m := wantLatestOneOf(t, newMemStore(t, mfs, log), 1, 2)
			if err := checkFiles(ctx, s, m); err != nil {
				t.Fatal(err)
			}
			if (m.ID == 2) != (op == "remove") {
				t.Fatalf("after failing %s, Latest = %d", op, m.ID)
			}
			if strings.Contains(logs.String(), "damaged") {
				t.Fatalf("a failed Delete left a damaged checkpoint:\n%s", logs)
			}
		})
	}
}

// TestLocalCrashAtEveryStep simulates a power loss at every file system
// operation of writing checkpoint 2 and then retaining only it, with every
// unsynced change surviving or not at random. After the restart, Latest
// must return an intact checkpoint: 2 if its Commit had returned, else 1 or
// 2; every checkpoint that looks complete must be intact; and the store
// must take new checkpoints.
func TestLocalCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	seeds := 4 // seed 0: only durable state survives; others: random
	if testing.Short() {
		seeds = 2
	}
	for crashAt := 0; ; crashAt++ {
		complete := false
		for seed := range seeds {
			mfs := newMem(t)
			writeCheckpoint(t, newMemStore(t, mfs, slog.New(slog.DiscardHandler)), 1, Checkpoint)
			ffs := newFaultFS(mfs)
			ffs.crashAt = crashAt
			var committed, retained bool
			if s, err := NewLocal("/ckpt", WithFS(ffs), WithLogger(slog.New(slog.DiscardHandler))); err == nil {
				_, _, err := tryCheckpoint(ctx, s, 2, Checkpoint)
				committed = err == nil
				retained = committed && s.Retain(ctx, 1) == nil
			}
			complete = ffs.opCount() <= crashAt // no operation failed
			var rng *rand.Rand
			if seed > 0 {
				rng = rand.New(rand.NewPCG(uint64(crashAt), uint64(seed)))
			}
			after := mfs.crash(rng)
			log, logs := newLogger()
			s := newMemStore(t, after, log)
			where := fmt.Sprintf("crash at op %d, seed %d", crashAt, seed)
			m, err := s.Latest(ctx)
			if err != nil {
				t.Fatalf("%s: Latest: %v", where, err)
			}
			if committed && m.ID != 2 || m.ID != 1 && m.ID != 2 {
				t.Fatalf("%s: Latest = %d (committed: %v)", where, m.ID, committed)
			}
			if err := checkFiles(ctx, s, m); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if strings.Contains(logs.String(), "damaged") {
				t.Fatalf("%s: a crash left a damaged checkpoint:\n%s", where, logs)
			}
			// Whatever looks complete is intact.
			for _, e := range ids(t, s) {
				m, err := s.Open(ctx, e.ID)
				if err == nil {
					err = checkFiles(ctx, s, m)
				}
				if err != nil {
					t.Fatalf("%s: listed %v is damaged: %v", where, e, err)
				}
			}
			if retained {
				wantList(t, s, cp(2))
			}
			// The store recovers: the next checkpoint and retention work.
			writeCheckpoint(t, s, 3, Checkpoint)
			if err := s.Retain(ctx, 1); err != nil {
				t.Fatalf("%s: Retain: %v", where, err)
			}
			wantList(t, s, cp(3))
			if complete {
				break
			}
		}
		if complete {
			if crashAt < 40 {
				t.Fatalf("only %d operations: the fault injection is not reaching the store", crashAt)
			}
			return
		}
	}
}

// TestLocalNoTempFilesLeft: after commits, aborts and deletes, no temporary
// or stray file remains.
func TestLocalNoTempFilesLeft(t *testing.T) {
	root := t.TempDir()
	s, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	writeCheckpoint(t, s, 1, Checkpoint)
	writeCheckpoint(t, s, 2, Checkpoint)
	w, _ := s.Begin(ctx, 3, Checkpoint)
	_ = w.WriteFile(ctx, "x", []byte("x"))
	_ = w.Abort(ctx)
	if err := s.Retain(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var all []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		all = append(all, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if strings.Contains(p, "tmp") || strings.Contains(p, "chk-1") || strings.Contains(p, "chk-3") {
			t.Fatalf("stray %s in %q", p, all)
		}
	}
}

// TestFormatDocExample: the example manifest in FORMAT.md is one this
// package writes and reads (its checksum included).
func TestFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatal("no json example in FORMAT.md")
	}
	m, err := decodeManifest([]byte(example), "test")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 42 || m.Kind != Checkpoint || m.Files["source-0.op"].CRC32C != checksum([]byte("offset=1234")) {
		t.Fatalf("example manifest: %+v", m)
	}
	again, err := encodeManifest(m)
	if err != nil || string(again) != example+"\n" {
		t.Fatalf("re-encoding the example differs:\n%s", again)
	}
}
