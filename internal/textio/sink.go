package textio

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FileTxn is a transaction of the exactly-once file sink: one part file.
type FileTxn struct {
	Dir  string
	Name string
	f    *os.File
}

// NewFileSink writes the lines format makes of each record into dir.
func NewFileSink[T any](dir string, format func(T) []byte) *FileSink[T] {
	return &FileSink[T]{dir: dir, format: format, seq: map[int]int{}}
}

// FileSink is the two-phase-commit sink of part files: it writes lines to
// ".inprogress-NAME" while a transaction is open, renames it
// ".pending-NAME" once pre-committed and NAME once committed.
type FileSink[T any] struct {
	dir    string
	format func(T) []byte
	mu     sync.Mutex
	seq    map[int]int // per subtask: the next part number
}

// BeginTransaction implements the two-phase-commit sink.
func (s *FileSink[T]) BeginTransaction(subtask int) (*FileTxn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, started := s.seq[subtask]
	if !started {
		// Files an earlier attempt of this subtask left uncommitted
		// (restored pending ones were committed before this call).
		prefix := "part-" + strconv.Itoa(subtask) + "-"
		for _, pat := range []string{".inprogress-" + prefix + "*", ".pending-" + prefix + "*"} {
			stale, _ := filepath.Glob(filepath.Join(s.dir, pat))
			for _, f := range stale {
				if err := os.Remove(f); err != nil {
					return nil, err
				}
			}
		}
	}
	// Skip names a previous attempt already committed or pre-committed.
	for {
		name := "part-" + strconv.Itoa(subtask) + "-" + strconv.Itoa(n)
		_, e1 := os.Stat(filepath.Join(s.dir, name))
		_, e2 := os.Stat(filepath.Join(s.dir, ".pending-"+name))
		if os.IsNotExist(e1) && os.IsNotExist(e2) {
			break
		}
		n++
	}
	s.seq[subtask] = n + 1
	name := "part-" + strconv.Itoa(subtask) + "-" + strconv.Itoa(n)
	f, err := os.Create(filepath.Join(s.dir, ".inprogress-"+name))
	if err != nil {
		return nil, err
	}
	return &FileTxn{Dir: s.dir, Name: name, f: f}, nil
}

// Write implements the two-phase-commit sink.
func (s *FileSink[T]) Write(t *FileTxn, v T, _ int64) error {
	line := append(s.format(v), '\n')
	_, err := t.f.Write(line)
	return err
}

// PreCommit implements the two-phase-commit sink.
func (s *FileSink[T]) PreCommit(t *FileTxn) error {
	if t.f == nil {
		return nil
	}
	if err := t.f.Sync(); err != nil {
		return err
	}
	if err := t.f.Close(); err != nil {
		return err
	}
	t.f = nil
	return os.Rename(filepath.Join(t.Dir, ".inprogress-"+t.Name), filepath.Join(t.Dir, ".pending-"+t.Name))
}

// Commit implements the two-phase-commit sink.
func (s *FileSink[T]) Commit(t *FileTxn) error {
	err := os.Rename(filepath.Join(t.Dir, ".pending-"+t.Name), filepath.Join(t.Dir, t.Name))
	if os.IsNotExist(err) {
		if _, serr := os.Stat(filepath.Join(t.Dir, t.Name)); serr == nil {
			return nil // committed before
		}
	}
	return err
}

// Abort implements the two-phase-commit sink.
func (s *FileSink[T]) Abort(t *FileTxn) error {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	for _, n := range []string{".inprogress-" + t.Name, ".pending-" + t.Name} {
		if err := os.Remove(filepath.Join(t.Dir, n)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// ReadCommittedLines returns the lines of every committed part file in dir
// (names not starting with "."), part files in name order.
func ReadCommittedLines(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out, nil
}
