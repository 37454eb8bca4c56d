package weir

import (
	"maps"
	"slices"
	"sync"
)

// linesSink is an exactly-once sink for this package's tests (the file
// sink lives in connector/file, which imports this package): a
// transaction's lines become visible when it is committed, once however
// often Commit runs.
type linesSink struct {
	mu        sync.Mutex
	next      int
	committed map[int][]string
}

// linesTxn is a transaction of linesSink (gob-encodable).
type linesTxn struct {
	ID    int
	Lines []string
}

func newLinesSink() *linesSink { return &linesSink{committed: map[int][]string{}} }

func (s *linesSink) BeginTransaction(int) (*linesTxn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return &linesTxn{ID: s.next}, nil
}

func (s *linesSink) Write(t *linesTxn, v string, _ int64) error {
	t.Lines = append(t.Lines, v)
	return nil
}

func (s *linesSink) PreCommit(*linesTxn) error { return nil }

func (s *linesSink) Commit(t *linesTxn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed[t.ID] = slices.Clone(t.Lines)
	return nil
}

func (s *linesSink) Abort(*linesTxn) error { return nil }

// lines returns the committed lines.
func (s *linesSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range slices.Sorted(maps.Keys(s.committed)) {
		out = append(out, s.committed[id]...)
	}
	return out
}
