package file

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Txn is a transaction of the exactly-once file sink: one part file
// per bucket written to (the sink's directory itself when it has no
// bucket assigner).
type Txn struct {
	Dir  string
	Name string
	// Buckets are the bucket directories (relative to Dir) holding a part
	// file Name of this transaction; "" is Dir itself.
	Buckets []string

	files map[string]*partFile // open part files by bucket
	last  string               // the bucket of the previous record
	lastF *partFile
}

// partFile is one open part file of a transaction, written through a
// buffer (a record is a few bytes; a write per record would be a system
// call each).
type partFile struct {
	f *os.File
	w *bufio.Writer
}

// newPartSink returns a sink that writes the lines format makes of each record into dir, or,
// when bucket is not nil, into the bucket directory under dir that bucket
// names for the record.
func newPartSink[T any](dir string, format func(T) []byte, bucket func(v T, ts int64) string) *partSink[T] {
	return &partSink[T]{dir: dir, format: format, bucket: bucket, seq: map[int]int{}}
}

// partSink is the two-phase-commit sink of part files: it writes lines to
// ".inprogress-NAME" while a transaction is open, renames it
// ".pending-NAME" once pre-committed and NAME once committed; with a
// bucket assigner, in the record's bucket directory, one part file per
// bucket and transaction, committed together.
type partSink[T any] struct {
	dir    string
	format func(T) []byte
	bucket func(v T, ts int64) string
	mu     sync.Mutex
	seq    map[int]int // per subtask: the next part number
}

// BeginTransaction implements the two-phase-commit sink.
func (s *partSink[T]) BeginTransaction(subtask int) (*Txn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, started := s.seq[subtask]
	if !started {
		// The first transaction of this subtask in this process: remove the
		// files an earlier attempt left uncommitted (restored pending ones
		// were committed before this call) and number on after the ones it
		// committed.
		next, err := s.clean(subtask)
		if err != nil {
			return nil, err
		}
		n = next
	}
	s.seq[subtask] = n + 1
	t := &Txn{Dir: s.dir, Name: "part-" + strconv.Itoa(subtask) + "-" + strconv.Itoa(n), files: map[string]*partFile{}}
	if s.bucket == nil {
		if _, err := t.open(""); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// clean removes subtask's in-progress and pending part files anywhere under
// the sink's directory and returns 1 + the highest number of its committed
// ones (0 when there are none).
func (s *partSink[T]) clean(subtask int) (int, error) {
	prefix := "part-" + strconv.Itoa(subtask) + "-"
	next := 0
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				next = max(next, n+1)
			}
			return nil
		}
		for _, stale := range []string{".inprogress-", ".pending-"} {
			if strings.HasPrefix(name, stale+prefix) {
				return os.Remove(path)
			}
		}
		return nil
	})
	return next, err
}

// open creates the transaction's part file in bucket.
func (t *Txn) open(bucket string) (*partFile, error) {
	dir := t.Dir
	if bucket != "" {
		if !filepath.IsLocal(filepath.FromSlash(bucket)) {
			return nil, fmt.Errorf("file sink: bucket %q is not a relative path inside the sink's directory", bucket)
		}
		dir = filepath.Join(t.Dir, filepath.FromSlash(bucket))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	f, err := os.Create(filepath.Join(dir, ".inprogress-"+t.Name))
	if err != nil {
		return nil, err
	}
	p := &partFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}
	t.files[bucket] = p
	t.Buckets = append(t.Buckets, bucket)
	return p, nil
}

// path returns the path of the transaction's file in bucket with prefix
// ("", ".inprogress-" or ".pending-").
func (t *Txn) path(bucket, prefix string) string {
	return filepath.Join(t.Dir, filepath.FromSlash(bucket), prefix+t.Name)
}

// Write implements the two-phase-commit sink.
func (s *partSink[T]) Write(t *Txn, v T, ts int64) error {
	var b string
	if s.bucket != nil {
		b = s.bucket(v, ts)
	}
	p := t.lastF
	if p == nil || b != t.last {
		var ok bool
		if p, ok = t.files[b]; !ok {
			var err error
			if p, err = t.open(b); err != nil {
				return err
			}
		}
		t.last, t.lastF = b, p
	}
	p.w.Write(s.format(v))
	return p.w.WriteByte('\n')
}

// PreCommit implements the two-phase-commit sink.
func (s *partSink[T]) PreCommit(t *Txn) error {
	for _, b := range t.Buckets {
		p := t.files[b]
		if p == nil {
			continue // pre-committed before
		}
		if err := p.w.Flush(); err != nil {
			return err
		}
		if err := p.f.Sync(); err != nil {
			return err
		}
		if err := p.f.Close(); err != nil {
			return err
		}
		delete(t.files, b)
		if err := os.Rename(t.path(b, ".inprogress-"), t.path(b, ".pending-")); err != nil {
			return err
		}
	}
	t.lastF = nil
	return nil
}

// Commit implements the two-phase-commit sink.
func (s *partSink[T]) Commit(t *Txn) error {
	for _, b := range t.Buckets {
		err := os.Rename(t.path(b, ".pending-"), t.path(b, ""))
		if os.IsNotExist(err) {
			if _, serr := os.Stat(t.path(b, "")); serr == nil {
				continue // committed before
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Abort implements the two-phase-commit sink.
func (s *partSink[T]) Abort(t *Txn) error {
	for _, p := range t.files {
		p.f.Close()
	}
	clear(t.files)
	t.lastF = nil
	for _, b := range t.Buckets {
		for _, n := range []string{".inprogress-", ".pending-"} {
			if err := os.Remove(t.path(b, n)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// ReadCommittedLines returns the lines of every committed part file in dir
// and its bucket directories (names not starting with "."), in path order.
func ReadCommittedLines(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case strings.HasPrefix(d.Name(), ".") && path != dir:
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		return nil
	})
	return out, err
}
