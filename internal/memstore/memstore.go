// Package memstore is the body of the root's MemoryCheckpointStore: values
// kept in memory in the order of their ids.
package memstore

import (
	"sort"
	"sync"
)

type entry[T any] struct {
	id int64
	v  *T
}

// Store keeps values by id, oldest first; its zero value is empty and
// ready to use, and it is safe for concurrent use.
type Store[T any] struct {
	mu  sync.Mutex
	all []entry[T]
}

// Save keeps v with id.
func (s *Store[T]) Save(id int64, v *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, entry[T]{id, v})
	sort.Slice(s.all, func(i, j int) bool { return s.all[i].id < s.all[j].id })
}

// Latest returns the value of the highest id, or nil if there is none.
func (s *Store[T]) Latest() *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return nil
	}
	return s.all[len(s.all)-1].v
}

// Retain keeps the newest n values.
func (s *Store[T]) Retain(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) > n {
		s.all = append([]entry[T](nil), s.all[len(s.all)-n:]...)
	}
}

// IDs returns the ids of the values kept, oldest first.
func (s *Store[T]) IDs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, len(s.all))
	for i, e := range s.all {
		ids[i] = e.id
	}
	return ids
}
