package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logBuf collects log output; safe for concurrent use.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines returns the logged lines that contain every one of parts.
func (l *logBuf) lines(parts ...string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func newLogger() (*slog.Logger, *logBuf) {
	lb := new(logBuf)
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

// fileData is the deterministic contents of file name of checkpoint id.
func fileData(id int64, name string, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "[%d %s %d]", id, name, i)
	}
	return b.Bytes()[:n]
}

// writeCheckpoint writes and commits checkpoint id with both keyed-state
// layouts: operator "window" subtask 0 keeps key groups 0-3 in one file at
// offsets, subtask 1 writes one file per key group 4-7; operator "source"
// has operator state per subtask; plus a channel-state file and an empty
// file. It returns the committed manifest and every file's contents.
func writeCheckpoint(t testing.TB, s Store, id int64, kind Kind) (*Manifest, map[string][]byte) {
	t.Helper()
	m, files, err := tryCheckpoint(context.Background(), s, id, kind)
	if err != nil {
		t.Fatalf("writing %s %d: %v", kind, id, err)
	}
	return m, files
}

// tryCheckpoint is writeCheckpoint returning the first error.
func tryCheckpoint(ctx context.Context, s Store, id int64, kind Kind) (*Manifest, map[string][]byte, error) {
	w, err := s.Begin(ctx, id, kind)
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{}
	var werr error
	put := func(name string, data []byte) {
		if werr == nil {
			werr = w.WriteFile(ctx, name, data)
			files[name] = data
		}
	}
	put("source-0.op", fileData(id, "source-0", 37))
	put("source-1.op", fileData(id, "source-1", 1000))
	put("window-1.op", []byte{})
	put("window-0.chan", fileData(id, "chan", 64))
	var sub0 []byte
	var slices0 []KeyGroupSlice
	for kg := 0; kg < 4; kg++ {
		d := keyGroupData(id, kg)
		slices0 = append(slices0, KeyGroupSlice{KeyGroup: kg, File: "window-0.kg", Offset: int64(len(sub0)), Length: int64(len(d))})
		sub0 = append(sub0, d...)
	}
	put("window-0.kg", sub0)
	var slices1 []KeyGroupSlice
	for kg := 4; kg < 8; kg++ {
		name := fmt.Sprintf("window-kg-%d", kg)
		d := keyGroupData(id, kg)
		put(name, d)
		slices1 = append(slices1, KeyGroupSlice{KeyGroup: kg, File: name, Length: int64(len(d))})
	}
	if werr != nil {
		return nil, nil, werr
	}
	m := Manifest{
		JobID:     "job-1",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Operators: []OperatorState{
			{UID: "source", Parallelism: 2, Subtasks: []SubtaskState{
				{Index: 0, OperatorState: "source-0.op"},
				{Index: 1, OperatorState: "source-1.op"},
			}},
			{UID: "window", Parallelism: 2, MaxParallelism: 8, Subtasks: []SubtaskState{
				{Index: 0, ChannelState: "window-0.chan", KeyedState: slices0},
				{Index: 1, OperatorState: "window-1.op", KeyedState: slices1},
			}},
		},
		Properties: map[string]string{"mode": "exactly-once"},
	}
	got, err := w.Commit(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	return got, files, nil
}

// checkFiles reads every file of m and compares it with what
// tryCheckpoint wrote for m.ID.
func checkFiles(ctx context.Context, s Store, m *Manifest) error {
	want := map[string][]byte{
		"source-0.op":   fileData(m.ID, "source-0", 37),
		"source-1.op":   fileData(m.ID, "source-1", 1000),
		"window-1.op":   {},
		"window-0.chan": fileData(m.ID, "chan", 64),
	}
	for kg := 0; kg < 8; kg++ {
		d := keyGroupData(m.ID, kg)
		if kg < 4 {
			want["window-0.kg"] = append(want["window-0.kg"], d...)
		} else {
			want[fmt.Sprintf("window-kg-%d", kg)] = d
		}
	}
	if len(m.Files) != len(want) {
		return fmt.Errorf("checkpoint %d has %d files, want %d", m.ID, len(m.Files), len(want))
	}
	for name, w := range want {
		got, err := s.ReadFile(ctx, m, name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, w) {
			return fmt.Errorf("checkpoint %d file %s = %q, want %q", m.ID, name, got, w)
		}
	}
	return nil
}

// keyGroupData is what writeCheckpoint stored for key group kg.
func keyGroupData(id int64, kg int) []byte {
	if kg < 4 {
		return fileData(id, fmt.Sprintf("kg%d", kg), 10+kg*7)
	}
	return fileData(id, fmt.Sprintf("kg%d", kg), 5+kg)
}
